import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { CreateRequestSchema, type Progress } from "../../../server/api/store-schemas.ts";
import { AppError, type ErrorCode } from "../../../server/common/errors.ts";
import { parseDigest } from "../../../server/store/digest.ts";
import { parseModelName } from "../../../server/common/model-name.ts";
import { ModelStore } from "../../../server/store/model-store.ts";
import { showResponse } from "../../../server/http/show-format.ts";
import { tinyModelPath, visionPairPaths } from "../../support/models.ts";

/** What /api/show answers for a model (the store describes it, the HTTP layer formats it). */
const show = async (store: ModelStore, name: string) => showResponse(await store.describe(name));

const fileDigest = async (file: string) =>
  parseDigest(
    `sha256:${createHash("sha256")
      .update(await fs.readFile(file))
      .digest("hex")}`,
  );
const newStore = async () => new ModelStore({ root: await fs.mkdtemp(path.join(os.tmpdir(), "gantry-store-")) });
const code = (c: ErrorCode) => (e: unknown) => e instanceof AppError && e.code === c;

async function createCollecting(store: ModelStore, req: Parameters<ModelStore["create"]>[0]): Promise<string[]> {
  const statuses: string[] = [];
  await store.create(req, (p: Progress) => statuses.push(p.status));
  return statuses;
}

test("create from a GGUF path imports it as a blob and resolves to it", async () => {
  const store = await newStore();
  const gguf = await tinyModelPath();
  const digest = await fileDigest(gguf);
  const statuses = await createCollecting(store, { model: "tiny:v1", from: gguf });
  assert.deepEqual(statuses, ["parsing GGUF", `creating new layer ${digest}`, "writing manifest", "success"]);

  const spec = await store.resolve("tiny:v1");
  assert.equal(spec.name, "tiny:v1");
  assert.equal(spec.digest, digest);
  assert.equal(spec.modelPath, store.blobs.path(digest));
  assert.equal(await fileDigest(spec.modelPath), digest, "the stored blob is the same bytes");
  assert.equal(spec.size, (await fs.stat(gguf)).size);
  assert.deepEqual(spec.parameters, {});
  assert.deepEqual(spec.messages, []);
  assert.equal(spec.template, undefined);

  const again = await createCollecting(store, { model: "TINY:v1", from: gguf });
  assert.ok(again.includes(`using existing layer ${digest}`));
  const list = await store.list();
  assert.equal(list.length, 1, "a differently-cased name is the same model");
  assert.equal(list[0]!.details.family, "llama");
  assert.equal(list[0]!.details.quantization_level, "F32");
  assert.equal(list[0]!.details.format, "gguf");
  assert.match(list[0]!.details.parameter_size, /^\d+(\.\d+)?[KMB]$/);
});

test("create with overrides stores template, system, parameters, messages and license layers", async () => {
  const store = await newStore();
  const gguf = await tinyModelPath();
  // Through the wire schema, as the route does: a single stop string becomes a list.
  await store.create(
    CreateRequestSchema.parse({ model: "base", from: gguf, parameters: { temperature: 0.5, stop: "<|im_end|>" } }),
  );
  await store.create({
    model: "alice/derived:chat",
    from: "base",
    template: "{{ .System }} {{ .Prompt }}",
    system: "You are terse.",
    parameters: { top_k: 20, stop: ["<|im_end|>", "<|im_start|>"] },
    messages: [
      { role: "user", content: "hi" },
      { role: "assistant", content: "hello" },
    ],
    license: ["MIT", "Apache-2.0"],
  });
  const spec = await store.resolve("alice/derived:chat");
  assert.equal(spec.name, "alice/derived:chat");
  assert.equal(spec.template, "{{ .System }} {{ .Prompt }}");
  assert.equal(spec.system, "You are terse.");
  assert.deepEqual(
    spec.parameters,
    { temperature: 0.5, top_k: 20, stop: ["<|im_end|>", "<|im_start|>"] },
    "merged over the base's parameters",
  );
  assert.deepEqual(spec.messages, [
    { role: "user", content: "hi" },
    { role: "assistant", content: "hello" },
  ]);
  assert.equal(spec.digest, (await store.resolve("base")).digest, "shares the base's weights");

  const base = await store.resolve("base");
  assert.deepEqual(base.parameters, { temperature: 0.5, stop: ["<|im_end|>"] }, "a single stop string becomes a list");

  const shown = await show(store, "alice/derived:chat");
  assert.equal(shown.license, "MIT\nApache-2.0");
  assert.equal(shown.system, "You are terse.");
  assert.equal(shown.template, "{{ .System }} {{ .Prompt }}");
  assert.equal(
    shown.parameters,
    [
      `stop                           "<|im_end|>"`,
      `stop                           "<|im_start|>"`,
      `temperature                    0.5`,
      `top_k                          20`,
    ].join("\n"),
  );
  assert.match(shown.modelfile, /^FROM .*sha256-[0-9a-f]{64}$/m);
  assert.match(shown.modelfile, /^SYSTEM """You are terse\."""$/m);
  assert.match(shown.modelfile, /^PARAMETER top_k 20$/m);
  assert.match(shown.modelfile, /^MESSAGE assistant hello$/m);
  assert.deepEqual(shown.messages, [
    { role: "user", content: "hi" },
    { role: "assistant", content: "hello" },
  ]);
});

test("create from uploaded files: the model GGUF and a projector, told apart by architecture (clip), not by name", async () => {
  const store = await newStore();
  const pair = await visionPairPaths();
  const model = await store.blobs.importFile(pair.model);
  const projector = await store.blobs.importFile(pair.mmproj);
  const statuses = await createCollecting(store, {
    model: "vision",
    files: { "a.gguf": projector.digest, "b.gguf": model.digest },
  });
  assert.deepEqual(
    statuses.filter((s) => s.includes("layer")).sort(),
    [`using existing layer ${model.digest}`, `using existing layer ${projector.digest}`].sort(),
  );
  const spec = await store.resolve("vision");
  assert.equal(spec.digest, model.digest);
  assert.equal(spec.projector, store.blobs.path(projector.digest));
  const shown = await show(store, "vision");
  assert.deepEqual(shown.capabilities, ["completion", "vision"]);
  assert.equal(shown.projector_info?.["general.architecture"], "clip");
  assert.deepEqual(shown.details.families, ["llama", "clip"]);
  assert.match(shown.modelfile, new RegExp(`^FROM ${store.blobs.path(projector.digest)}$`, "m"));
  assert.deepEqual((await store.list()).find((m) => m.name === "vision:latest")?.details.families, ["llama", "clip"]);
  // A llama GGUF called mmproj is a second model, and a projector alone is no model.
  const other = await store.blobs.importFile(await tinyModelPath({ seed: 7 }));
  await assert.rejects(
    store.create({ model: "two", files: { "model.gguf": model.digest, "mmproj-f16.gguf": other.digest } }),
    /exactly one model GGUF/,
  );
  await assert.rejects(
    store.create({ model: "none", files: { "mmproj.gguf": projector.digest } }),
    /the files given are projectors \(general.architecture "clip"\) only/,
  );
});

test("create rejects bad requests before writing anything", async () => {
  const store = await newStore();
  const notGguf = await store.blobs.put(Buffer.from("definitely not a gguf"));
  const missing = parseDigest(`sha256:${"0".repeat(64)}`);
  const textFile = path.join(store.root, "weights.gguf");
  await fs.writeFile(textFile, "PK\u0003\u0004 zip, not gguf");
  await assert.rejects(store.create({ model: "x", files: { "m.gguf": notGguf.digest } }), code("MODEL_INVALID_FILE"));
  await assert.rejects(store.create({ model: "x", files: { "m.gguf": missing } }), code("BLOB_NOT_FOUND"));
  await assert.rejects(
    store.create({ model: "x", files: { "m.gguf": "sha256:../../etc" } }),
    code("STORE_INVALID_DIGEST"),
  );
  await assert.rejects(
    store.create({ model: "x", files: { "model.safetensors": notGguf.digest } }),
    code("UNSUPPORTED_FIELD"),
  );
  await assert.rejects(store.create({ model: "x", from: textFile }), code("MODEL_INVALID_FILE"));
  await assert.rejects(store.create({ model: "x", from: "/nonexistent/model.gguf" }), code("BAD_REQUEST"));
  await assert.rejects(store.create({ model: "x", from: "no-such-model" }), code("MODEL_NOT_FOUND"));
  await assert.rejects(store.create({ model: "x" }), code("BAD_REQUEST"));
  await assert.rejects(store.create({ model: "bad name!", from: await tinyModelPath() }), code("MODEL_INVALID_NAME"));
  await assert.rejects(store.create({ model: "x", from: "base", quantize: "q4_K_M" }), code("UNSUPPORTED_FIELD"));
  assert.deepEqual(await store.list(), []);
});

test("delete removes the manifest and only the blobs no other model uses", async () => {
  const store = await newStore();
  const gguf = await tinyModelPath();
  const modelDigest = await fileDigest(gguf);
  await store.create({ model: "base", from: gguf });
  await store.create({ model: "derived", from: "base", system: "only in derived" });
  const before = await Promise.all(
    (await store.blobs.list()).map((b) => fs.readFile(store.blobs.path(b.digest), "utf8")),
  );
  assert.ok(before.includes("only in derived"));

  await store.delete("derived");
  await assert.rejects(store.resolve("derived"), code("MODEL_NOT_FOUND"));
  const afterFirst = (await store.blobs.list()).map((b) => b.digest);
  assert.ok(afterFirst.includes(modelDigest), "weights still used by base");
  const texts = await Promise.all(afterFirst.map((d) => fs.readFile(store.blobs.path(d), "utf8")));
  assert.ok(!texts.includes("only in derived"), "the system layer only derived used is gone");

  await store.delete("base");
  assert.deepEqual(await store.blobs.list(), [], "nothing is left once no model references the blobs");
  await assert.rejects(store.delete("base"), code("MODEL_NOT_FOUND"));
});

test("copy gives a second name that survives deleting the first", async () => {
  const store = await newStore();
  await store.create({ model: "orig:1", from: await tinyModelPath() });
  await store.copy("orig:1", "team/alias:stable");
  assert.deepEqual((await store.list()).map((m) => m.name).sort(), ["orig:1", "team/alias:stable"]);
  const [a, b] = [await store.resolve("orig:1"), await store.resolve("team/alias:stable")];
  assert.equal(a.digest, b.digest);
  await store.delete("orig:1");
  const alias = await store.resolve("team/alias:stable");
  assert.equal(await fileDigest(alias.modelPath), alias.digest, "shared blobs were kept");
  await assert.rejects(store.copy("orig:1", "x"), code("MODEL_NOT_FOUND"));
  await assert.rejects(store.copy("team/alias:stable", "bad//name"), code("MODEL_INVALID_NAME"));
});

test("resolve of a .gguf path gives an ad-hoc spec without importing the file", async () => {
  const store = await newStore();
  const gguf = await tinyModelPath();
  const spec = await store.resolve(gguf);
  assert.equal(spec.modelPath, gguf);
  assert.equal(spec.name, gguf);
  assert.equal(spec.digest, await fileDigest(gguf));
  assert.equal(spec.size, (await fs.stat(gguf)).size);
  assert.deepEqual(await store.blobs.list(), []);
  assert.deepEqual((await show(store, gguf)).details.family, "llama");
  await assert.rejects(store.resolve("./missing/model.gguf"), code("MODEL_NOT_FOUND"));
  await assert.rejects(store.resolve("unknown-model"), code("MODEL_NOT_FOUND"));
  await assert.rejects(store.resolve("in valid"), code("MODEL_INVALID_NAME"));
});

test("prune removes uploads no model references", async () => {
  const store = await newStore();
  await store.create({ model: "m", from: await tinyModelPath() });
  const orphan = await store.blobs.put(Buffer.from("uploaded but never used"));
  assert.deepEqual(await store.prune(), [orphan.digest]);
  assert.ok(await store.resolve("m"));
});

test("a split model resolves to its first part, linked next to the others under llama.cpp's split names", async () => {
  const store = await newStore();
  const parts = [];
  for (const seed of [1, 2, 3]) parts.push(await store.blobs.importFile(await tinyModelPath({ seed })));
  const base = await store.blobs.importFile(await tinyModelPath());
  await store.create({ model: "whole", files: { "m.gguf": base.digest } });
  // A pulled split model: several model layers in part order (what the hub puller writes).
  const whole = (await store.manifests.read(parseModelName("whole")))!.manifest;
  await store.manifests.write(parseModelName("split"), {
    ...whole,
    layers: parts.map((p) => ({ mediaType: "application/vnd.ollama.image.model", digest: p.digest, size: p.size })),
  });
  const spec = await store.resolve("split");
  assert.equal(spec.digest, parts[0]!.digest);
  assert.match(path.basename(spec.modelPath), /^model-00001-of-00003\.gguf$/);
  const dir = path.dirname(spec.modelPath);
  for (const [i, p] of parts.entries()) {
    assert.equal(await fileDigest(path.join(dir, `model-0000${i + 1}-of-00003.gguf`)), p.digest, `part ${i + 1}`);
  }
  await store.delete("split");
  await assert.rejects(fs.stat(dir), { code: "ENOENT" }, "the links go with the model");
});

test("only (GANTRY_ONLY_MODELS): the store lists and serves the named models, the others in the directory are 404", async () => {
  const root = await fs.mkdtemp(path.join(os.tmpdir(), "gantry-store-"));
  const gguf = await tinyModelPath();
  const all = new ModelStore({ root });
  await all.create({ model: "mine", from: gguf });
  await all.create({ model: "theirs:v2", from: gguf });
  const store = new ModelStore({ root, only: ["Mine:latest"] });
  assert.deepEqual(
    (await store.list()).map((m) => m.name),
    ["mine:latest"],
  );
  assert.equal((await store.resolve("mine")).name, "mine:latest");
  assert.equal((await store.describe("MINE")).details.format, "gguf");
  await assert.rejects(store.resolve("theirs:v2"), code("MODEL_NOT_FOUND"));
  // A client that guessed the model's name (the app's name, say) learns the one to send.
  await assert.rejects(store.resolve("chat"), {
    message: 'model "chat" not found: this server serves "Mine:latest" (GET /v1/models or /api/tags lists it)',
  });
  await assert.rejects(store.describe("theirs:v2"), code("MODEL_NOT_FOUND"));
  await assert.rejects(store.resolve(gguf), code("MODEL_NOT_FOUND"), "a .gguf path is another model too");
  await assert.rejects(store.resolve("bad name!"), code("MODEL_INVALID_NAME"), "a malformed name is still a 400");
  assert.equal((await all.list()).length, 2, "nothing was removed");
  const byPath = new ModelStore({ root, only: [gguf] });
  assert.equal((await byPath.resolve(gguf)).modelPath, gguf);
  assert.deepEqual(await byPath.list(), []);
});

test("aliases (GANTRY_MODEL_ALIASES): an app's name selects its one model; other names stay 404 naming both", async () => {
  const root = await fs.mkdtemp(path.join(os.tmpdir(), "gantry-store-"));
  const gguf = await tinyModelPath();
  await new ModelStore({ root }).create({ model: "hf.co/org/repo-GGUF:Q4_K_M", from: gguf });
  const store = new ModelStore({
    root,
    only: ["hf.co/org/repo-GGUF:Q4_K_M"],
    aliases: { chat: "hf.co/org/repo-GGUF:Q4_K_M", "hf.co/org/repo-GGUF:Q4_K_M": "hf.co/org/repo-GGUF:Q4_K_M" },
  });
  for (const name of ["chat", "chat:latest", "CHAT", "hf.co/org/repo-GGUF:q4_k_m"])
    assert.equal((await store.resolve(name)).name, "hf.co/org/repo-GGUF:Q4_K_M", name);
  assert.equal((await store.describe("chat")).displayName, "hf.co/org/repo-GGUF:Q4_K_M");
  assert.deepEqual(store.aliasesOf("hf.co/org/repo-GGUF:Q4_K_M"), ["chat"], "the model's own name is no alias");
  await assert.rejects(store.resolve("chat:v2"), code("MODEL_NOT_FOUND"), "another tag of the alias is another name");
  await assert.rejects(store.resolve("other"), {
    message:
      'model "other" not found: this server serves "hf.co/org/repo-GGUF:Q4_K_M" (also "chat") ' +
      "(GET /v1/models or /api/tags lists it)",
  });
  store.restrict({});
  await assert.rejects(store.resolve("chat"), code("MODEL_NOT_FOUND"), "restrict replaces the aliases");
});
