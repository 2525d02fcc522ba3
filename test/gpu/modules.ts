// Which installed packages and files the GPU bundle carries: the packages the roots need, resolved through
// package-lock.json as Node resolves them (nested node_modules first, then each enclosing one), without other
// platforms' prebuilt binaries; and of their files, what Node can load (no type declarations, source maps, TypeScript
// sources, which Node does not run inside node_modules, or readmes), without node-llama-cpp's llama.cpp git bundle (the
// GPU bundle carries the source unpacked) and local builds.
import fs from "node:fs";
import path from "node:path";

export interface PackageLock {
  packages: Record<
    string,
    {
      version?: string;
      dependencies?: Record<string, string>;
      optionalDependencies?: Record<string, string>;
      peerDependencies?: Record<string, string>;
      peerDependenciesMeta?: Record<string, { optional?: boolean }>;
      os?: string[];
      cpu?: string[];
    }
  >;
}

/** The lock path ("node_modules/a/node_modules/b") `dep` resolves to from the package at `from` ("" = the root). */
export function resolveIn(lock: PackageLock, from: string, dep: string): string | undefined {
  let base = from;
  for (;;) {
    const candidate = `${base ? `${base}/` : ""}node_modules/${dep}`;
    if (lock.packages[candidate]) return candidate;
    if (!base) return undefined;
    const i = base.lastIndexOf("/node_modules/");
    base = i < 0 ? "" : base.slice(0, i);
  }
}

/** Whether a package with these os/cpu constraints runs on this platform (node-llama-cpp's per-platform binaries). */
export function forThisPlatform(
  p: { os?: string[]; cpu?: string[] },
  platform: string = process.platform,
  arch: string = process.arch,
): boolean {
  return (!p.os || p.os.includes(platform)) && (!p.cpu || p.cpu.includes(arch));
}

/**
 * Every package the roots need (sorted lock paths): dependencies, optional ones (of this platform, where `installed`),
 * and required peers where installed (an optional peer, node-llama-cpp's typescript, is the user's choice). Of
 * node-llama-cpp's prebuilt binaries only the CPU one of `platform` ("linux-x64"): its GPU packages (CUDA, Vulkan) are
 * left out, as the GPU machine builds the CUDA backend for its own GPU, and so are the packages for other CPUs that
 * claim x64 too (for cross builds).
 */
export function moduleClosure(
  lock: PackageLock,
  roots: string[],
  installed: (lockPath: string) => boolean,
  platform = `${process.platform}-${process.arch}`,
): string[] {
  const seen = new Set<string>();
  const visit = (from: string, dep: string, required: boolean): void => {
    const at = resolveIn(lock, from, dep);
    if (!at) {
      if (required) throw new Error(`${dep} (needed by ${from || "the project"}) is not in package-lock.json`);
      return;
    }
    if (seen.has(at)) return;
    const p = lock.packages[at]!;
    if (!forThisPlatform(p) || !installed(at) || !nodeLlamaCppBinariesFor(at, platform)) return;
    seen.add(at);
    for (const d of Object.keys(p.dependencies ?? {})) visit(at, d, true);
    const peers = Object.keys(p.peerDependencies ?? {}).filter((d) => !p.peerDependenciesMeta?.[d]?.optional);
    for (const d of [...Object.keys(p.optionalDependencies ?? {}), ...peers]) visit(at, d, false);
  };
  for (const r of roots) visit("", r, true);
  return [...seen].sort();
}

/** Whether a lock path is not one of node-llama-cpp's binary packages, or is the CPU one for `platform`. */
const nodeLlamaCppBinariesFor = (at: string, platform: string): boolean =>
  !at.startsWith("node_modules/@node-llama-cpp/") || at === `node_modules/@node-llama-cpp/${platform}`;

const SKIP_FILE = /(\.d\.[cm]?ts|\.map|\.tsx?|\.mts|\.cts|\.md|\.markdown)$/i;
const KEEP_FILE = /^licen[cs]e/i;
/** In node-llama-cpp: the llama.cpp git bundle (35 MB; the GPU bundle carries the tree) and local builds (links). */
const SKIP_IN_NODE_LLAMA_CPP = ["llama/gitRelease.bundle", "llama/localBuilds"];

/** The files of `packages` to carry, relative to `repo` (nested packages are listed on their own, not twice). */
export function bundleFiles(repo: string, packages: string[]): string[] {
  const own = new Set(packages);
  const out: string[] = [];
  const walk = (rel: string, pkg: string): void => {
    for (const e of fs.readdirSync(path.join(repo, rel), { withFileTypes: true })) {
      const p = `${rel}/${e.name}`;
      if (pkg.endsWith("/node-llama-cpp") && SKIP_IN_NODE_LLAMA_CPP.includes(p.slice(pkg.length + 1))) continue;
      if (e.isDirectory()) {
        // A nested node_modules holds packages of their own (carried only when in the closure).
        if (e.name === "node_modules") {
          for (const nested of packages.filter(
            (n) => n.startsWith(`${p}/`) && !n.slice(p.length + 1).includes("/node_modules/"),
          ))
            if (own.has(nested)) walk(nested, nested);
          continue;
        }
        walk(p, pkg);
      } else if (e.isFile() && (KEEP_FILE.test(e.name) || !SKIP_FILE.test(e.name))) out.push(p);
    }
  };
  for (const p of packages.filter((p) => !p.slice("node_modules/".length).includes("/node_modules/"))) walk(p, p);
  return out;
}
