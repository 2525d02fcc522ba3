// `npm run build` (also run by `npm pack` through prepack): compiles the package to JavaScript in dist/ with tsc
// (tsconfig.build.json: relative `.ts` imports rewritten to `.js`, declarations emitted for app files' types), and
// copies what the compiled modules read at run time: the engine patch that the first engine use builds the addon from.
// tsc rather than a bundler: the output keeps the sources' module layout, so the CLI's lazy imports stay lazy (a
// command loads only what it uses), paths relative to a module (the patch, worker and CLI entry files) stay valid, and
// node-llama-cpp's native loading is untouched.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { packageRoot } from "../common/package-files.ts";

/** Files the compiled modules open at run time, relative to the package root (copied to the same place in dist/). */
const ASSETS = ["server/engine/native/node-llama-cpp-addon.patch"];

export function build(root = packageRoot()): { files: number; seconds: number } {
  const started = performance.now();
  const out = path.join(root, "dist");
  fs.rmSync(out, { recursive: true, force: true });
  const tsc = path.join(root, "node_modules", "typescript", "bin", "tsc");
  execFileSync(process.execPath, [tsc, "-p", path.join(root, "tsconfig.build.json")], { cwd: root, stdio: "inherit" });
  for (const asset of ASSETS) fs.cpSync(path.join(root, asset), path.join(out, asset));
  fs.chmodSync(path.join(out, "server", "cli", "gantry.js"), 0o755);
  const files = fs.readdirSync(out, { recursive: true }).length;
  return { files, seconds: (performance.now() - started) / 1000 };
}

if (import.meta.main) {
  const { files, seconds } = build();
  process.stderr.write(`built dist/ (${files} entries) in ${seconds.toFixed(1)} s\n`);
}
