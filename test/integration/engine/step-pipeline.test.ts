// The step pipeline (GANTRY_STEP_PIPELINE on: a stream's next token decodes on a worker while its last one is
// processed) on the real runtime against the same engine without it: the same greedy text and counts for concurrent
// streams, stop strings and num_predict ending where they do, an abort freeing its sequence for a correct next
// request, a follow-up finding its cache after a pipelined generation left a decoded token behind, and a tool call's
// lazy grammar applying from the token after its marker (a continued token's row is sampled once its stream took it).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import type { Engine, GenerateRequest } from "../../../server/engine/types.ts";
import { familyModelPath, smollm2Path, tinyModelPath } from "../../support/models.ts";
import { chat, collect, makeEngine, request, specFor } from "./helpers.ts";

let piped: Engine;
let plain: Engine;
const events = { step: 0, dropped: 0 };
let smol: ReturnType<typeof specFor>;
let endless: ReturnType<typeof specFor>;

before(async () => {
  piped = await makeEngine({
    numParallel: 4,
    contextLength: 1024,
    stepPipeline: "on",
    metrics: { onPipeline: (_m, e) => events[e]++ },
  });
  plain = await makeEngine({ numParallel: 4, contextLength: 1024, stepPipeline: "off" });
  smol = specFor(await smollm2Path(), "smollm2");
  endless = specFor(await tinyModelPath({ controlLogit: -8 }), "endless");
});
after(async () => {
  await piped.shutdown();
  await plain.shutdown();
});

const greedy = { temperature: 0, seed: 1 };
const topics = ["the sea", "a mountain", "the city at night", "an old library"];
const both = async (run: (e: Engine) => Promise<Array<{ text: string; evalCount: number; reason: string }>>) => {
  const before = events.step;
  const withPipeline = await run(piped);
  assert.ok(events.step > before, "the pipelined engine pipelined some steps");
  return { withPipeline, without: await run(plain) };
};
const outcome = async (e: Engine, req: GenerateRequest) => {
  const r = await collect(e.generate(req));
  return { text: r.text, evalCount: r.stats.evalCount, reason: r.stats.doneReason };
};

test("greedy: four concurrent streams generate the same text and counts with the pipeline as without", async () => {
  const run = (e: Engine) =>
    Promise.all(
      topics.map((t) => outcome(e, request(smol, chat(`Write about ${t}.`), { ...greedy, num_predict: 24 }))),
    );
  const { withPipeline, without } = await both(run);
  assert.deepEqual(withPipeline, without);
  assert.ok(without.every((o) => o.text.length > 0 && o.evalCount === 24));
  const m = piped.running().find((r) => r.name === "smollm2")!;
  assert.equal(m.stepPipeline, true);
  assert.equal(m.inlineDecode, false);
  assert.ok(m.decodeSteps.pipelined > 0 && m.decodeSteps.inline === 0, JSON.stringify(m.decodeSteps));
  assert.equal(plain.running().find((r) => r.name === "smollm2")!.stepPipeline, false);
});

test("stop strings and num_predict end where they do without the pipeline: same text, same eval_count", async () => {
  // A stop string from each stream's own greedy text, a few tokens in.
  const full = await Promise.all(
    topics.map((t) => outcome(plain, request(endless, chat(`stop ${t}`), { ...greedy, num_predict: 40 }))),
  );
  const stops = full.map((f) => {
    const m = /[a-z]{2}/.exec(f.text.slice(6));
    assert.ok(m, `need two ascii letters in ${JSON.stringify(f.text)}`);
    return m[0];
  });
  const dropped = events.dropped;
  const run = (e: Engine) =>
    Promise.all([
      ...topics.map((t, i) =>
        outcome(e, request(endless, chat(`stop ${t}`), { ...greedy, num_predict: 40, stop: [stops[i]!] })),
      ),
      ...[1, 2, 5].map((n) => outcome(e, request(endless, chat(`count ${n}`), { ...greedy, num_predict: n }))),
    ]);
  const { withPipeline, without } = await both(run);
  assert.deepEqual(withPipeline, without);
  assert.deepEqual(
    without.map((o) => o.reason),
    ["stop", "stop", "stop", "stop", "length", "length", "length"],
  );
  assert.deepEqual(
    without.slice(4).map((o) => o.evalCount),
    [1, 2, 5],
  );
  // A stream stopped by a stop string leaves the token decoded ahead of it (not one stopped by num_predict).
  assert.ok(events.dropped > dropped, "a stop string dropped a continuation");
});

test("a stream stopped by a stop string drops its continuation before its last text goes out: a consumer holding that text holds no other stream", async () => {
  const held = request(smol, chat("Write about the sea."), { ...greedy, num_predict: 40 });
  const full = await outcome(plain, held);
  // A stop string inside a word a few tokens in: the stopping token's own text before it is the last text out.
  const word = /[a-z]{4,}/.exec(full.text.slice(12));
  assert.ok(word, `need a word of four letters in ${JSON.stringify(full.text)}`);
  const stop = word[0].slice(1, 3);
  const withStop = { ...held, options: { ...held.options, stop: [stop] } };
  const last = await outcome(plain, withStop);
  assert.equal(last.reason, "stop");
  const dropped = events.dropped;
  const other = outcome(piped, request(smol, chat("Write about a mountain."), { ...greedy, num_predict: 40 }));
  const it = piped.generate(withStop)[Symbol.asyncIterator]();
  let text = "";
  while (text !== last.text) {
    const r = await it.next();
    assert.ok(!r.done && r.value.type !== "done", `the stream ended at ${JSON.stringify(text)}`);
    if (r.value.type === "text") text += r.value.text;
  }
  // The stream's last text is out and its consumer stops reading (a client that went quiet): its continuation was
  // dropped before, so the step decoding it does not wait for this consumer, and the other stream ends.
  assert.ok(events.dropped > dropped, "the stopped stream's continuation was dropped before its last text went out");
  const ended = await other;
  assert.equal(ended.evalCount, 40);
  await it.return?.(undefined);
  assert.equal(piped.running().find((r) => r.name === "smollm2")!.busySequences, 0);
});

test("an aborted stream frees its sequence, and the next request on it generates what a fresh sequence does", async () => {
  const one = await makeEngine({ numParallel: 1, contextLength: 1024, stepPipeline: "on" });
  try {
    const ac = new AbortController();
    let chunks = 0;
    const aborted = collect(
      one.generate(request(endless, chat("a long one"), { num_predict: -1 }, { signal: ac.signal })),
      () => {
        if (++chunks === 5) ac.abort();
      },
    );
    assert.equal((await aborted).stats.doneReason, "abort");
    assert.equal(one.running()[0]!.busySequences, 0);
    const next = await outcome(one, request(endless, chat("after the abort"), { ...greedy, num_predict: 12 }));
    const fresh = await outcome(plain, request(endless, chat("after the abort"), { ...greedy, num_predict: 12 }));
    assert.deepEqual(next, fresh);
  } finally {
    await one.shutdown();
  }
});

test("a follow-up after a pipelined generation that stopped on a stop string finds its cache and generates what a fresh sequence does", async () => {
  const firstSteps: number[] = [];
  let expectFirst = false;
  const one = await makeEngine({
    numParallel: 1,
    contextLength: 1024,
    stepPipeline: "on",
    metrics: {
      onDecode: (_m, batchTokens) => {
        if (expectFirst) firstSteps.push(batchTokens);
        expectFirst = false;
      },
    },
  });
  try {
    const question = "tell me everything you know about the sea, ".repeat(6);
    const full = await outcome(one, request(endless, chat(question), { ...greedy, num_predict: 24 }));
    const stop = /[a-z]{2}/.exec(full.text.slice(6))?.[0];
    assert.ok(stop, `need two ascii letters in ${JSON.stringify(full.text)}`);
    const first = await outcome(one, request(endless, chat(question), { ...greedy, num_predict: 24, stop: [stop] }));
    assert.equal(first.reason, "stop");
    const followUp: GenerateRequest["input"] = {
      kind: "chat",
      messages: [
        { role: "user", content: question },
        { role: "assistant", content: first.text },
        { role: "user", content: "and the sky?" },
      ],
    };
    expectFirst = true;
    const reused = await collect(one.generate(request(endless, followUp, { ...greedy, num_predict: 12 })));
    const fresh = await outcome(plain, request(endless, followUp, { ...greedy, num_predict: 12 }));
    assert.equal(reused.text, fresh.text);
    assert.ok(
      firstSteps[0]! < reused.stats.promptEvalCount - 40,
      `first step of ${firstSteps[0]} tokens for a ${reused.stats.promptEvalCount}-token prompt`,
    );
  } finally {
    await one.shutdown();
  }
});

test("a tool call the model starts by itself (lazy grammar): the same events with the pipeline as without", async () => {
  const caller = specFor(await familyModelPath("qwen2.5", { "<tool_call>": 2, "<|im_end|>": 1 }), "caller");
  const tools = {
    tools: [
      {
        name: "get_weather",
        description: "The weather in a city",
        parameters: {
          type: "object",
          properties: { city: { enum: ["Paris", "Oslo"] }, days: { type: "integer" } },
          required: ["city", "days"],
        },
      },
    ],
    choice: "auto" as const,
    parallel: false,
  };
  const run = async (e: Engine) => {
    const events = [];
    for await (const ev of e.generate(
      request(caller, chat("What is the weather in Paris?"), { num_predict: 200, seed: 7 }, { tools }),
    ))
      events.push(ev.type === "done" ? { type: "done", evalCount: ev.stats.evalCount } : ev);
    return events;
  };
  const withPipeline = await run(piped);
  const without = await run(plain);
  assert.deepEqual(withPipeline, without);
  assert.ok(
    without.some((ev) => ev.type === "tool_call"),
    "the model called a tool",
  );
});
