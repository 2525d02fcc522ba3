// Runs the `gantry` CLI as a process, the way a user does, and collects what it printed.
import { spawn } from "node:child_process";
import { GANTRY } from "../../support/server.ts";

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  env?: Record<string, string>;
  cwd?: string;
  /** Piped to stdin (stdin is then not a TTY); without it stdin is /dev/null. */
  input?: string;
  timeoutMs?: number;
  /** An executable `gantry` to run (an installed package's bin, bin/gantry) instead of this checkout's sources. */
  bin?: string;
}

export function runCli(args: readonly string[], opts: CliOptions = {}): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const [cmd, ...pre] = opts.bin ? [opts.bin] : [process.execPath, GANTRY];
    const proc = spawn(cmd!, [...pre, ...args], {
      env: { ...process.env, ...opts.env },
      cwd: opts.cwd ?? process.cwd(),
      stdio: [opts.input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    });
    let stdout = "",
      stderr = "";
    proc.stdout!.on("data", (d: Buffer) => {
      stdout += d.toString();
    });
    proc.stderr!.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    if (opts.input !== undefined) proc.stdin!.end(opts.input);
    const timer = setTimeout(() => {
      proc.kill("SIGKILL");
      reject(new Error(`gantry ${args.join(" ")} timed out\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, opts.timeoutMs ?? 120_000);
    proc.once("error", reject);
    proc.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Runs the CLI and fails with everything it printed unless it exits 0. */
export async function runOk(args: readonly string[], opts: CliOptions = {}): Promise<CliResult> {
  const r = await runCli(args, opts);
  if (r.code !== 0)
    throw new Error(`gantry ${args.join(" ")} exited ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  return r;
}

/** The answer the server itself gives to one chat turn (stream:false), to compare with what the CLI printed. */
export async function apiChat(url: string, model: string, content: string): Promise<string> {
  const r = await fetch(`${url}/api/chat`, {
    method: "POST",
    body: JSON.stringify({ model, messages: [{ role: "user", content }], stream: false }),
  });
  if (r.status !== 200) throw new Error(`chat failed: ${r.status} ${await r.text()}`);
  return ((await r.json()) as { message: { content: string } }).message.content;
}
