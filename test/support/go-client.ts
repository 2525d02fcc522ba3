// Ollama's own Go client as a test client: the program in test/go-client (pinned github.com/ollama/ollama, fetched
// through the Go module proxy), built once per source version into the cache (~/.cache/gantry/go-client/<hash>), with
// the Go toolchain on PATH or in /usr/local/go.
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { REPO } from "./server.ts";

const run = promisify(execFile);
const SOURCE = path.join(REPO, "test", "go-client");
const cacheRoot = (): string => process.env.GANTRY_CACHE || path.join(os.homedir(), ".cache", "gantry");

/** The Go toolchain: `go` on PATH, else the official install's. */
function goBinary(): string {
  for (const dir of [...(process.env.PATH ?? "").split(path.delimiter), "/usr/local/go/bin"]) {
    const go = path.join(dir, "go");
    if (dir && fs.existsSync(go)) return go;
  }
  throw new Error("the Go toolchain is needed to build test/go-client (install Go 1.26+ or put `go` on PATH)");
}

/** The built client (built on first use; a few minutes cold, the module download included). */
export async function goClientBinary(): Promise<string> {
  const hash = createHash("sha256");
  for (const f of ["go.mod", "go.sum", "main.go"]) hash.update(fs.readFileSync(path.join(SOURCE, f)));
  const bin = path.join(cacheRoot(), "go-client", hash.digest("hex").slice(0, 16), "go-client");
  if (fs.existsSync(bin)) return bin;
  fs.mkdirSync(path.dirname(bin), { recursive: true });
  const tmp = `${bin}.${process.pid}.tmp`;
  await run(goBinary(), ["build", "-o", tmp, "."], { cwd: SOURCE, env: process.env, maxBuffer: 16 << 20 });
  fs.renameSync(tmp, bin);
  return bin;
}

/** Runs the client's checks against `host`; the exit code and what it printed (one "ok"/"FAIL" line per check). */
export async function runGoClient(args: string[]): Promise<{ code: number; out: string }> {
  try {
    const { stdout, stderr } = await run(await goClientBinary(), args, { maxBuffer: 16 << 20 });
    return { code: 0, out: stdout + stderr };
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string; message: string };
    if (typeof err.code !== "number") throw e;
    return { code: err.code, out: `${err.stdout ?? ""}${err.stderr ?? ""}` };
  }
}
