// Module hooks for loading app files the way users write them, whatever their project's package.json says:
// `import … from "gantry"` and `require("gantry")` resolve to this running copy of the package (no gantry in a
// node_modules next to the app needed), and a .ts/.js file written with ES module syntax loads as a module even in a
// CommonJS package (`npm init -y` writes "type": "commonjs"), where Node would refuse its `import` statements.
import fs from "node:fs";
import { registerHooks, stripTypeScriptTypes } from "node:module";
import { fileURLToPath } from "node:url";
import vm from "node:vm";

/** The errors V8 gives module syntax compiled as a CommonJS function body (Node's own detection uses the same). */
const MODULE_SYNTAX_ERRORS = [
  "Cannot use import statement outside a module",
  "Unexpected token 'export'",
  "Cannot use 'import.meta' outside a module",
];

/** Whether JavaScript source (types already stripped) uses ES module syntax, which CommonJS cannot run. */
export function hasModuleSyntax(js: string): boolean {
  try {
    // Parsed, not run: the same wrapper CommonJS compiles a file in.
    new vm.Script(`(function (exports, require, module, __filename, __dirname) {${js}\n})`);
    return false;
  } catch (e) {
    return e instanceof SyntaxError && MODULE_SYNTAX_ERRORS.some((m) => e.message.includes(m));
  }
}

/** stripTypeScriptTypes without its one-time ExperimentalWarning on the user's terminal. */
function stripTypes(source: string): string {
  const emit = process.emitWarning;
  process.emitWarning = () => {};
  try {
    return stripTypeScriptTypes(source);
  } finally {
    process.emitWarning = emit;
  }
}

/**
 * The format a user's CommonJS-scoped file loads as, when it is not Node's: a file written as an ES module loads as
 * one. (Files inside node_modules are not asked: packages say what they are.)
 */
export function appFileFormat(nodeFormat: string | null | undefined, source: string): string | undefined {
  if (nodeFormat === "commonjs") return hasModuleSyntax(source) ? "module" : undefined;
  if (nodeFormat === "commonjs-typescript") {
    let js: string;
    try {
      js = stripTypes(source);
    } catch {
      return undefined; // not erasable TypeScript: Node's own error says why
    }
    return hasModuleSyntax(js) ? "module-typescript" : undefined;
  }
  return undefined;
}

let registered = false;

/** Registers the hooks once per process; `packageEntry` is the URL `gantry` resolves to. */
export function registerAppModuleHooks(packageEntry: string): void {
  if (registered) return;
  registered = true;
  registerHooks({
    resolve: (specifier, context, next) =>
      specifier === "gantry" ? { url: packageEntry, shortCircuit: true } : next(specifier, context),
    load: (url, context, next) => {
      const loaded = next(url, context);
      if (loaded.format !== "commonjs" && loaded.format !== "commonjs-typescript") return loaded;
      if (!url.startsWith("file:") || url.includes("/node_modules/")) return loaded;
      // CommonJS loads may come without a source (Node reads the file itself).
      const source = loaded.source == null ? fs.readFileSync(fileURLToPath(url), "utf8") : String(loaded.source);
      const format = appFileFormat(loaded.format, source);
      return format ? { ...loaded, format, source } : loaded;
    },
  });
}
