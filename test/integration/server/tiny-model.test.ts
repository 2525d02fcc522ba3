// The fast paths on a generated tiny model, driven by the real `ollama` and `openai` npm clients against a
// `gantry serve` process: every option, stop strings, JSON schema answers, keep_alive, concurrency.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import type { Ollama } from "ollama";
import type OpenAI from "openai";
import { z } from "zod";
import type { TestServer } from "../../support/server.ts";
import { startTinyServer } from "../../support/tiny-server.ts";

let srv: TestServer;
let ollama: Ollama;
let openai: OpenAI;

before(async () => {
  ({ srv, ollama, openai } = await startTinyServer({ GANTRY_NUM_PARALLEL: "4" }));
});
after(async () => {
  await srv?.stop();
});

describe("options", () => {
  test("num_predict bounds the answer and reports done_reason length", async () => {
    const r = await ollama.generate({ model: "babbler", prompt: "tell me a story", options: { num_predict: 7 } });
    assert.equal(r.eval_count, 7);
    assert.equal(r.done_reason, "length");
    assert.ok((r.response ?? "").length > 0);
    for (const k of [
      "total_duration",
      "load_duration",
      "prompt_eval_count",
      "prompt_eval_duration",
      "eval_duration",
    ] as const) {
      assert.equal(typeof r[k], "number", k);
    }
    assert.ok(r.prompt_eval_count > 0 && r.eval_duration > 0 && r.total_duration >= r.eval_duration);
  });

  test("temperature 0 is repeatable; a fixed seed is repeatable at temperature 1", async () => {
    const ask = (options: object) =>
      ollama.generate({ model: "babbler", prompt: "the sky is", options: { num_predict: 12, ...options } });
    const [a, b] = [await ask({ temperature: 0 }), await ask({ temperature: 0 })];
    assert.equal(a.response, b.response);
    const [c, d] = [await ask({ temperature: 1, seed: 42 }), await ask({ temperature: 1, seed: 42 })];
    assert.equal(c.response, d.response);
  });

  test("every sampling option is accepted and generation still works", async () => {
    const r = await ollama.generate({
      model: "babbler",
      prompt: "hello",
      options: {
        temperature: 0.7,
        top_p: 0.8,
        top_k: 20,
        min_p: 0.05,
        seed: 3,
        num_predict: 6,
        repeat_penalty: 1.2,
        repeat_last_n: 32,
        presence_penalty: 0.5,
        frequency_penalty: 0.5,
        num_ctx: 256,
        stop: ["\u0000never"],
      },
    });
    assert.equal(r.eval_count, 6);
  });

  test("a stop string ends the answer and is not part of it", async () => {
    // Greedy output is deterministic: take a piece of it as the stop string.
    const full = await ollama.generate({
      model: "babbler",
      prompt: "count with me",
      options: { temperature: 0, num_predict: 24 },
    });
    const fullText = full.response ?? "";
    const stop = fullText.trim().slice(4, 7);
    assert.ok(stop.length === 3, `need some text to stop on, got ${JSON.stringify(fullText)}`);
    const r = await ollama.generate({
      model: "babbler",
      prompt: "count with me",
      options: { temperature: 0, num_predict: 24, stop: [stop] },
    });
    assert.equal(r.done_reason, "stop");
    const text = r.response ?? "";
    assert.ok(!text.includes(stop), `${JSON.stringify(text)} must not contain ${JSON.stringify(stop)}`);
    assert.ok(fullText.startsWith(text), "the text before the stop string is unchanged");
    const oa = await openai.completions.create({
      model: "babbler",
      prompt: "count with me",
      temperature: 0,
      max_tokens: 24,
      stop: [stop],
    });
    assert.equal(oa.choices[0]!.finish_reason, "stop");
    assert.ok(!oa.choices[0]!.text.includes(stop));
  });

  test("a prompt longer than num_ctx is cut from the front by default, refused with the token counts under truncate false", async () => {
    const prompt = "the cat and the dog ".repeat(100);
    const cut = await ollama.generate({ model: "babbler", prompt, options: { num_ctx: 64, num_predict: 4 } });
    assert.ok(cut.prompt_eval_count < 64, String(cut.prompt_eval_count));
    // Ollama's `truncate` (not in the client's request type; the client sends the object as it is).
    const refuse = { model: "babbler", prompt, options: { num_ctx: 64 }, truncate: false };
    await assert.rejects(ollama.generate(refuse), (e: Error & { status_code?: number }) => {
      assert.equal(e.status_code, 400);
      assert.match(e.message, /\d+ tokens/);
      assert.match(e.message, /64/);
      return true;
    });
  });

  test("a request without num_ctx gets the server's context, not an earlier request's smaller num_ctx", async () => {
    const prompt = "the cat and the dog ".repeat(30);
    const small = await ollama.generate({ model: "babbler", prompt, options: { num_ctx: 64, num_predict: 1 } });
    assert.ok(small.prompt_eval_count < 64, String(small.prompt_eval_count));
    const r = await openai.completions.create({ model: "babbler", prompt, max_tokens: 1 });
    assert.ok(r.usage!.prompt_tokens > 64, `the whole prompt, not cut to 64: ${r.usage!.prompt_tokens}`);
  });
});

describe("structured output", () => {
  const Answer = z.object({ sky: z.enum(["blue", "red", "green"]), ok: z.boolean() });

  test("a JSON schema answer parses and validates (ollama format)", async () => {
    const r = await ollama.chat({
      model: "tiny",
      messages: [{ role: "user", content: "what color is the sky?" }],
      format: z.toJSONSchema(Answer),
      options: { num_predict: 64, temperature: 0.5, seed: 1 },
    });
    Answer.parse(JSON.parse(r.message.content));
  });

  test("response_format json_schema through the openai client", async () => {
    const r = await openai.chat.completions.create({
      model: "tiny",
      max_tokens: 64,
      seed: 2,
      messages: [{ role: "user", content: "answer in JSON" }],
      response_format: {
        type: "json_schema",
        json_schema: { name: "answer", schema: z.toJSONSchema(Answer) as Record<string, unknown> },
      },
    });
    Answer.parse(JSON.parse(r.choices[0]!.message.content ?? ""));
  });

  test("a schema with draft-07 definitions (pydantic v1, zod-to-json-schema) is honoured; the answer ends with it", async () => {
    const r = await ollama.chat({
      model: "babbler",
      messages: [{ role: "user", content: "two colors" }],
      format: {
        definitions: { color: { enum: ["red", "green"] } },
        type: "object",
        properties: { a: { $ref: "#/definitions/color" }, b: { $ref: "#/definitions/color" } },
        required: ["a", "b"],
      },
      options: { num_predict: 200, seed: 4 },
    });
    const v = z.object({ a: z.enum(["red", "green"]), b: z.enum(["red", "green"]) }).strict();
    v.parse(JSON.parse(r.message.content));
    // Not 200 tokens with newlines after the value: it ends there, as Ollama's answer does.
    assert.equal(r.done_reason, "stop", JSON.stringify(r.message.content));
    assert.equal(r.message.content, r.message.content.trim());
  });
});

describe("keep_alive", () => {
  const loaded = async () => (await ollama.ps()).models.map((m) => m.name);

  test("an empty prompt loads the model; keep_alive 0 unloads it", async () => {
    const load = await ollama.generate({ model: "tiny", prompt: "" });
    assert.equal(load.done, true);
    assert.equal(load.done_reason, "load");
    assert.ok((await loaded()).includes("tiny:latest"));
    const unload = await ollama.generate({ model: "tiny", prompt: "", keep_alive: 0 });
    assert.equal(unload.done_reason, "unload");
    assert.ok(!(await loaded()).includes("tiny:latest"));
  });

  test("a request with keep_alive 0 unloads the model after answering", async () => {
    const r = await ollama.generate({ model: "tiny", prompt: "hi", keep_alive: 0, options: { num_predict: 3 } });
    assert.equal(r.done, true);
    const deadline = Date.now() + 5000;
    while ((await loaded()).includes("tiny:latest")) {
      assert.ok(Date.now() < deadline, "model still loaded 5 s after a keep_alive 0 request");
      await new Promise((res) => setTimeout(res, 50));
    }
  });

  test("ps reports expiry for a keep_alive duration", async () => {
    await ollama.generate({ model: "tiny", prompt: "hi", keep_alive: "10m", options: { num_predict: 2 } });
    const m = (await ollama.ps()).models.find((x) => x.name === "tiny:latest");
    assert.ok(m, "tiny is loaded");
    const expires = new Date(m.expires_at).getTime();
    assert.ok(
      expires > Date.now() + 8 * 60_000 && expires < Date.now() + 11 * 60_000,
      `expires_at ${String(m.expires_at)}`,
    );
  });
});

describe("concurrency", () => {
  test("8 concurrent streams on 4 sequences all complete correctly", async () => {
    const runs = Array.from({ length: 8 }, async (_, i) => {
      let text = "";
      let last: { done: boolean; eval_count?: number; done_reason?: string } | undefined;
      for await (const part of await ollama.generate({
        model: "babbler",
        prompt: `story number ${i}`,
        stream: true,
        options: { num_predict: 24 },
      })) {
        text += part.response;
        last = part;
      }
      return { text, last };
    });
    for (const { text, last } of await Promise.all(runs)) {
      assert.equal(last?.done, true);
      assert.equal(last?.done_reason, "length");
      assert.equal(last?.eval_count, 24);
      assert.ok(text.length > 0);
    }
  });

  test("openai streaming: chunks, finish_reason and usage", async () => {
    const stream = await openai.chat.completions.create({
      model: "babbler",
      messages: [{ role: "user", content: "hi" }],
      stream: true,
      max_tokens: 10,
      stream_options: { include_usage: true },
    });
    let text = "",
      finish: string | null | undefined,
      usage: OpenAI.CompletionUsage | undefined | null;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      const c = chunk.choices[0];
      if (!c) continue;
      text += c.delta.content ?? "";
      if (c.finish_reason) finish = c.finish_reason;
    }
    assert.ok(text.length > 0);
    assert.equal(finish, "length");
    assert.equal(usage?.completion_tokens, 10);
    assert.ok((usage?.prompt_tokens ?? 0) > 0);
  });
});
