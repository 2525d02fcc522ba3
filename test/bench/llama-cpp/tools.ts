// llama.cpp's own tools (llama-server, llama-bench, llama-mtmd-cli), built from the very llama.cpp release
// node-llama-cpp ships (its git bundle, with the patches node-llama-cpp applies), CPU, Release, static, with
// llama.cpp's default options (GGML_NATIVE, OpenMP). Only the tools asked for are built, into a build tree kept in
// $GANTRY_CACHE/llama.cpp/<release>-<commit>-<platform>.work (outside the repo), so a tool asked for later compiles
// only what it adds; the binaries are copied into <dir>/bin. Later calls return at once. Prints the cold build cost.
import fs from "node:fs";
import path from "node:path";
import { withDirLock } from "../../../server/common/dir-lock.ts";
import { nodeLlamaCppVersion } from "../../../server/engine/native/patched-build.ts";
import { parseEnv } from "../../../server/common/config.ts";
import { SetupEnvSchema } from "../../../server/setup/config.ts";
import { buildTools, bundledRelease, cloneBundledLlamaCpp, cmakeBuild } from "../../../server/setup/llama-source.ts";

export type LlamaToolName = "llama-server" | "llama-bench" | "llama-mtmd-cli";

export interface LlamaTools {
  /** Paths of the binaries (those not asked for may not exist). */
  server: string;
  bench: string;
  mtmdCli: string;
  /** The llama.cpp release and commit, for the report. */
  release: string;
  commit: string;
  dir: string;
}

const log = (msg: string): void => {
  process.stderr.write(`llama.cpp tools: ${msg}\n`);
};

const pending = new Map<string, Promise<LlamaTools>>();

/** Builds (once, cached) the tools named and returns where they are. */
export function llamaTools(names: readonly LlamaToolName[] = ["llama-server", "llama-bench"]): Promise<LlamaTools> {
  const key = [...names].sort().join(",");
  let p = pending.get(key);
  if (!p) {
    p = ensure(names);
    pending.set(key, p);
    p.catch(() => pending.delete(key));
  }
  return p;
}

async function ensure(names: readonly LlamaToolName[]): Promise<LlamaTools> {
  const rel = await bundledRelease();
  const dir = path.join(
    parseEnv(SetupEnvSchema).GANTRY_CACHE,
    "llama.cpp",
    `${rel.release}-${rel.commit.slice(0, 12)}-${process.platform}-${process.arch}`,
  );
  const bin = path.join(dir, "bin");
  const tools: LlamaTools = {
    server: path.join(bin, "llama-server"),
    bench: path.join(bin, "llama-bench"),
    mtmdCli: path.join(bin, "llama-mtmd-cli"),
    release: rel.release,
    commit: rel.commit,
    dir,
  };
  const missing = () => names.filter((n) => !fs.existsSync(path.join(bin, n)));
  if (missing().length === 0) return tools;

  const toolchain = parseEnv(SetupEnvSchema);
  const have = buildTools(toolchain);
  if (!have.ok) throw new Error(`cannot build ${names.join(", ")}: missing ${have.missing.join(", ")}`);
  return withDirLock(
    `${dir}.lock`,
    async () => {
      const targets = missing();
      if (targets.length === 0) return tools;
      const started = performance.now();
      const work = `${dir}.work`;
      fs.mkdirSync(work, { recursive: true });
      const logFile = path.join(work, "build.log");
      const src = path.join(work, "llama.cpp");
      log(
        `building ${targets.join(", ")} ${rel.release} (${rel.commit.slice(0, 12)}, as shipped by node-llama-cpp ${nodeLlamaCppVersion()}) into ${dir}, once; log: ${logFile}`,
      );
      if (!fs.existsSync(path.join(src, ".gantry-ready"))) {
        fs.rmSync(src, { recursive: true, force: true });
        await cloneBundledLlamaCpp(src, { log: logFile });
        fs.writeFileSync(path.join(src, ".gantry-ready"), "");
      }
      await cmakeBuild({
        src,
        build: path.join(work, "build"),
        targets,
        log: logFile,
        toolchain,
        // Static, so the binaries are self-contained in the cache; no network features (curl, TLS), no web UI, no
        // video input (mtmd would run ffmpeg).
        options: {
          BUILD_SHARED_LIBS: "OFF",
          GGML_NATIVE: "ON",
          LLAMA_CURL: "OFF",
          LLAMA_OPENSSL: "OFF",
          LLAMA_BUILD_TESTS: "OFF",
          LLAMA_BUILD_EXAMPLES: "OFF",
          LLAMA_BUILD_UI: "OFF",
          LLAMA_USE_PREBUILT_UI: "OFF",
          MTMD_VIDEO: "OFF",
        },
      });
      fs.mkdirSync(bin, { recursive: true });
      for (const name of targets) {
        const tmp = path.join(bin, `.${name}.${process.pid}.tmp`);
        fs.copyFileSync(path.join(work, "build", "bin", name), tmp);
        fs.chmodSync(tmp, 0o755);
        fs.renameSync(tmp, path.join(bin, name));
      }
      log(
        `built ${targets.join(", ")} in ${Math.round((performance.now() - started) / 1000)} s (cold cost; cached from now on)`,
      );
      return tools;
    },
    { pollMs: 2000, onWait: () => log("waiting for another process that is building them") },
  );
}

if (import.meta.main) {
  const names = process.argv.slice(2) as LlamaToolName[];
  console.log(await llamaTools(names.length > 0 ? names : undefined));
}
