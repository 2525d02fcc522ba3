// Loading `<file>::<export>` from real files in a temporary directory (outside any package, as a user's app is):
// every way an app file can be wrong gives one AppFileError naming the file, the export and the field.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { AppFileError, loadApp, validateAppSpec } from "../../../server/platform/load-app.ts";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-apps-"));
after(() => fs.rmSync(dir, { recursive: true, force: true }));
const write = (name: string, text: string) => fs.writeFileSync(path.join(dir, name), text);

write(
  "apps.ts",
  `import { defineApp, type AppSpec } from "gantry";
const base: AppSpec = { model: "hf.co/org/repo:Q4_K_M" };
export const chat = defineApp({ ...base, resources: { profile: "nvidia-gpu", gpus: 1 }, scaling: { minReplicas: 0, maxReplicas: 3 } });
export async function later() { await new Promise((r) => setTimeout(r, 5)); return defineApp({ ...base, auth: "public" }); }
export const plain = { model: "hf.co/org/repo" };
export function notAnApp() { return 42; }
export function throws(): never { throw new Error("no GPU quota today"); }
export const typo = defineApp({ ...base, scaling: { maxReplica: 3 } } as never);
export const tooFew = defineApp({ ...base, scaling: { maxReplicas: 0 } });
export const inverted = defineApp({ ...base, scaling: { minReplicas: 4, maxReplicas: 2 } });
export const local = defineApp({ model: "./model.gguf" });
export const badModelfile = defineApp({ ...base, modelfile: "FROM other\\n" });
export const replicas = defineApp({ ...base, replicas: 2 } as never);
export default defineApp(base);
`,
);
for (const ext of ["mts", "js", "mjs"])
  write(
    `app.${ext}`,
    `import { defineApp } from "gantry";\nexport const chat = defineApp({ model: "hf.co/org/${ext}" });\n`,
  );
write("none.mjs", "export const x = 1;\n");
write("broken.mjs", "export const chat = {\n  model: 'x',,\n};\n");
write("broken.ts", "export const chat: number = ;\n");
write("app.json", "{}");

async function failure(ref: string, target: "cluster" | "local" = "cluster"): Promise<string> {
  const e = await loadApp(ref, dir, target).then(
    () => assert.fail(`${ref} loaded`),
    (err: unknown) => err,
  );
  assert.ok(e instanceof AppFileError, String(e));
  assert.equal(e.exitCode, 2);
  return e.message;
}

test("a definition, an async function returning one, and the default export load from .ts; the spec is kept as written", async () => {
  const chat = await loadApp("apps.ts::chat", dir, "cluster");
  assert.equal(chat.file, "apps.ts");
  assert.equal(chat.exportName, "chat");
  assert.deepEqual(chat.spec, {
    model: "hf.co/org/repo:Q4_K_M",
    resources: { profile: "nvidia-gpu", gpus: 1 },
    scaling: { minReplicas: 0, maxReplicas: 3 },
  });
  assert.equal(chat.parsed.server.parallel, 4, "defaults applied to the parsed spec only");
  assert.equal((await loadApp("apps.ts::later", dir, "cluster")).spec.auth, "public");
  assert.equal(
    (await loadApp(`${path.join(dir, "apps.ts")}::default`, "/", "cluster")).spec.model,
    "hf.co/org/repo:Q4_K_M",
  );
});

test(".mts, .js and .mjs app files load too", async () => {
  for (const ext of ["mts", "js", "mjs"])
    assert.equal((await loadApp(`app.${ext}::chat`, dir, "cluster")).spec.model, `hf.co/org/${ext}`);
});

test("a missing file, another extension, a syntax error: the file (and line) in the message", async () => {
  assert.equal(await failure("nope.ts::chat"), "nope.ts: no such file");
  assert.match(
    await failure("app.json::chat"),
    /^app\.json: an app file ends in \.ts, \.mts, \.cts, \.js, \.mjs, \.cjs$/,
  );
  assert.match(await failure("broken.mjs::chat"), /^broken\.mjs:2: cannot load the app file: Unexpected token ','/);
  assert.match(await failure("broken.ts::chat"), /^broken\.ts:1: cannot load the app file: /);
  assert.match(await failure("apps.ts"), /"apps.ts" is not <file>::<function>/);
});

test("a missing export lists the exports that are apps", async () => {
  assert.equal(
    await failure("apps.ts::chatt"),
    'apps.ts has no export "chatt" (exports that are apps: badModelfile, chat, default, inverted, local, replicas, tooFew, typo, later (function), notAnApp (function), throws (function))',
  );
  assert.match(
    await failure("none.mjs::chat"),
    /none\.mjs has no export "chat" \(it exports no apps: declare one with/,
  );
});

test("a wrong type, a function that throws or returns something else", async () => {
  assert.match(
    await failure("apps.ts::plain"),
    /^apps\.ts::plain is a plain object, not an app definition \(export const plain = defineApp/,
  );
  assert.match(
    await failure("apps.ts::notAnApp"),
    /^apps\.ts::notAnApp: the function returned a number, not an app definition/,
  );
  assert.equal(await failure("apps.ts::throws"), "apps.ts::throws: the function threw: no GPU quota today");
});

test("an invalid spec names the field: unknown, out of range, inconsistent, a local file on a cluster", async () => {
  assert.equal(await failure("apps.ts::typo"), "apps.ts::typo: invalid app: spec.scaling.maxReplica: unknown field");
  assert.match(
    await failure("apps.ts::tooFew"),
    /^apps\.ts::tooFew: invalid app: spec\.scaling\.maxReplicas: Too small/,
  );
  assert.equal(
    await failure("apps.ts::inverted"),
    "apps.ts::inverted: invalid app: spec.scaling: minReplicas 4 exceeds maxReplicas 2",
  );
  assert.match(
    await failure("apps.ts::local"),
    /^apps\.ts::local: invalid app: spec\.model: "\.\/model\.gguf" is a file path; a pod cannot see files/,
  );
  assert.match(await failure("apps.ts::badModelfile"), /spec\.modelfile: FROM is not allowed here/);
  assert.match(await failure("apps.ts::replicas"), /spec\.replicas: set by the autoscaler/);
  // On this machine a local model file is fine; the other checks still apply.
  assert.equal((await loadApp("apps.ts::local", dir, "local")).spec.model, "./model.gguf");
  assert.match(await failure("apps.ts::inverted", "local"), /minReplicas 4 exceeds maxReplicas 2/);
});

test("an app chooses how the gateway spreads its requests (loadBalancing, KubeAI's names and defaults)", () => {
  const r = validateAppSpec({
    model: "m",
    loadBalancing: { strategy: "PrefixHash", prefixHash: { prefixCharLength: 400 } },
  });
  assert.ok("parsed" in r);
  assert.deepEqual(r.parsed.loadBalancing, {
    strategy: "PrefixHash",
    prefixHash: { meanLoadFactor: 125, replication: 256, prefixCharLength: 400 },
  });
  const plain = validateAppSpec({ model: "m" });
  assert.ok("parsed" in plain);
  assert.equal(plain.parsed.loadBalancing.strategy, "LeastLoad", "the default");
  const bad = validateAppSpec({
    model: "m",
    loadBalancing: { strategy: "RoundRobin", prefixHash: { meanLoadFactor: 50 } },
  });
  assert.ok("issues" in bad);
  assert.deepEqual(
    bad.issues.map((i) => i.split(":")[0]),
    ["spec.loadBalancing.strategy", "spec.loadBalancing.prefixHash.meanLoadFactor"],
  );
});

test("validateAppSpec lists every problem at once, with its path", () => {
  const r = validateAppSpec({ model: "", resources: { gpus: -1 }, extra: true });
  assert.ok("issues" in r);
  assert.deepEqual(
    r.issues.map((i) => i.split(":")[0]),
    ["spec.model", "spec.resources.gpus"],
  );
  const unknown = validateAppSpec({ model: "m", extra: true, env: [{ name: "A", value: "1", valueFromm: {} }] });
  assert.ok("issues" in unknown);
  assert.deepEqual(unknown.issues, ["spec.extra: unknown field", "spec.env[0].valueFromm: unknown field"]);
});

/** A project folder as `npm init -y` (npm 11) makes it: "type": "commonjs" (or another package.json). */
function project(name: string, pkg: object | undefined, files: Record<string, string>): string {
  const root = path.join(dir, name);
  fs.mkdirSync(root);
  if (pkg) fs.writeFileSync(path.join(root, "package.json"), JSON.stringify({ name, version: "1.0.0", ...pkg }));
  for (const [f, text] of Object.entries(files)) fs.writeFileSync(path.join(root, f), text);
  return root;
}

const esm = (model: string) => `import { defineApp } from "gantry";
import { base } from "./base.ts";
const org: string = base;
export const chat = defineApp({ model: \`hf.co/\${org}/${model}\` });
`;
const cjsFiles = {
  "base.ts": 'export const base = "org";\n',
  "app.ts": esm("ts"),
  "app.js": esm("js").replace("const org: string", "const org"),
  "exports.ts":
    'const { defineApp } = require("gantry");\nexports.chat = defineApp({ model: "hf.co/org/exports" as string });\n',
  "object.js":
    'const gantry = require("gantry");\nmodule.exports = { chat: gantry.defineApp({ model: "hf.co/org/object" }) };\n',
  "single.cjs": 'module.exports = require("gantry").defineApp({ model: "hf.co/org/single" });\n',
  "module.mts": 'import { defineApp } from "gantry";\nexport const chat = defineApp({ model: "hf.co/org/mts" });\n',
};

test('a CommonJS project (npm init -y: "type": "commonjs"): ES module syntax and require("gantry") both load', async () => {
  const root = project("cjs", { type: "commonjs" }, cjsFiles);
  const model = async (ref: string) => (await loadApp(ref, root, "cluster")).spec.model;
  assert.equal(await model("app.ts::chat"), "hf.co/org/ts");
  assert.equal(await model("app.js::chat"), "hf.co/org/js");
  assert.equal(await model("exports.ts::chat"), "hf.co/org/exports");
  assert.equal(await model("object.js::chat"), "hf.co/org/object");
  assert.equal(await model("single.cjs::default"), "hf.co/org/single");
  assert.equal(await model("module.mts::chat"), "hf.co/org/mts");
  const missing = await loadApp("app.ts::missing", root, "cluster").then(
    () => "loaded",
    (e: unknown) => (e as Error).message,
  );
  assert.equal(missing, 'app.ts has no export "missing" (exports that are apps: chat)');
  const missingCjs = await loadApp("object.js::missing", root, "cluster").then(
    () => "loaded",
    (e: unknown) => (e as Error).message,
  );
  assert.equal(missingCjs, 'object.js has no export "missing" (exports that are apps: chat)');
});

test('a "type": "module" project and a folder without package.json load the same files', async () => {
  for (const [name, pkg] of [
    ["esm", { type: "module" }],
    ["bare", undefined],
  ] as const) {
    const root = project(name, pkg, { "base.ts": cjsFiles["base.ts"], "app.ts": esm("ts"), "app.mts": esm("mts") });
    assert.equal((await loadApp("app.ts::chat", root, "cluster")).spec.model, "hf.co/org/ts", name);
    assert.equal((await loadApp("app.mts::chat", root, "cluster")).spec.model, "hf.co/org/mts", name);
  }
});
