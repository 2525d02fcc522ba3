// Generation on the tiny random model through the real node-llama-cpp runtime.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { isAppError } from "../../../server/common/errors.ts";
import type { Engine, GenerateRequest } from "../../../server/engine/types.ts";
import { smollm2Path, tinyModelPath } from "../../support/models.ts";
import { chat, collect, makeEngine, request, specFor } from "./helpers.ts";

let engine: Engine;
let endless: ReturnType<typeof specFor>;
let normal: ReturnType<typeof specFor>;

before(async () => {
  engine = await makeEngine({
    renderTemplate: (tpl, d) => tpl.replace("{{ .System }}", d.System).replace("{{ .Prompt }}", d.Prompt),
  });
  endless = specFor(await tinyModelPath({ controlLogit: -8 }), "endless");
  normal = specFor(await tinyModelPath(), "normal");
});
after(() => engine.shutdown());

test("chat generates text and reports Ollama-style stats", async () => {
  const r = await collect(engine.generate(request(endless, chat("hello there"), { num_predict: 12 })));
  assert.ok(r.text.length > 0);
  assert.equal(r.stats.evalCount, 12);
  assert.equal(r.stats.doneReason, "length");
  assert.ok(r.stats.promptEvalCount > 5);
  assert.ok(r.stats.totalDurationNs >= r.stats.promptEvalDurationNs + r.stats.evalDurationNs);
  assert.ok(r.stats.evalDurationNs > 0 && r.stats.promptEvalDurationNs > 0);
  assert.ok(engine.isLoaded("endless"));
});

test("a model that emits end-of-generation stops with reason stop", async () => {
  const r = await collect(engine.generate(request(normal, chat("hi"), { num_predict: 400, seed: 1 })));
  assert.equal(r.stats.doneReason, "stop");
  assert.ok(r.stats.evalCount < 400);
});

test("raw prompts are tokenized verbatim (BOS + text)", async () => {
  const prompt = "raw text, no template";
  const r = await collect(engine.generate(request(endless, { kind: "prompt", prompt, raw: true }, { num_predict: 3 })));
  assert.equal(r.stats.promptEvalCount, (await engine.countTokens(endless, prompt)) + 1);
  assert.equal(r.stats.evalCount, 3);
});

test("a prompt without template goes through the chat template as a user turn", async () => {
  const viaPrompt = await collect(
    engine.generate(request(endless, { kind: "prompt", prompt: "same words", system: "sys" }, { num_predict: 2 })),
  );
  const viaChat = await collect(
    engine.generate(
      request(
        endless,
        {
          kind: "chat",
          messages: [
            { role: "system", content: "sys" },
            { role: "user", content: "same words" },
          ],
        },
        { num_predict: 2 },
      ),
    ),
  );
  assert.equal(viaPrompt.stats.promptEvalCount, viaChat.stats.promptEvalCount);
  const raw = await engine.countTokens(endless, "same words");
  assert.ok(viaPrompt.stats.promptEvalCount > raw + 5, "ChatML framing adds tokens");
});

test("a TEMPLATE override is rendered with the injected renderer (chat and prompt)", async () => {
  const templated = specFor(endless.modelPath, "templated", { template: "{{ .System }}|{{ .Prompt }}", system: "SYS" });
  const r = await collect(engine.generate(request(templated, chat("question"), { num_predict: 2 })));
  assert.equal(r.stats.promptEvalCount, (await engine.countTokens(templated, "SYS|question")) + 1);
  const p = await collect(
    engine.generate(
      request(endless, { kind: "prompt", prompt: "Q", template: "{{ .System }}>>{{ .Prompt }}" }, { num_predict: 2 }),
    ),
  );
  assert.equal(p.stats.promptEvalCount, (await engine.countTokens(endless, ">>Q")) + 1);
});

test("seed + temperature 0 is repeatable", async () => {
  const opts = { num_predict: 24, temperature: 0, seed: 7 };
  const a = await collect(engine.generate(request(endless, chat("repeat me"), opts)));
  const b = await collect(engine.generate(request(endless, chat("repeat me"), opts)));
  assert.equal(a.text, b.text);
  assert.ok(a.text.length > 0);
});

test("stop strings end generation and are excluded from the output", async () => {
  const opts = { num_predict: 40, temperature: 0 };
  const full = await collect(engine.generate(request(endless, chat("stop test"), opts)));
  const ascii = /[a-z]{2}/.exec(full.text.slice(5));
  assert.ok(ascii, `need two ascii letters in ${JSON.stringify(full.text)}`);
  const stop = ascii[0];
  const expected = full.text.slice(0, full.text.indexOf(stop));
  const r = await collect(engine.generate(request(endless, chat("stop test"), { ...opts, stop: [stop] })));
  assert.equal(r.text, expected);
  assert.equal(r.stats.doneReason, "stop");
  assert.ok(!r.text.includes(stop));
});

test("streamed chunks never contain partial UTF-8 (no U+FFFD from split characters)", async () => {
  const r = await collect(engine.generate(request(endless, chat("unicode"), { num_predict: 60, seed: 3 })));
  // The random model may emit invalid byte sequences; what must never happen is a chunk ending mid-character
  // that the next chunk completes: the concatenation must decode the same as the chunks did.
  for (let i = 0; i + 1 < r.chunks.length; i++) {
    assert.ok(
      !(
        r.chunks[i]!.endsWith("\uFFFD") &&
        !r.chunks[i + 1]!.startsWith("\uFFFD") &&
        (r.chunks[i]! + r.chunks[i + 1]!).normalize() !== r.chunks[i]! + r.chunks[i + 1]!
      ),
    );
  }
  assert.equal(r.stats.evalCount, 60);
});

test("a prompt longer than the context is cut from the front by default (Ollama's truncate), keeping its start", async () => {
  const r = await collect(
    engine.generate(request(endless, { kind: "prompt", prompt: "a ".repeat(600), raw: true }, { num_predict: 4 })),
  );
  // BOS + num_keep 4 kept, then the prompt's end, half of the rest of the 512 context left for the answer.
  assert.equal(r.stats.promptEvalCount, 512 - Math.floor((512 - 5) / 2));
  assert.equal(r.stats.evalCount, 4);
});

test("generation that fills the context shifts it (Ollama's shift) and goes on; shift false ends it there", async () => {
  // A prompt of 491 tokens in a context of 512: the context is full after 21 tokens of answer.
  const input = { kind: "prompt" as const, prompt: "b ".repeat(490), raw: true };
  const shifted = await collect(engine.generate(request(endless, input, { num_predict: 40 })));
  assert.equal(shifted.stats.evalCount, 40, "past the context's end");
  assert.equal(shifted.stats.doneReason, "length");
  const stopped = await collect(engine.generate(request(endless, input, { num_predict: 40 }, { shift: false })));
  assert.equal(stopped.stats.doneReason, "length");
  // The last token sampled needs no room: it is never evaluated.
  assert.equal(stopped.stats.promptEvalCount + stopped.stats.evalCount, 513, "ends where the context is full");
});

test("truncate false: a prompt longer than the context fails before streaming with the token counts", async () => {
  const itStream = engine.generate(
    request(endless, { kind: "prompt", prompt: "a ".repeat(600), raw: true }, { num_predict: 4 }, { truncate: false }),
  );
  const it = itStream[Symbol.asyncIterator]();
  await assert.rejects(
    it.next(),
    (e) =>
      isAppError(e) &&
      e.code === "CONTEXT_OVERFLOW" &&
      /prompt is too long: \d+ tokens, context length is 512/.test(e.message),
  );
});

test("format json produces parseable JSON", async () => {
  // A real model: the random tiny ones never close a JSON string.
  const smol = specFor(await smollm2Path(), "smollm2");
  const r = await collect(
    engine.generate(
      request(
        smol,
        chat("Describe a cat as a JSON object with name and age."),
        { num_predict: 200, temperature: 0 },
        { format: "json" },
      ),
    ),
  );
  assert.equal(r.stats.doneReason, "stop", `did not finish: ${r.text}`);
  assert.doesNotThrow(() => JSON.parse(r.text), r.text);
});

test("a JSON schema constrains the output to that schema", async () => {
  const schema = {
    type: "object",
    properties: { color: { enum: ["red", "green"] }, ok: { type: "boolean" } },
    required: ["color", "ok"],
  };
  const r = await collect(
    engine.generate(request(endless, chat("schema"), { num_predict: 200, seed: 2 }, { format: { schema } })),
  );
  const v = JSON.parse(r.text) as Record<string, unknown>;
  assert.ok(["red", "green"].includes(v.color as string), r.text);
  assert.equal(typeof v.ok, "boolean");
  assert.deepEqual(Object.keys(v).sort(), ["color", "ok"]);
  // The answer ends with the value (the compiled grammar then allows only newlines: they must not run to num_predict).
  assert.equal(r.stats.doneReason, "stop", JSON.stringify(r.text));
  assert.equal(r.text, r.text.trim());
});

test("draft-07 definitions and #/definitions/ references constrain the output as $defs do", async () => {
  // As pydantic v1 and zod-to-json-schema write a schema that reuses a part.
  const schema = {
    definitions: { color: { enum: ["red", "green"] } },
    type: "object",
    properties: { a: { $ref: "#/definitions/color" }, b: { $ref: "#/definitions/color" } },
    required: ["a", "b"],
  };
  const r = await collect(
    engine.generate(request(endless, chat("schema"), { num_predict: 200, seed: 3 }, { format: { schema } })),
  );
  const v = JSON.parse(r.text) as Record<string, unknown>;
  assert.deepEqual(Object.keys(v).sort(), ["a", "b"]);
  for (const k of ["a", "b"]) assert.ok(["red", "green"].includes(v[k] as string), r.text);
});

test("an invalid JSON schema is a bad request", async () => {
  const itStream = engine.generate(
    request(endless, chat("x"), { num_predict: 2 }, { format: { schema: { type: "no-such-type" } } }),
  );
  const it = itStream[Symbol.asyncIterator]();
  await assert.rejects(it.next(), (e) => isAppError(e) && e.code === "BAD_REQUEST");
});

test("images and broken templates are refused before streaming", async () => {
  const imgStream = engine.generate(
    request(endless, {
      kind: "chat",
      messages: [{ role: "user", content: "see", images: [new Uint8Array([1, 2])] }],
    }),
  );
  const img = imgStream[Symbol.asyncIterator]();
  // The error names Ollama's images list, or the image's own field where the caller's API gave one (an OpenAI part).
  await assert.rejects(
    img.next(),
    (e) =>
      isAppError(e) &&
      e.code === "BAD_REQUEST" &&
      /does not support images/.test(e.message) &&
      e.param === "messages.0.images",
  );
  const part = "messages.0.content.1.image_url";
  const images = [new Uint8Array([1, 2])];
  const fromPart = engine.generate(
    request(endless, { kind: "chat", messages: [{ role: "user", content: "see", images, imageFields: [part] }] }),
  );
  await assert.rejects(fromPart[Symbol.asyncIterator]().next(), (e) => isAppError(e) && e.param === part);
  const broken = specFor(endless.modelPath, "broken-template", { template: "{{ .Nope" });
  const failing = await makeEngine({
    renderTemplate: () => {
      throw new Error("unclosed action");
    },
  });
  try {
    const it = failing.generate(request(broken, chat("x")))[Symbol.asyncIterator]();
    await assert.rejects(
      it.next(),
      (e) => isAppError(e) && e.code === "TEMPLATE_ERROR" && e.message.includes("unclosed action"),
    );
  } finally {
    await failing.shutdown();
  }
});

test("concurrent conversations each find their own cached sequence for the follow-up, past the first free one", async () => {
  // Two sequences hold one conversation each (run together: sequences 0 and 1); each follow-up, sent alone, must land
  // on
  // its own conversation's sequence, whichever sequence is first in line, and prefill only what is new.
  const firstSteps: number[] = [];
  let expectFirst = false;
  const e = await makeEngine({
    numParallel: 2,
    metrics: {
      onDecode: (_m, batchTokens) => {
        if (expectFirst) {
          firstSteps.push(batchTokens);
          expectFirst = false;
        }
      },
    },
  });
  try {
    const opts = { num_predict: 4, temperature: 0, seed: 5 };
    // Long first turns: the cached part of a follow-up is its first turn (the random model's answer, as text, does not
    // tokenize back to the tokens it generated).
    const questions = ["the sea", "the mountains"].map((topic) =>
      `tell me everything you know about ${topic}, `.repeat(8),
    );
    await Promise.all(questions.map((q) => collect(e.generate(request(endless, chat(q), opts)))));
    for (const i of [1, 0]) {
      const followUp: GenerateRequest["input"] = {
        kind: "chat",
        messages: [
          { role: "user", content: questions[i]! },
          { role: "assistant", content: "I know a little." },
          { role: "user", content: "and then?" },
        ],
      };
      expectFirst = true;
      const r = await collect(e.generate(request(endless, followUp, { ...opts, num_predict: 2 })));
      assert.ok(
        firstSteps.at(-1)! < r.stats.promptEvalCount - 40,
        `conversation ${i}: first step of ${firstSteps.at(-1)} tokens for a ${r.stats.promptEvalCount}-token prompt`,
      );
    }
  } finally {
    await e.shutdown();
  }
});

test("a follow-up turn reuses the cached prompt prefix of its sequence and generates what a fresh sequence does", async () => {
  // One sequence, so every request lands on the same KV cache: what it holds must match what it claims to hold.
  const firstSteps: number[] = [];
  let expectFirst = false;
  const reusing = await makeEngine({
    numParallel: 1,
    metrics: {
      onDecode: (_m, batchTokens) => {
        if (expectFirst) {
          firstSteps.push(batchTokens);
          expectFirst = false;
        }
      },
    },
  });
  const fresh = await makeEngine({ numParallel: 1 });
  try {
    const opts = { num_predict: 16, temperature: 0, seed: 3 };
    const first = await collect(reusing.generate(request(endless, chat("tell me about the sea"), opts)));
    const followUp: GenerateRequest["input"] = {
      kind: "chat",
      messages: [
        { role: "user", content: "tell me about the sea" },
        { role: "assistant", content: first.text },
        { role: "user", content: "and the sky?" },
      ],
    };
    expectFirst = true;
    const reused = await collect(reusing.generate(request(endless, followUp, opts)));
    // Another conversation in between overwrites the sequence from its first differing token on.
    await collect(reusing.generate(request(endless, chat("something else entirely"), opts)));
    expectFirst = true;
    const again = await collect(reusing.generate(request(endless, followUp, opts)));
    const reference = await collect(fresh.generate(request(endless, followUp, opts)));
    assert.ok(reference.text.length > 0);
    assert.equal(reused.text, reference.text);
    assert.equal(again.text, reference.text);
    // The first decode step of each follow-up carried only the part of the prompt the cache did not hold.
    assert.equal(firstSteps.length, 2);
    assert.ok(
      firstSteps[0]! < reused.stats.promptEvalCount - 5,
      `step of ${firstSteps[0]} tokens for a ${reused.stats.promptEvalCount}-token prompt`,
    );
    assert.ok(
      firstSteps[1]! < again.stats.promptEvalCount,
      `step of ${firstSteps[1]} tokens for a ${again.stats.promptEvalCount}-token prompt`,
    );
  } finally {
    await reusing.shutdown();
    await fresh.shutdown();
  }
});
