// llama.cpp's own llama-server and llama-bench, built from the very llama.cpp release node-llama-cpp ships (its git
// bundle, with the patches node-llama-cpp applies), CPU, Release, with llama.cpp's default options (GGML_NATIVE,
// OpenMP). Built once into $GANTRY_CACHE/llama.cpp/<release>-<commit>-<platform> (outside the repo); later calls
// return at once. Prints the cold build cost.
import fs from "node:fs";
import path from "node:path";
import { gantryCacheDir, nodeLlamaCppVersion } from "../../../server/engine/native/patched-build.ts";
import { parseEnv } from "../../../server/common/config.ts";
import { SetupEnvSchema } from "../../../server/setup/config.ts";
import { buildTools, bundledRelease, cloneBundledLlamaCpp, cmakeBuild } from "../../../server/setup/llama-source.ts";

export interface LlamaTools {
  server: string;
  bench: string;
  /** The llama.cpp release and commit, for the report. */
  release: string;
  commit: string;
  dir: string;
}

const log = (msg: string): void => {
  process.stderr.write(`llama.cpp tools: ${msg}\n`);
};

let pending: Promise<LlamaTools> | undefined;

export function llamaTools(): Promise<LlamaTools> {
  pending ??= ensure();
  return pending;
}

async function ensure(): Promise<LlamaTools> {
  const rel = await bundledRelease();
  const dir = path.join(
    gantryCacheDir(),
    "llama.cpp",
    `${rel.release}-${rel.commit.slice(0, 12)}-${process.platform}-${process.arch}`,
  );
  const bin = path.join(dir, "bin");
  const tools: LlamaTools = {
    server: path.join(bin, "llama-server"),
    bench: path.join(bin, "llama-bench"),
    release: rel.release,
    commit: rel.commit,
    dir,
  };
  if (fs.existsSync(tools.server) && fs.existsSync(tools.bench)) return tools;

  const toolchain = parseEnv(SetupEnvSchema);
  const have = buildTools(toolchain);
  if (!have.ok) throw new Error(`cannot build llama-server/llama-bench: missing ${have.missing.join(", ")}`);
  const started = performance.now();
  const work = `${dir}.work`;
  fs.mkdirSync(work, { recursive: true });
  const logFile = path.join(work, "build.log");
  const src = path.join(work, "llama.cpp");
  log(
    `building llama-server and llama-bench ${rel.release} (${rel.commit.slice(0, 12)}, as shipped by node-llama-cpp ${nodeLlamaCppVersion()}) into ${dir}, once; log: ${logFile}`,
  );
  if (!fs.existsSync(path.join(src, ".gantry-ready"))) {
    fs.rmSync(src, { recursive: true, force: true });
    await cloneBundledLlamaCpp(src, { log: logFile });
    fs.writeFileSync(path.join(src, ".gantry-ready"), "");
  }
  await cmakeBuild({
    src,
    build: path.join(work, "build"),
    targets: ["llama-server", "llama-bench"],
    log: logFile,
    toolchain,
    // Static, so the two binaries are self-contained in the cache; no network features (curl, TLS), no web UI.
    options: {
      BUILD_SHARED_LIBS: "OFF",
      GGML_NATIVE: "ON",
      LLAMA_CURL: "OFF",
      LLAMA_OPENSSL: "OFF",
      LLAMA_BUILD_TESTS: "OFF",
      LLAMA_BUILD_EXAMPLES: "OFF",
      LLAMA_BUILD_UI: "OFF",
      LLAMA_USE_PREBUILT_UI: "OFF",
    },
  });
  const out = `${dir}.tmp`;
  fs.rmSync(out, { recursive: true, force: true });
  fs.mkdirSync(path.join(out, "bin"), { recursive: true });
  for (const name of ["llama-server", "llama-bench"])
    fs.copyFileSync(path.join(work, "build", "bin", name), path.join(out, "bin", name));
  fs.chmodSync(path.join(out, "bin", "llama-server"), 0o755);
  fs.chmodSync(path.join(out, "bin", "llama-bench"), 0o755);
  fs.copyFileSync(logFile, path.join(out, "build.log"));
  fs.rmSync(dir, { recursive: true, force: true });
  fs.renameSync(out, dir);
  fs.rmSync(work, { recursive: true, force: true });
  log(`built in ${Math.round((performance.now() - started) / 1000)} s (cold cost; cached from now on)`);
  return tools;
}

if (import.meta.main) console.log(await llamaTools());
