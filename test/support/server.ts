// Starts `gantry serve` as a real child process (the way users run it) on a free port with its own model store.
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

export const REPO = path.resolve(import.meta.dirname, "..", "..");
export const GANTRY = path.join(REPO, "server", "cli", "gantry.ts");

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

export interface TestServer {
  url: string;
  port: number;
  modelsDir: string;
  proc: ChildProcess;
  /** Everything the process printed (JSON log lines). */
  logs(): string;
  /** SIGTERM and wait for exit; returns the exit code. */
  stop(): Promise<number | null>;
}

export async function startTestServer(opts: { env?: Record<string, string>; args?: string[]; modelsDir?: string; waitReady?: boolean } = {}): Promise<TestServer> {
  const port = await freePort();
  const modelsDir = opts.modelsDir ?? fs.mkdtempSync(path.join(os.tmpdir(), "gantry-store-"));
  let out = "";
  const proc = spawn(process.execPath, [GANTRY, "serve", ...(opts.args ?? [])], {
    env: { ...process.env, GANTRY_HOST: `127.0.0.1:${port}`, GANTRY_MODELS: modelsDir, GANTRY_THREADS: "2", GANTRY_LOG_LEVEL: "info", ...opts.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  proc.stdout!.on("data", (d: Buffer) => { out += d.toString(); });
  proc.stderr!.on("data", (d: Buffer) => { out += d.toString(); });
  const exited = new Promise<number | null>((resolve) => proc.once("exit", (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`gantry serve exited with ${proc.exitCode}:\n${out}`);
    try {
      const r = await fetch(`${url}/health`);
      if (r.status === 200 || (r.status === 503 && opts.waitReady === false)) break;
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) { proc.kill("SIGKILL"); throw new Error(`gantry serve did not become ready:\n${out}`); }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url, port, modelsDir, proc,
    logs: () => out,
    stop: async () => {
      if (proc.exitCode === null) proc.kill("SIGTERM");
      const t = setTimeout(() => proc.kill("SIGKILL"), 15_000);
      const code = await exited;
      clearTimeout(t);
      return code;
    },
  };
}

/** Imports a GGUF file into a running server under `name` (POST /api/create with `from` = server-side path). */
export async function createModel(url: string, name: string, from: string, extra: Record<string, unknown> = {}): Promise<void> {
  const r = await fetch(`${url}/api/create`, { method: "POST", body: JSON.stringify({ model: name, from, stream: false, ...extra }) });
  if (r.status !== 200) throw new Error(`create ${name} failed: ${r.status} ${await r.text()}`);
}
