// `npm run gpu:bundle [-- --out <dir>]`: what a lent GPU machine lacks to run Gantry's GPU check (test/gpu/run.sh),
// under 60 MiB so it travels in the device tool's `carry` (64 MiB with the working tree), written to .gpu-bundle/
// (ignored): Node 24 (the binary, xz), the production dependencies without other platforms' prebuilt binaries and
// without what serving does not load (@kubernetes/client-node), plus the two API clients the tests use (xz), the
// llama.cpp source at the release node-llama-cpp pins with its patches applied and what no build needs left out (xz),
// run.sh and a manifest. No model files: run.sh writes the benchmark's models there with the project's GGUF writer.
// Each archive is cached in $GANTRY_CACHE/gpu-bundle by what it is made from, so a second bundle takes seconds.
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { parseEnv } from "../../server/common/config.ts";
import { nodeLlamaCppDir } from "../../server/engine/native/patched-build.ts";
import { SetupEnvSchema } from "../../server/setup/config.ts";
import { bundledRelease, cloneBundledLlamaCpp, run, SOURCE_INFO } from "../../server/setup/llama-source.ts";
import { bundleFiles, moduleClosure, type PackageLock } from "./modules.ts";

export const REPO = path.resolve(import.meta.dirname, "..", "..");
export const DEFAULT_BUNDLE = path.join(REPO, ".gpu-bundle");
/** What the device tool carries besides the working tree: the bundle must leave room for the tree (64 MiB in all). */
export const MAX_BUNDLE_BYTES = 60 * 2 ** 20;
/** Bump when what goes into an archive changes, so cached archives are remade. */
const FORMAT = 1;

/** The dependencies beyond package.json's own that the GPU check needs: the API clients of the tests it runs. */
const TEST_CLIENTS = ["openai", "ollama"];
/** Production dependencies serving never loads (the CLI loads the Kubernetes client only for platform commands). */
const NOT_FOR_SERVING = ["@kubernetes/client-node"];

/** llama.cpp paths no build of ours needs: documentation, models, tests, examples, other GPU backends, the web UI. */
const LLAMA_CPP_TRIM = [
  ".git",
  ".github",
  "docs",
  "media",
  "models",
  "gguf-py",
  "examples",
  "pocs",
  "benches",
  "tests",
  "conversion",
  "tools/ui/src",
  "tools/ui/tests",
  ...["cann", "et", "hexagon", "hip", "metal", "musa", "opencl", "openvino", "sycl", "virtgpu", "vulkan", "webgpu"].map(
    (b) => `ggml/src/ggml-${b}`,
  ),
  "ggml/src/ggml-zdnn",
  "ggml/src/ggml-zendnn",
];

const log = (msg: string): void => {
  process.stderr.write(`gpu-bundle: ${msg}\n`);
};
const q = (s: string): string => `'${s.replaceAll("'", "'\\''")}'`;
const sha = (...parts: Array<string | Buffer>): string => {
  const h = createHash("sha256");
  for (const p of parts) h.update(p);
  return h.digest("hex").slice(0, 16);
};

/** `name-key.tar.xz` from the cache, made by `make(tmpFile)` when missing. */
async function cachedArchive(
  cacheDir: string,
  name: string,
  key: string,
  make: (file: string) => Promise<void>,
): Promise<string> {
  const file = path.join(cacheDir, `${name}-${key}.tar.xz`);
  if (fs.existsSync(file)) return file;
  fs.mkdirSync(cacheDir, { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  const started = performance.now();
  log(`compressing ${name} (once; cached in ${cacheDir})`);
  await make(tmp);
  fs.renameSync(tmp, file);
  log(`${name}: ${mib(fs.statSync(file).size)} in ${Math.round((performance.now() - started) / 1000)} s`);
  return file;
}

/** tar of `files` (relative to `dir`, one per line in a list file) through xz -9. */
async function tarXz(dir: string, files: string[], out: string, transform?: string): Promise<void> {
  const list = `${out}.list`;
  fs.writeFileSync(list, files.join("\n") + "\n");
  try {
    const t = transform ? `--transform ${q(transform)}` : "";
    await run("bash", [
      "-o",
      "pipefail",
      "-c",
      `tar -C ${q(dir)} ${t} --owner=0 --group=0 --numeric-owner -cf - -T ${q(list)} | xz -9 -T0 > ${q(out)}`,
    ]);
  } finally {
    fs.rmSync(list, { force: true });
  }
}

const mib = (bytes: number): string => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

async function nodeArchive(cacheDir: string): Promise<{ file: string; version: string }> {
  const bin = fs.realpathSync(process.execPath);
  const version = process.version;
  const key = sha(String(FORMAT), version, fs.readFileSync(bin));
  const file = await cachedArchive(cacheDir, `node-${version}`, key, (tmp) =>
    tarXz(path.dirname(bin), [path.basename(bin)], tmp, "s,^,node/bin/,"),
  );
  return { file, version };
}

async function modulesArchive(cacheDir: string): Promise<{ file: string; packages: number }> {
  const lock = JSON.parse(fs.readFileSync(path.join(REPO, "package-lock.json"), "utf8")) as PackageLock;
  const pkg = JSON.parse(fs.readFileSync(path.join(REPO, "package.json"), "utf8")) as {
    dependencies: Record<string, string>;
  };
  const roots = [...Object.keys(pkg.dependencies).filter((d) => !NOT_FOR_SERVING.includes(d)), ...TEST_CLIENTS];
  const packages = moduleClosure(lock, roots, (p) => fs.existsSync(path.join(REPO, p)));
  const files = bundleFiles(REPO, packages);
  const key = sha(String(FORMAT), JSON.stringify(packages.map((p) => [p, lock.packages[p]?.version])));
  const file = await cachedArchive(cacheDir, "node_modules", key, (tmp) => tarXz(REPO, files, tmp));
  return { file, packages: packages.length };
}

async function llamaSourceArchive(cacheDir: string): Promise<{ file: string; release: string; commit: string }> {
  const packageDir = nodeLlamaCppDir();
  const rel = await bundledRelease(packageDir);
  const patchesDir = path.join(packageDir, "llama", "patches");
  const patches = fs.existsSync(patchesDir)
    ? fs
        .readdirSync(patchesDir)
        .sort()
        .map((f) => fs.readFileSync(path.join(patchesDir, f)))
    : [];
  const key = sha(String(FORMAT), rel.commit, JSON.stringify(LLAMA_CPP_TRIM), ...patches);
  const file = await cachedArchive(cacheDir, `llama.cpp-${rel.release}`, key, async (tmp) => {
    const work = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-gpu-bundle-"));
    try {
      const src = path.join(work, "llama.cpp");
      await cloneBundledLlamaCpp(src, { packageDir });
      for (const p of LLAMA_CPP_TRIM) fs.rmSync(path.join(src, p), { recursive: true, force: true });
      fs.writeFileSync(path.join(src, SOURCE_INFO), JSON.stringify(rel, null, 2));
      await tarXz(work, ["llama.cpp"], tmp);
    } finally {
      fs.rmSync(work, { recursive: true, force: true });
    }
  });
  return { file, release: rel.release, commit: rel.commit };
}

export interface Manifest {
  format: number;
  createdAt: string;
  node: string;
  llamaCpp: { release: string; commit: string };
  packages: number;
  /** sha256 of package-lock.json: run.sh warns when the working tree's differs (a stale bundle). */
  lockSha: string;
  files: Record<string, number>;
  totalBytes: number;
}

export async function makeBundle(out: string): Promise<Manifest> {
  const cacheDir = path.join(parseEnv(SetupEnvSchema).GANTRY_CACHE, "gpu-bundle");
  const [node, modules, llama] = [
    await nodeArchive(cacheDir),
    await modulesArchive(cacheDir),
    await llamaSourceArchive(cacheDir),
  ];
  fs.rmSync(out, { recursive: true, force: true });
  fs.mkdirSync(out, { recursive: true });
  const parts: Record<string, string> = {
    "node.tar.xz": node.file,
    "node_modules.tar.xz": modules.file,
    "llama.cpp.tar.xz": llama.file,
    "run.sh": path.join(import.meta.dirname, "run.sh"),
  };
  for (const [name, from] of Object.entries(parts)) fs.copyFileSync(from, path.join(out, name));
  fs.chmodSync(path.join(out, "run.sh"), 0o755);
  const files = Object.fromEntries(Object.keys(parts).map((n) => [n, fs.statSync(path.join(out, n)).size]));
  const manifest: Manifest = {
    format: FORMAT,
    createdAt: new Date().toISOString(),
    node: node.version,
    llamaCpp: { release: llama.release, commit: llama.commit },
    packages: modules.packages,
    lockSha: sha(fs.readFileSync(path.join(REPO, "package-lock.json"))),
    files,
    totalBytes: Object.values(files).reduce((a, b) => a + b, 0),
  };
  fs.writeFileSync(path.join(out, "manifest.json"), JSON.stringify(manifest, null, 2) + "\n");
  return manifest;
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { out: { type: "string" } } });
  const out = path.resolve(values.out ?? DEFAULT_BUNDLE);
  const m = await makeBundle(out);
  for (const [f, bytes] of Object.entries(m.files)) console.log(`  ${f.padEnd(22)} ${mib(bytes).padStart(10)}`);
  console.log(`${out}: ${mib(m.totalBytes)} (limit ${mib(MAX_BUNDLE_BYTES)}), Node ${m.node}, ${m.packages} packages,`);
  console.log(`llama.cpp ${m.llamaCpp.release} (${m.llamaCpp.commit.slice(0, 12)})`);
  if (m.totalBytes > MAX_BUNDLE_BYTES) {
    console.error(`the bundle is over ${mib(MAX_BUNDLE_BYTES)}: it would not travel with the working tree`);
    process.exitCode = 1;
  }
}
