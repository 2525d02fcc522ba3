// Where the package's own files are, the same from the sources (a checkout runs server/**/*.ts through Node's type
// stripping) and from the built package (dist/server/**/*.js, which `npm install -g` and npx run): modules that start
// a sibling module as a process or worker, and the package root holding package.json.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** The URL of module `name` (no extension) next to the module at `moduleUrl`, with that module's own extension. */
export function siblingModule(moduleUrl: string, name: string): URL {
  return new URL(`./${name}${path.extname(fileURLToPath(moduleUrl))}`, moduleUrl);
}

/** The nearest directory at or above `from` whose package.json is this package's ("name": "gantry"). */
export function packageRoot(from: string = import.meta.dirname): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    try {
      const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) as { name?: string };
      if (pkg.name === "gantry") return dir;
    } catch {
      // no package.json here
    }
    if (path.dirname(dir) === dir) throw new Error(`gantry's package.json not found above ${from}`);
  }
}
