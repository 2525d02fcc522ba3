// A throw-away Redis for the queue's tests and benchmark: Debian's redis-server package (installed with apt-get when
// missing, as the Kubernetes test binaries are built when missing), on a free port, with its data in a temporary
// directory and the append-only file on, so a restart keeps what the broker acknowledged.
import { execFileSync, spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { freePort } from "./server.ts";

/** The redis-server binary, installed from Debian's package when it is not on PATH. */
export function redisServerBinary(): string {
  const found = spawnSync("sh", ["-c", "command -v redis-server || command -v valkey-server"], { encoding: "utf8" });
  const bin = found.stdout.trim();
  if (found.status === 0 && bin) return bin;
  if (process.getuid?.() !== 0)
    throw new Error("the queue tests need redis-server: install Debian's redis-server (or valkey-server) package");
  // A fresh machine's package lists may be empty: update them first, as server/setup/image/host-tools.sh does.
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  execFileSync("apt-get", ["update", "-qq"], { stdio: "ignore", env });
  const apt = (args: string[]) =>
    execFileSync("apt-get", args, { stdio: "ignore", env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } });
  const install = ["install", "-y", "--no-install-recommends", "redis-server"];
  try {
    apt(install);
  } catch {
    apt(["update"]); // a fresh machine has no package lists yet
    apt(install);
  }
  return "/usr/bin/redis-server";
}

export interface TestRedis {
  url: string;
  port: number;
  /** SIGTERM (the broker saves and stops) or SIGKILL; resolves when it exited. */
  stop(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again on the same port and data directory. */
  start(): Promise<void>;
  /** The running server's process id. */
  pid(): number;
}

const reachable = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const s = net.connect(port, "127.0.0.1");
    s.once("connect", () => {
      s.write("PING\r\n");
      s.once("data", (b) => {
        s.destroy();
        resolve(b.toString().startsWith("+PONG"));
      });
    });
    s.once("error", () => resolve(false));
  });

export async function startTestRedis(): Promise<TestRedis> {
  const bin = redisServerBinary();
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-redis-"));
  let p: ChildProcess | undefined;
  const start = async () => {
    p = spawn(
      bin,
      ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--appendonly", "yes", "--appendfsync", "always"],
      { stdio: "ignore" },
    );
    for (let i = 0; i < 200 && !(await reachable(port)); i++) await new Promise((r) => setTimeout(r, 25));
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    start,
    pid: () => p!.pid!,
    stop: (signal = "SIGTERM") =>
      new Promise((resolve) => {
        if (!p || p.exitCode !== null) return resolve();
        p.once("exit", () => resolve());
        p.kill(signal);
      }),
  };
}
