// `npm run build` (also run by `npm pack` through prepack): compiles the package to JavaScript in dist/ with tsc
// (tsconfig.build.json: relative `.ts` imports rewritten to `.js`, declarations emitted for app files' types), and
// copies what the compiled modules read at run time: the engine's patch and build files (the first engine use builds
// the addon from them).
// tsc rather than a bundler: the output keeps the sources' module layout, so the CLI's lazy imports stay lazy (a
// command loads only what it uses), paths relative to a module (the patch, worker and CLI entry files) stay valid, and
// node-llama-cpp's native loading is untouched. The console's browser code is bundled separately (console-build.ts).
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { packageRoot } from "../common/package-files.ts";
import { buildConsole } from "./console-build.ts";

/** Source directories compiled to dist/. */
const SOURCES = ["server", "operator"];
/** The console's browser sources: bundled into dist/console, not copied. */
const CONSOLE_SOURCES = path.join("server", "browser-console");

/**
 * Files the compiled modules open at run time (the engine's patch and build files): everything in the source
 * directories but TypeScript and the checkout's shell setup, copied to the same place in dist/.
 */
export function assets(root: string): string[] {
  return SOURCES.flatMap((dir) =>
    (fs.readdirSync(path.join(root, dir), { recursive: true }) as string[])
      .map((f) => path.join(dir, f))
      .filter(
        (f) =>
          fs.statSync(path.join(root, f)).isFile() &&
          !/\.(ts|sh)$/.test(f) &&
          !f.startsWith(CONSOLE_SOURCES + path.sep),
      ),
  ).sort();
}

export async function build(root = packageRoot()): Promise<{ files: number; seconds: number }> {
  const started = performance.now();
  const out = path.join(root, "dist");
  fs.rmSync(out, { recursive: true, force: true });
  const tsc = path.join(root, "node_modules", "typescript", "bin", "tsc");
  execFileSync(process.execPath, [tsc, "-p", path.join(root, "tsconfig.build.json")], { cwd: root, stdio: "inherit" });
  for (const asset of assets(root)) fs.cpSync(path.join(root, asset), path.join(out, asset));
  fs.chmodSync(path.join(out, "server", "cli", "gantry.js"), 0o755);
  await buildConsole(root);
  const files = fs.readdirSync(out, { recursive: true }).length;
  return { files, seconds: (performance.now() - started) / 1000 };
}

if (import.meta.main) {
  const { files, seconds } = await build();
  process.stderr.write(`built dist/ (${files} entries) in ${seconds.toFixed(1)} s\n`);
}
