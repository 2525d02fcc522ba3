// The real model (SmolLM2-135M-Instruct) through the real `ollama` and `openai` clients, the way users call Gantry.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { Ollama } from "ollama";
import OpenAI from "openai";
import { createHash } from "node:crypto";
import fs from "node:fs";
import { createModel, startTestServer, type TestServer } from "../../support/server.ts";
import { smollm2Path } from "../../support/models.ts";

let srv: TestServer;
let ollama: Ollama;
let openai: OpenAI;
let gguf: string;

before(async () => {
  gguf = await smollm2Path();
  // --model preloads: /health answers 503 while loading, then 200 (startTestServer waits for 200).
  srv = await startTestServer({ args: ["--model", gguf] });
  ollama = new Ollama({ host: srv.url });
  openai = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: "placeholder" });
  // As a remote client does it: upload the GGUF as a blob, then create from `files` with the ollama client.
  const digest = `sha256:${createHash("sha256").update(fs.readFileSync(gguf)).digest("hex")}`;
  assert.equal((await fetch(`${srv.url}/api/blobs/${digest}`, { method: "HEAD" })).status, 404);
  const up = await fetch(`${srv.url}/api/blobs/${digest}`, { method: "POST", body: fs.readFileSync(gguf) });
  assert.equal(up.status, 201);
  const statuses: string[] = [];
  // ollama-js passes `files` through although its CreateRequest type does not declare it (Ollama's API has it).
  const req = { model: "smollm2:135m", files: { "SmolLM2-135M-Instruct.Q4_1.gguf": digest }, stream: true as const };
  for await (const p of await ollama.create(req as typeof req & { from?: string })) statuses.push(p.status);
  assert.equal(statuses.at(-1), "success");
  // And from a GGUF path on the server (curl's way: the ollama client refuses local paths).
  await createModel(srv.url, "smollm2-copy", gguf);
});
after(async () => {
  await srv?.stop();
});

const question = [{ role: "user" as const, content: "What is the capital of France?" }];

test("create from a GGUF path on the server, then list, show and ps see it", async () => {
  const list = await ollama.list();
  const m = list.models.find((x) => x.name === "smollm2:135m");
  assert.ok(m, `smollm2:135m listed: ${JSON.stringify(list.models.map((x) => x.name))}`);
  assert.ok(list.models.some((x) => x.name === "smollm2-copy:latest"));
  assert.equal(
    list.models.find((x) => x.name === "smollm2-copy:latest")?.size,
    m.size,
    "both names share the same blob",
  );
  assert.equal(m.details.format, "gguf");
  assert.equal(m.details.quantization_level, "Q4_1");
  assert.equal(m.details.family, "llama");
  const show = await ollama.show({ model: "smollm2:135m" });
  assert.ok(show.capabilities.includes("completion"));
  assert.equal((show.model_info as unknown as Record<string, unknown>)["general.architecture"], "llama");
  assert.ok(show.template.includes("im_start"), "the GGUF's chat template is shown");
  const models = await openai.models.list();
  assert.ok(models.data.some((x) => x.id === "smollm2:135m"));
});

test("chat (non-streaming) answers the question", async () => {
  const r = await ollama.chat({
    model: "smollm2:135m",
    messages: question,
    options: { temperature: 0, num_predict: 40 },
  });
  assert.equal(r.message.role, "assistant");
  assert.match(r.message.content, /Paris/);
  assert.equal(r.done, true);
  assert.ok(r.eval_count > 0 && r.prompt_eval_count > 0);
});

test("chat (streaming) through the ollama client", async () => {
  let text = "",
    parts = 0;
  for await (const p of await ollama.chat({
    model: "smollm2:135m",
    messages: question,
    stream: true,
    options: { temperature: 0, num_predict: 40 },
  })) {
    text += p.message.content;
    parts++;
  }
  assert.ok(parts > 3, "streamed in several parts");
  assert.match(text, /Paris/);
});

test("openai client: chat completion and streaming", async () => {
  const r = await openai.chat.completions.create({
    model: "smollm2:135m",
    messages: question,
    temperature: 0,
    max_tokens: 40,
  });
  assert.match(r.choices[0]!.message.content ?? "", /Paris/);
  assert.ok(["stop", "length"].includes(r.choices[0]!.finish_reason));
  assert.ok((r.usage?.completion_tokens ?? 0) > 0);
  let text = "";
  for await (const c of await openai.chat.completions.create({
    model: "smollm2:135m",
    messages: question,
    temperature: 0,
    max_tokens: 40,
    stream: true,
  })) {
    text += c.choices[0]?.delta.content ?? "";
  }
  assert.match(text, /Paris/);
});

test("generate with a system prompt", async () => {
  const r = await ollama.generate({
    model: "smollm2:135m",
    system: "You are a helpful assistant.",
    prompt: "What is the capital of France?",
    options: { temperature: 0, num_predict: 30 },
  });
  assert.match(r.response ?? "", /Paris/);
  // raw: the prompt goes to the model verbatim, here already in the model's ChatML format.
  const raw = await ollama.generate({
    model: "smollm2:135m",
    raw: true,
    prompt: "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n",
    options: { temperature: 0, num_predict: 30 },
  });
  assert.match(raw.response ?? "", /Paris/);
  // The chat template renders exactly the ChatML text llama.cpp would (SmolLM2 adds no BOS: its BOS is <|im_start|>).
  const rendered =
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n";
  const same = await ollama.generate({
    model: "smollm2:135m",
    raw: true,
    prompt: rendered,
    options: { temperature: 0, num_predict: 30 },
  });
  assert.equal(r.prompt_eval_count, same.prompt_eval_count);
  assert.equal(r.response, same.response);
});

test("the GGUF's own chat template is rendered as written: a chat without a system message gets SmolLM2's default one", async () => {
  const chat = await ollama.chat({
    model: "smollm2:135m",
    messages: [{ role: "user", content: "Hello!" }],
    options: { temperature: 0, num_predict: 20 },
  });
  const asLlamaCpp =
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n";
  const raw = await ollama.generate({
    model: "smollm2:135m",
    raw: true,
    prompt: asLlamaCpp,
    options: { temperature: 0, num_predict: 20 },
  });
  assert.equal(chat.prompt_eval_count, raw.prompt_eval_count);
  assert.equal(chat.message.content, raw.response);
});

test("format json: the answer is one JSON value", async () => {
  const r = await ollama.generate({
    model: "smollm2:135m",
    prompt: "Describe Paris as a JSON object with keys name and country.",
    format: "json",
    options: { temperature: 0, num_predict: 400 },
  });
  assert.equal(r.done_reason, "stop", `finished by itself: ${r.response ?? ""}`);
  const value: unknown = JSON.parse(r.response ?? "");
  assert.equal(typeof value, "object");
});

test("embeddings through both clients", async () => {
  const e = await ollama.embed({
    model: "smollm2:135m",
    input: ["The cat sits on the mat.", "A feline rests on a rug.", "Stock markets fell sharply."],
  });
  assert.equal(e.embeddings.length, 3);
  const dim = e.embeddings[0]!.length;
  assert.ok(dim >= 64);
  const cos = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i]!, 0);
  for (const v of e.embeddings) assert.ok(Math.abs(Math.hypot(...v) - 1) < 1e-3, "normalised");
  assert.ok(
    cos(e.embeddings[0]!, e.embeddings[1]!) > cos(e.embeddings[0]!, e.embeddings[2]!),
    "similar sentences are closer",
  );
  const oa = await openai.embeddings.create({ model: "smollm2:135m", input: "hello" });
  assert.equal(oa.data[0]!.embedding.length, dim);
});

test("ps shows the loaded model", async () => {
  const ps = await ollama.ps();
  // The weights are loaded once, whichever name (the --model path or smollm2:135m) loaded them first.
  const m = ps.models[0];
  assert.ok(m, JSON.stringify(ps));
  assert.equal(ps.models.length, 1, "aliases of the same weights share one loaded model");
  assert.ok(m.size > 90_000_000);
});
