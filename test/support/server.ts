// Starts `gantry serve` as a real child process (the way users run it) on a free port with its own model store.
import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort } from "../cluster/processes.ts";

export const REPO = path.resolve(import.meta.dirname, "..", "..");
export const GANTRY = path.join(REPO, "server", "cli", "gantry.ts");

// Below the ephemeral range, so a port freed for a restart (a broker, a webhook receiver) is not taken meanwhile.
export { freePort };

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

/** A `gantry <command>` child process, its output and a stop that escalates to SIGKILL. */
export interface GantryProcess {
  proc: ChildProcess;
  logs(): string;
  /** Sends `signal` (SIGTERM by default) and waits for the exit; returns the exit code (null when killed). */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/**
 * Spawns `gantry <args>` and waits (up to 60 s) until GET `readyUrl` answers with a status `ready` accepts.
 * Fails with the process's output when it exits first or never gets ready.
 */
export async function spawnGantry(
  args: string[],
  env: Record<string, string>,
  readyUrl: string,
  ready: (status: number) => boolean,
  opts: { bin?: string; script?: string; pollMs?: number } = {},
): Promise<GantryProcess> {
  let out = "";
  // An executable gantry (an installed package's bin), another entry script, or this checkout's sources.
  const [cmd, ...pre] = opts.bin ? [opts.bin] : [process.execPath, opts.script ?? GANTRY];
  const proc = spawn(cmd!, [...pre, ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  proc.stdout!.on("data", (d: Buffer) => {
    out += d.toString();
  });
  proc.stderr!.on("data", (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => proc.once("exit", (code) => resolve(code)));
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`gantry ${args[0]} exited with ${proc.exitCode}:\n${out}`);
    if (
      await fetch(readyUrl).then(
        (r) => ready(r.status),
        () => false,
      )
    )
      break;
    if (Date.now() > deadline) {
      proc.kill("SIGKILL");
      throw new Error(`gantry ${args[0]} did not become ready:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, opts.pollMs ?? 100));
  }
  return {
    proc,
    logs: () => out,
    stop: async (signal = "SIGTERM") => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      const t = setTimeout(() => proc.kill("SIGKILL"), 20_000);
      const code = await exited;
      clearTimeout(t);
      return code;
    },
  };
}

export async function startTestServer(
  opts: {
    env?: Record<string, string>;
    args?: string[];
    modelsDir?: string;
    waitReady?: boolean;
    bin?: string;
    /** How often /health is asked until it answers (default 100 ms). */
    pollMs?: number;
  } = {},
): Promise<TestServer> {
  const port = await freePort();
  const modelsDir = opts.modelsDir ?? fs.mkdtempSync(path.join(os.tmpdir(), "gantry-store-"));
  const url = `http://127.0.0.1:${port}`;
  const p = await spawnGantry(
    ["serve", ...(opts.args ?? [])],
    {
      GANTRY_HOST: `127.0.0.1:${port}`,
      GANTRY_MODELS: modelsDir,
      GANTRY_THREADS: "2",
      GANTRY_LOG_LEVEL: "info",
      ...opts.env,
    },
    `${url}/health`,
    (status) => status === 200 || (status === 503 && opts.waitReady === false),
    {
      ...(opts.bin ? { bin: opts.bin } : {}),
      ...(opts.pollMs ? { pollMs: opts.pollMs } : {}),
    },
  );
  return { url, port, modelsDir, proc: p.proc, logs: p.logs, stop: () => p.stop() };
}

/** Imports a GGUF file into a running server under `name` (POST /api/create with `from` = server-side path). */
export async function createModel(
  url: string,
  name: string,
  from: string,
  extra: Record<string, unknown> = {},
): Promise<void> {
  const r = await fetch(`${url}/api/create`, {
    method: "POST",
    body: JSON.stringify({ model: name, from, stream: false, ...extra }),
  });
  if (r.status !== 200) throw new Error(`create ${name} failed: ${r.status} ${await r.text()}`);
}

/**
 * Creates a vision model in a running server as `gantry create` with two FROM lines does: both files uploaded as blobs
 * and named in /api/create's `files` (the server tells the projector by its GGUF architecture).
 */
export async function createVisionModel(
  url: string,
  name: string,
  pair: { model: string; mmproj: string },
): Promise<void> {
  const upload = async (file: string): Promise<string> => {
    const bytes = fs.readFileSync(file);
    const digest = `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
    const r = await fetch(`${url}/api/blobs/${digest}`, { method: "POST", body: bytes });
    if (r.status !== 201 && r.status !== 200)
      throw new Error(`upload of ${file} failed: ${r.status} ${await r.text()}`);
    return digest;
  };
  const r = await fetch(`${url}/api/create`, {
    method: "POST",
    body: JSON.stringify({
      model: name,
      files: { "model.gguf": await upload(pair.model), "mmproj.gguf": await upload(pair.mmproj) },
      stream: false,
    }),
  });
  if (r.status !== 200) throw new Error(`create ${name} failed: ${r.status} ${await r.text()}`);
}
