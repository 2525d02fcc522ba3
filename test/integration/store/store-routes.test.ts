// The store endpoints over real HTTP: upload blobs, create models (from a path and from uploaded files), list, show,
// copy and delete, as an Ollama client would use them.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import fs from "node:fs/promises";
import { Readable } from "node:stream";
import { after, before, test } from "node:test";
import { TagsResponseSchema, ShowResponseSchema } from "../../../server/api/store-schemas.ts";
import { tinyModelPath } from "../../support/models.ts";
import { startStoreApp, type StoreApp } from "./store-app.ts";

let app: StoreApp;
let gguf: string;
let ggufDigest: string;
before(async () => {
  app = await startStoreApp();
  gguf = await tinyModelPath();
  ggufDigest = `sha256:${createHash("sha256")
    .update(await fs.readFile(gguf))
    .digest("hex")}`;
});
after(() => app.close());

const post = (path: string, body: unknown, method = "POST") =>
  fetch(`${app.url}${path}`, { method, headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
const ndjson = async (res: Response) =>
  (await res.text())
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as Record<string, unknown>);

test("blob upload: streamed body, 201 on the right digest, 400 on a wrong or invalid one", async () => {
  const head = () => fetch(`${app.url}/api/blobs/${ggufDigest}`, { method: "HEAD" });
  assert.equal((await head()).status, 404);

  const wrong = `sha256:${"1".repeat(64)}`;
  const bad = await fetch(`${app.url}/api/blobs/${wrong}`, { method: "POST", body: await fs.readFile(gguf) });
  assert.equal(bad.status, 400);
  assert.match(((await bad.json()) as { error: string }).error, /digest mismatch/);
  assert.equal((await fetch(`${app.url}/api/blobs/${wrong}`, { method: "HEAD" })).status, 404);

  const invalid = await fetch(`${app.url}/api/blobs/sha256:..%2F..%2Fetc`, { method: "POST", body: "x" });
  assert.equal(invalid.status, 400);
  assert.match(((await invalid.json()) as { error: string }).error, /invalid digest/);
  assert.equal((await fetch(`${app.url}/api/blobs/nothex`, { method: "HEAD" })).status, 400);

  const ok = await fetch(`${app.url}/api/blobs/${ggufDigest}`, {
    method: "POST",
    body: Readable.toWeb(createReadStream(gguf)) as ReadableStream,
    duplex: "half",
  } as RequestInit);
  assert.equal(ok.status, 201);
  assert.equal((await head()).status, 200);
  assert.deepEqual(
    (await app.store.blobs.list()).map((b) => b.digest),
    [ggufDigest],
    "only the verified blob is stored",
  );
});

test("create from uploaded files streams Ollama-style progress and the model is listed", async () => {
  const res = await post("/api/create", {
    model: "tiny:files",
    files: { "tiny.gguf": ggufDigest },
    system: "Be brief.",
  });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "application/x-ndjson");
  const lines = await ndjson(res);
  const statuses = lines.map((l) => l.status as string);
  assert.equal(statuses[0], "parsing GGUF");
  assert.ok(statuses.includes(`using existing layer ${ggufDigest}`));
  assert.ok(
    statuses.some((s) => /^creating new layer sha256:[0-9a-f]{64}$/.test(s)),
    "the system layer is new",
  );
  assert.deepEqual(statuses.slice(-2), ["writing manifest", "success"]);

  const tags = TagsResponseSchema.parse(await (await fetch(`${app.url}/api/tags`)).json());
  const entry = tags.models.find((m) => m.name === "tiny:files");
  assert.ok(entry);
  assert.match(entry.digest, /^[0-9a-f]{64}$/);
  assert.equal(entry.details.family, "llama");
  assert.equal(entry.details.format, "gguf");
  assert.ok(entry.size > (await fs.stat(gguf)).size, "size counts every layer");
});

test("create from a path on the server; stream:false answers one object", async () => {
  const res = await post("/api/create", {
    model: "alice/tiny:path",
    from: gguf,
    parameters: { temperature: 0.2, stop: "<|im_end|>" },
    stream: false,
  });
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /application\/json/);
  assert.deepEqual(await res.json(), { status: "success" });
  const spec = await app.store.resolve("alice/tiny:path");
  assert.equal(spec.digest, ggufDigest);
  assert.deepEqual(spec.parameters, { temperature: 0.2, stop: ["<|im_end|>"] });
});

test("create errors before streaming keep their HTTP status", async () => {
  const cases: [unknown, number, RegExp][] = [
    [{ model: "x", from: "no-such-model" }, 404, /not found/],
    [{ model: "bad name!", from: gguf }, 400, /invalid model name/],
    [{ model: "x", files: { "m.gguf": `sha256:${"2".repeat(64)}` } }, 404, /has not been uploaded/],
    [{ model: "x" }, 400, /neither "from" nor "files"/],
    [{ from: gguf }, 400, /model/],
    [{ model: "x", from: gguf, parameters: { temprature: 1 } }, 400, /parameters/],
    [{ model: "x", from: gguf, parameters: { temperature: "hot" } }, 400, /parameters\.temperature/],
  ];
  for (const [body, status, message] of cases) {
    const res = await post("/api/create", body);
    assert.equal(res.status, status, JSON.stringify(body));
    assert.match(((await res.json()) as { error: string }).error, message, JSON.stringify(body));
  }
});

test("an uploaded file that is not a readable GGUF is refused before the stream starts; nothing is written", async () => {
  const broken = Buffer.from("GGUF, then no valid header");
  const digest = `sha256:${createHash("sha256").update(broken).digest("hex")}`;
  assert.equal((await fetch(`${app.url}/api/blobs/${digest}`, { method: "POST", body: broken })).status, 201);
  // Each file's header is read first (a projector is told from a model by it), so this is a 400, not a stream.
  const res = await post("/api/create", { model: "broken", files: { "broken.gguf": digest } });
  assert.equal(res.status, 400);
  assert.match(((await res.json()) as { error: string }).error, /"broken\.gguf" is not a readable GGUF file/);
  assert.equal((await post("/api/show", { model: "broken" })).status, 404, "no manifest was written");
  await app.store.prune();
});

test("show returns details, model_info, template and capabilities of the tiny model", async () => {
  const res = await post("/api/show", { model: "tiny:files" });
  assert.equal(res.status, 200);
  const show = ShowResponseSchema.parse(await res.json());
  assert.equal(show.details.family, "llama");
  assert.equal(show.details.quantization_level, "F32");
  assert.match(show.details.parameter_size, /^\d+(\.\d+)?[KMB]$/);
  assert.equal(show.model_info["general.architecture"], "llama");
  assert.equal(show.model_info["llama.embedding_length"], 64);
  assert.equal(typeof show.model_info["general.parameter_count"], "number");
  assert.equal(show.model_info["tokenizer.ggml.tokens"], null);
  assert.match(show.template ?? "", /im_start/, "the GGUF's own chat template");
  assert.equal(show.system, "Be brief.");
  assert.deepEqual(show.capabilities, ["completion"]);
  assert.match(show.modelfile, /^FROM /m);
  assert.ok(!Number.isNaN(Date.parse(show.modified_at)));

  const verbose = ShowResponseSchema.parse(
    await (await post("/api/show", { model: "tiny:files", verbose: true })).json(),
  );
  assert.ok(Array.isArray(verbose.model_info["tokenizer.ggml.tokens"]));

  const params = ShowResponseSchema.parse(await (await post("/api/show", { model: "alice/tiny:path" })).json());
  assert.equal(params.parameters, `stop                           "<|im_end|>"\ntemperature                    0.2`);

  assert.equal((await post("/api/show", { model: "missing" })).status, 404);
  assert.equal((await post("/api/show", {})).status, 400);
});

test("copy and delete answer 200 and 404", async () => {
  assert.equal((await post("/api/copy", { source: "tiny:files", destination: "tiny:copy" })).status, 200);
  assert.equal((await post("/api/copy", { source: "nope", destination: "x" })).status, 404);
  assert.equal((await post("/api/copy", { source: "tiny:files" })).status, 400);
  const names = async () =>
    TagsResponseSchema.parse(await (await fetch(`${app.url}/api/tags`)).json())
      .models.map((m) => m.name)
      .sort();
  assert.deepEqual(await names(), ["alice/tiny:path", "tiny:copy", "tiny:files"]);

  for (const model of ["tiny:files", "tiny:copy", "alice/tiny:path"]) {
    assert.equal((await post("/api/delete", { model }, "DELETE")).status, 200, model);
  }
  assert.equal((await post("/api/delete", { model: "tiny:files" }, "DELETE")).status, 404);
  assert.deepEqual(await names(), []);
  assert.deepEqual(await app.store.blobs.list(), [], "deleting the last model freed its blobs");
});
