// Loads the app that `<file>::<export>` names: imports the app file (.ts, .mts, .cts, .js, .mjs or .cjs; Node strips
// the types; ES module syntax or CommonJS, whatever the nearest package.json says: app-module-hooks.ts), takes the
// export — a definition made with defineApp, or a possibly async function returning one — and validates its spec
// against the ModelApp spec schema. Every failure is one AppFileError naming the file, the export and the field, which
// the CLI reports with exit code 2.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { ModelAppSpecSchema, type ModelAppSpec } from "../../operator/api/v1alpha1/modelapp.ts";
import { checkOverrides, checkSpec, InvalidSpecError } from "../../operator/api/v1alpha1/spec-checks.ts";
import { siblingModule } from "../common/package-files.ts";
import { isAppDefinition, type AppSpec } from "./app-definition.ts";
import { registerAppModuleHooks } from "./app-module-hooks.ts";
import { APP_FILE_EXTENSIONS, parseAppRef, type AppRef } from "./app-ref.ts";

/** A bad app reference, file, export or spec. */
export class AppFileError extends Error {
  /** Exit code of the CLI: 2, a usage problem the user fixes in the app file or the command line. */
  readonly exitCode = 2;
  constructor(message: string) {
    super(message);
    this.name = "AppFileError";
  }
}

export interface LoadedApp extends AppRef {
  /** The spec as written (plain JSON, no defaults applied): what `gantry deploy` applies. */
  spec: AppSpec;
  /** The spec with the schema's defaults. */
  parsed: ModelAppSpec;
}

// App files import { defineApp } from "gantry": that resolves to this running copy of the package, so an app file
// works wherever it is, without gantry in a node_modules next to it (npm install -g, npx, a checkout).
const PACKAGE_ENTRY = siblingModule(import.meta.url, "../index").href;

const firstLine = (e: unknown): string => (e instanceof Error ? e.message : String(e)).split("\n")[0]!.trim();

async function importAppFile(ref: AppRef, cwd: string): Promise<Record<string, unknown>> {
  const file = path.resolve(cwd, ref.file);
  const ext = path.extname(file);
  if (!(APP_FILE_EXTENSIONS as readonly string[]).includes(ext))
    throw new AppFileError(`${ref.file}: an app file ends in ${APP_FILE_EXTENSIONS.join(", ")}`);
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch {
    throw new AppFileError(`${ref.file}: no such file`);
  }
  if (!stat.isFile()) throw new AppFileError(`${ref.file}: not a file`);
  registerAppModuleHooks(PACKAGE_ENTRY);
  const url = pathToFileURL(file).href;
  try {
    return moduleExports((await import(url)) as Record<string, unknown>);
  } catch (e) {
    const line = e instanceof SyntaxError ? syntaxErrorLine(file, e) : undefined;
    throw new AppFileError(`${ref.file}${line ? `:${line}` : ""}: cannot load the app file: ${firstLine(e)}`);
  }
}

/**
 * The exports of an imported app file. A CommonJS file's are the properties of its module.exports, which Node's static
 * analysis may not all list as named exports (`module.exports = { chat: defineApp(…) }`), and module.exports itself
 * as `default` (`module.exports = defineApp(…)`).
 */
function moduleExports(ns: Record<string, unknown>): Record<string, unknown> {
  if (!("module.exports" in ns)) return ns;
  const cjs = ns["module.exports"];
  const named = typeof cjs === "object" && cjs !== null && !isAppDefinition(cjs) ? cjs : {};
  return { ...named, default: cjs };
}

/**
 * The line of a syntax error: a TypeScript one's stack starts with "<file>:<line>"; a JavaScript one's message has no
 * position, so `node --check` (which prints it) says where.
 */
function syntaxErrorLine(file: string, e: SyntaxError): string | undefined {
  const pattern = new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}:(\\d+)`, "m");
  const fromStack = pattern.exec(e.stack ?? "")?.[1];
  if (fromStack) return fromStack;
  const check = spawnSync(process.execPath, ["--check", file], { encoding: "utf8", timeout: 10_000 });
  return pattern.exec(check.stderr ?? "")?.[1];
}

/** The names of a module's exports that are apps: definitions, and functions (which may return one). */
function describeApps(mod: Record<string, unknown>): string {
  const names = Object.keys(mod).sort();
  const apps = names.filter((n) => isAppDefinition(mod[n]));
  const fns = names.filter((n) => typeof mod[n] === "function");
  const listed = [...apps, ...fns.map((n) => `${n} (function)`)];
  return listed.length
    ? `exports that are apps: ${listed.join(", ")}`
    : `it exports no apps: declare one with export const chat = defineApp({ model: "hf.co/<org>/<repo>" })`;
}

const typeName = (v: unknown): string =>
  v === null ? "null" : Array.isArray(v) ? "an array" : typeof v === "object" ? "a plain object" : `a ${typeof v}`;

/** Paths of fields the input has and the parsed spec lost: zod strips unknown keys, the apiserver would prune them. */
function unknownFields(input: unknown, parsed: unknown, at: string): string[] {
  if (Array.isArray(input) && Array.isArray(parsed))
    return input.flatMap((v, i) => unknownFields(v, parsed[i], `${at}[${i}]`));
  if (typeof input !== "object" || input === null || typeof parsed !== "object" || parsed === null) return [];
  return Object.entries(input).flatMap(([k, v]) =>
    v === undefined
      ? []
      : k in parsed
        ? unknownFields(v, (parsed as Record<string, unknown>)[k], `${at}.${k}`)
        : [`${at}.${k}`],
  );
}

/** Validates a definition's spec; the message names every invalid field (spec.<path>). */
export function validateAppSpec(spec: unknown): { spec: AppSpec; parsed: ModelAppSpec } | { issues: string[] } {
  let json: unknown;
  try {
    json = JSON.parse(JSON.stringify(spec)); // what the apiserver will see: no undefined, no functions, no Dates
  } catch (e) {
    return { issues: [`the spec cannot be written as JSON: ${firstLine(e)}`] };
  }
  const r = ModelAppSpecSchema.safeParse(json);
  if (!r.success)
    return { issues: r.error.issues.map((i) => `spec${i.path.map((p) => `.${String(p)}`).join("")}: ${i.message}`) };
  const issues = unknownFields(json, r.data, "spec").map((f) => `${f}: unknown field`);
  if ((json as { replicas?: unknown }).replicas !== undefined)
    issues.push("spec.replicas: set by the autoscaler; use scaling.minReplicas and scaling.maxReplicas");
  return issues.length ? { issues } : { spec: json as AppSpec, parsed: r.data };
}

/**
 * Where the app will run: on a cluster (`deploy`: the model must be a hub model or a name in the volume), or on this
 * machine (`run`: a local model file is fine too).
 */
export type AppTarget = "cluster" | "local";

/** Loads and validates the app `<file>::<export>` names; relative files resolve against `cwd`. */
export async function loadApp(arg: string, cwd: string, target: AppTarget): Promise<LoadedApp> {
  let ref: AppRef;
  try {
    ref = parseAppRef(arg);
  } catch (e) {
    throw new AppFileError(firstLine(e));
  }
  const mod = await importAppFile(ref, cwd);
  const where = `${ref.file}::${ref.exportName}`;
  if (!(ref.exportName in mod))
    throw new AppFileError(`${ref.file} has no export "${ref.exportName}" (${describeApps(mod)})`);
  let value = mod[ref.exportName];
  if (typeof value === "function") {
    try {
      value = await (value as () => unknown)();
    } catch (e) {
      throw new AppFileError(`${where}: the function threw: ${firstLine(e)}`);
    }
    if (!isAppDefinition(value))
      throw new AppFileError(
        `${where}: the function returned ${typeName(value)}, not an app definition (return defineApp({ model: … }))`,
      );
  } else if (!isAppDefinition(value)) {
    throw new AppFileError(
      `${where} is ${typeName(value)}, not an app definition (export const ${ref.exportName} = defineApp({ model: … }), or a function returning one)`,
    );
  }
  const checked = validateAppSpec(value);
  if ("issues" in checked) throw new AppFileError(`${where}: invalid app: ${checked.issues.join("; ")}`);
  try {
    if (target === "cluster") checkSpec(checked.parsed);
    else checkOverrides(checked.parsed);
  } catch (e) {
    if (e instanceof InvalidSpecError) throw new AppFileError(`${where}: invalid app: ${e.message}`);
    throw e;
  }
  return { ...ref, ...checked };
}
