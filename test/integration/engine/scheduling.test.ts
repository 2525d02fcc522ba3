// Admission, sequence pool, abort, keep-alive, LRU eviction and num_ctx / use_mmap reloads on the real runtime (tiny
// models).
import fs from "node:fs";
import { test } from "node:test";
import assert from "node:assert/strict";
import { isAppError } from "../../../server/common/errors.ts";
import type { GenerationEvent } from "../../../server/engine/types.ts";
import { tinyModelPath } from "../../support/models.ts";
import { chat, collect, eventually, makeEngine, request, specFor } from "./helpers.ts";

const endless = async (name = "endless", seed?: number) =>
  specFor(await tinyModelPath({ controlLogit: -8, ...(seed !== undefined ? { seed } : {}) }), name);

/**
 * A stream that must still be running while a test checks something: the tiny model's 512-token context ends a
 * generation in well under a second on a fast machine, this one's 131,072 tokens do not (with an engine whose
 * contextLength is LONG_CONTEXT and num_predict -1).
 */
const LONG_CONTEXT = 131_072;
const endlessLong = async () =>
  specFor(await tinyModelPath({ controlLogit: -8, contextLength: LONG_CONTEXT }), "endless-long");

/** Resolves with the first text chunk of a stream while the stream keeps being consumed. */
function startStream(events: AsyncIterable<GenerationEvent>) {
  let first!: () => void;
  const firstText = new Promise<void>((r) => {
    first = r;
  });
  const done = collect(events, () => first());
  done.catch(() => first());
  return { firstText, done };
}

test("queue full: numParallel 1, maxQueue 0 answers SERVER_BUSY with Retry-After", async () => {
  const engine = await makeEngine({ numParallel: 1, maxQueue: 0, contextLength: LONG_CONTEXT });
  try {
    const model = await endlessLong();
    const ac = new AbortController();
    const a = startStream(engine.generate(request(model, chat("long"), { num_predict: -1 }, { signal: ac.signal })));
    await a.firstText;
    const it = engine.generate(request(model, chat("second"), { num_predict: 2 }))[Symbol.asyncIterator]();
    await assert.rejects(
      it.next(),
      (e) => isAppError(e) && e.code === "SERVER_BUSY" && e.status === 503 && e.headers["Retry-After"] === "1",
    );
    assert.equal(engine.running()[0]?.busySequences, 1);
    ac.abort();
    assert.equal((await a.done).stats.doneReason, "abort");
  } finally {
    await engine.shutdown();
  }
});

test("abort frees the sequence: a waiting request proceeds, the aborted one stops early", async () => {
  // A long context, so that "stops early" does not depend on how fast this machine generates.
  const engine = await makeEngine({ numParallel: 1, maxQueue: 4, contextLength: 16_384 });
  try {
    const model = specFor(await tinyModelPath({ controlLogit: -8, contextLength: 16_384 }), "endless-16k");
    const ac = new AbortController();
    const a = startStream(
      engine.generate(request(model, chat("long one"), { num_predict: -1 }, { signal: ac.signal })),
    );
    await a.firstText;
    const b = startStream(engine.generate(request(model, chat("waiting"), { num_predict: 3 })));
    await eventually(() => engine.running()[0]?.queued === 1, "second request queued");
    ac.abort();
    const aborted = await a.done;
    assert.equal(aborted.stats.doneReason, "abort");
    // Without the abort it would run to the end of the 16k-token context.
    assert.ok(aborted.stats.evalCount < 4096, `aborted stream kept going: ${aborted.stats.evalCount}`);
    const waited = await b.done;
    assert.equal(waited.stats.evalCount, 3);
    assert.equal(engine.running()[0]?.busySequences, 0);
  } finally {
    await engine.shutdown();
  }
});

test("an aborted request still waiting in the queue leaves it", async () => {
  const engine = await makeEngine({ numParallel: 1, maxQueue: 4, contextLength: LONG_CONTEXT });
  try {
    const model = await endlessLong();
    const holder = new AbortController();
    const a = startStream(
      engine.generate(request(model, chat("hold"), { num_predict: -1 }, { signal: holder.signal })),
    );
    await a.firstText;
    const ac = new AbortController();
    const itStream = engine.generate(request(model, chat("queued"), { num_predict: 3 }, { signal: ac.signal }));
    const it = itStream[Symbol.asyncIterator]();
    const next = it.next();
    await eventually(() => engine.running()[0]?.queued === 1, "queued");
    ac.abort();
    await assert.rejects(next, (e) => isAppError(e) && e.code === "CLIENT_CLOSED");
    assert.equal(engine.running()[0]?.queued, 0);
    holder.abort();
    await a.done;
  } finally {
    await engine.shutdown();
  }
});

test("keep_alive 0 unloads the model after the request", async () => {
  const engine = await makeEngine();
  try {
    const model = await endless();
    await collect(engine.generate(request(model, chat("once"), { num_predict: 2 }, { keepAliveMs: 0 })));
    await eventually(() => engine.running().length === 0, "model unloaded");
    assert.equal(engine.isLoaded(model.name), false);
  } finally {
    await engine.shutdown();
  }
});

test("keep_alive: a duration sets expiresAt, null keeps the model forever, unload() drops it", async () => {
  const engine = await makeEngine();
  try {
    const model = await endless();
    await collect(engine.generate(request(model, chat("x"), { num_predict: 1 }, { keepAliveMs: 60_000 })));
    const exp = engine.running()[0]!.expiresAt;
    assert.ok(exp !== null && Date.parse(exp) > Date.now() + 30_000);
    await engine.load(model, { keepAliveMs: null });
    assert.equal(engine.running()[0]!.expiresAt, null);
    assert.equal(await engine.unload(model.name), true);
    assert.equal(engine.running().length, 0);
    assert.equal(await engine.unload(model.name), false);
  } finally {
    await engine.shutdown();
  }
});

test("maxLoadedModels 1: loading another model evicts the idle one; a busy one is waited for", async () => {
  const engine = await makeEngine({ maxLoadedModels: 1 });
  try {
    const a = await endless("model-a", 1);
    const b = await endless("model-b", 2);
    await collect(engine.generate(request(a, chat("a"), { num_predict: 2 })));
    assert.deepEqual(
      engine.running().map((m) => m.name),
      ["model-a"],
    );
    await collect(engine.generate(request(b, chat("b"), { num_predict: 2 })));
    assert.deepEqual(
      engine.running().map((m) => m.name),
      ["model-b"],
    );

    // b is busy: a request for a waits until b is idle, then evicts it.
    const busy = startStream(engine.generate(request(b, chat("busy"), { num_predict: 30 })));
    await busy.firstText;
    const forA = collect(engine.generate(request(a, chat("a again"), { num_predict: 2 })));
    const finishedB = await busy.done;
    assert.equal(finishedB.stats.evalCount, 30, "the running request was not cut short by the eviction");
    const ra = await forA;
    assert.ok(ra.stats.loadDurationNs > 0, "model-a was loaded again");
    assert.deepEqual(
      engine.running().map((m) => m.name),
      ["model-a"],
    );
  } finally {
    await engine.shutdown();
  }
});

test("a different num_ctx reloads the model with that context length", async () => {
  const engine = await makeEngine();
  try {
    const model = await endless();
    await collect(engine.generate(request(model, chat("c"), { num_predict: 1, num_ctx: 256 })));
    assert.equal(engine.running()[0]!.contextLength, 256);
    const r = await collect(engine.generate(request(model, chat("c"), { num_predict: 1, num_ctx: 128 })));
    assert.equal(engine.running()[0]!.contextLength, 128);
    assert.ok(r.stats.loadDurationNs > 0);
    // Without num_ctx the server's default context (512 here) applies, as in Ollama: it reloads, then stays.
    const back = await collect(engine.generate(request(model, chat("c"), { num_predict: 1 })));
    assert.ok(back.stats.loadDurationNs > 0);
    assert.equal(engine.running()[0]!.contextLength, 512);
    const same = await collect(engine.generate(request(model, chat("c"), { num_predict: 1 })));
    assert.equal(same.stats.loadDurationNs, 0);
    // num_ctx beyond the trained context (512) is capped.
    await engine.load(model, { options: { num_ctx: 4096 } });
    assert.equal(engine.running()[0]!.contextLength, 512);
  } finally {
    await engine.shutdown();
  }
});

/** Whether this process maps the file (Linux /proc). */
const mapped = (file: string): boolean =>
  fs
    .readFileSync("/proc/self/maps", "utf8")
    .split("\n")
    .some((l) => l.endsWith(file));

test("use_mmap: on CPU the weights are read into memory unless use_mmap maps them; a different value reloads the model", async () => {
  const engine = await makeEngine();
  try {
    const model = await endless();
    await collect(engine.generate(request(model, chat("m"), { num_predict: 1 })));
    assert.equal(mapped(model.modelPath), false, "read into memory by default");
    const on = await collect(engine.generate(request(model, chat("m"), { num_predict: 1, use_mmap: true })));
    assert.ok(on.stats.loadDurationNs > 0, "reloaded");
    assert.equal(mapped(model.modelPath), true);
    // Without use_mmap the loaded model is used as it is.
    assert.equal(
      (await collect(engine.generate(request(model, chat("m"), { num_predict: 1 })))).stats.loadDurationNs,
      0,
    );
    assert.equal(mapped(model.modelPath), true);
    // The Modelfile's PARAMETER use_mmap applies to keep_alive-only loads too.
    await engine.load({ ...model, parameters: { use_mmap: false } }, {});
    assert.equal(mapped(model.modelPath), false);
  } finally {
    await engine.shutdown();
  }
});

test("8 concurrent streams on numParallel 4 all complete, decoding in shared batches", async () => {
  const fills: number[] = [];
  const engine = await makeEngine({
    numParallel: 4,
    maxQueue: 8,
    metrics: { onDecode: (_m, _b, generating) => fills.push(generating) },
  });
  try {
    const model = await endless();
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        collect(engine.generate(request(model, chat(`stream ${i}`), { num_predict: 16, seed: i }))),
      ),
    );
    for (const r of results) {
      assert.equal(r.stats.evalCount, 16);
      assert.equal(r.stats.doneReason, "length");
    }
    assert.equal(Math.max(...fills), 4, "some decode steps carried all four sequences");
    assert.equal(engine.running()[0]!.busySequences, 0);
  } finally {
    await engine.shutdown();
  }
});

test("a burst of prompts larger than the batch is one step: the shortest prompts whole in its first call, then all streams in lock step", async () => {
  const calls: Array<{ tokens: number; sequences: number; continued: boolean }> = [];
  const engine = await makeEngine({
    numParallel: 4,
    maxQueue: 4,
    metrics: { onDecode: (_m, tokens, sequences, _a, continued) => calls.push({ tokens, sequences, continued }) },
  });
  try {
    const model = await endless();
    await engine.load(model, {});
    // Shortest first in arrival order too, so the first call's prompts are the shortest however the arrivals split.
    const words = [30, 60, 100, 150];
    const n = 4;
    const results = await Promise.all(
      words.map((w, i) =>
        collect(engine.generate(request(model, chat(`${i} ${"sea ".repeat(w)}`), { num_predict: n, seed: i }))),
      ),
    );
    const prompts = results.map((r) => r.stats.promptEvalCount);
    assert.deepEqual(
      results.map((r) => r.stats.evalCount),
      [n, n, n, n],
    );
    const total = prompts.reduce((a, b) => a + b, 0);
    assert.ok(
      calls[0]!.tokens < total,
      `the burst (${total} tokens) needs more than one call; first call ${calls[0]!.tokens}`,
    );
    // The first call holds whole prompts: the k shortest, for some k ≥ 1 (never a cut prompt beside whole ones).
    const sums = prompts.map((_, k) => prompts.slice(0, k + 1).reduce((a, b) => a + b, 0));
    assert.ok(
      sums.includes(calls[0]!.tokens),
      `first call ${calls[0]!.tokens} tokens = whole prompts (${prompts.join(", ")})`,
    );
    // The rest of the burst follows in further calls of the same step, so the streams then generate together.
    const firstStep = calls.slice(
      0,
      calls.findIndex((c, i) => i > 0 && !c.continued),
    );
    assert.equal(
      firstStep.reduce((a, c) => a + c.tokens, 0),
      total,
      "every prompt decoded in the first step",
    );
    const steps = calls.filter((c) => !c.continued);
    assert.equal(steps.length, n, `one step per token position: ${JSON.stringify(calls)}`);
    assert.deepEqual(
      steps.slice(1).map((s) => [s.tokens, s.sequences]),
      Array(n - 1).fill([4, 4]),
      "every later step carries the four streams' tokens",
    );
  } finally {
    await engine.shutdown();
  }
});

test("full batches: 4 streams take one decode step per token position, each step carrying every stream", async () => {
  const steps: Array<{ sequences: number; active: number }> = [];
  const engine = await makeEngine({
    numParallel: 4,
    maxQueue: 4,
    metrics: { onDecode: (_m, _b, sequences, active) => steps.push({ sequences, active }) },
  });
  try {
    const model = await endless();
    await engine.load(model, {});
    const n = 24;
    const results = await Promise.all(
      Array.from({ length: 4 }, (_, i) =>
        collect(engine.generate(request(model, chat(`batch ${i}`), { num_predict: n, seed: i }))),
      ),
    );
    assert.deepEqual(
      results.map((r) => r.stats.evalCount),
      [n, n, n, n],
    );
    // Ideal: n steps. The prompts may start in separate steps as the requests arrive one after another.
    assert.ok(steps.length <= n + 3, `${steps.length} decode steps for ${n} positions`);
    const partial = steps.filter((s) => s.sequences < s.active).length;
    assert.ok(partial <= 3, `${partial} of ${steps.length} steps left a ready stream out`);
  } finally {
    await engine.shutdown();
  }
});

/**
 * Three greedy streams started together on sequences 0, 1, 2 in the order given; "short" stops after 2 tokens, the
 * others
 * generate 40. Returns the long streams' texts by prompt and the sequence moves made.
 */
async function threeStreams(order: string[]): Promise<{ texts: Map<string, string>; moves: number }> {
  let moves = 0;
  const engine = await makeEngine({
    numParallel: 3,
    maxQueue: 3,
    metrics: {
      onSequenceMove: (_m, ok) => {
        if (ok) moves++;
      },
    },
  });
  try {
    const model = await endless();
    await engine.load(model, {});
    const results = await Promise.all(
      order.map((p) =>
        collect(
          engine.generate(
            request(model, chat(`tell me about ${p}`), { num_predict: p === "short" ? 2 : 40, temperature: 0 }),
          ),
        ),
      ),
    );
    assert.deepEqual(
      results.map((r) => r.stats.evalCount),
      order.map((p) => (p === "short" ? 2 : 40)),
    );
    return { texts: new Map(order.map((p, i) => [p, results[i]!.text])), moves };
  } finally {
    await engine.shutdown();
  }
}

test("a stream ending between two others leaves a gap: the last one moves into it and generates exactly what it would have", async () => {
  // Short one on sequence 1: busy 0 and 2 after it, so "third" moves from 2 to 1 (its KV copied) 2 tokens in.
  const gap = await threeStreams(["first", "short", "third"]);
  // Short one on sequence 2: no gap, no move; the same work otherwise.
  const noGap = await threeStreams(["first", "third", "short"]);
  assert.equal(gap.moves, 1);
  assert.equal(noGap.moves, 0);
  assert.ok(noGap.texts.get("third")!.length > 0);
  assert.equal(gap.texts.get("third"), noGap.texts.get("third"));
  assert.equal(gap.texts.get("first"), noGap.texts.get("first"));
});

test("a request taking a sequence apart from the busy one moves next to it; the history there is kept", async () => {
  let moves = 0;
  const engine = await makeEngine({
    numParallel: 3,
    maxQueue: 3,
    metrics: { onSequenceMove: (_m, ok) => void (ok ? moves++ : assert.fail("a move failed")) },
  });
  try {
    const model = await endless();
    await engine.load(model, {});
    // Prompts sharing only the template's opening: each of the first three takes an empty sequence.
    const run = (topic: string, n: number, words = 12) =>
      collect(
        engine.generate(
          request(model, chat(`tell me about ${`${topic} `.repeat(words)}`), { num_predict: n, temperature: 0 }),
        ),
      );
    // Histories: sequence 0 short, 1 long, 2 short.
    await run("a", 4);
    const long = await run("b", 4, 40);
    await run("c", 4);
    // Two requests together lose least on 0 and 2; the second moves into place 1 (the two trade states).
    const [d, e] = await Promise.all([run("d", 20), run("e", 20)]);
    assert.equal(moves, 1);
    const again = await run("b", 4, 40);
    assert.ok(
      again.stats.promptCachedCount >= long.stats.promptEvalCount - 1,
      `the long history was kept: ${again.stats.promptCachedCount} of ${long.stats.promptEvalCount} prompt tokens cached`,
    );
    assert.equal(again.text, long.text);
    assert.equal((await run("e", 20)).text, e.text, "the moved request generated what it generates alone");
    assert.equal((await run("d", 20)).text, d.text);
  } finally {
    await engine.shutdown();
  }
});

/**
 * Four requests announced together that reach the engine ~5 ms apart (as HTTP requests sent together do); returns the
 * decode steps' fills.
 */
async function burst(): Promise<number[]> {
  const fills: number[] = [];
  const engine = await makeEngine({
    numParallel: 4,
    maxQueue: 4,
    metrics: { onDecode: (_m, _b, sequences) => fills.push(sequences) },
  });
  try {
    const model = await endless();
    await engine.load(model, {});
    const arrivals = Array.from({ length: 4 }, () => engine.announce());
    const runs = arrivals.map(async (arrival, i) => {
      await new Promise((r) => setTimeout(r, 5 * i));
      return collect(engine.generate(request(model, chat(`burst ${i}`), { num_predict: 4, seed: i }, { arrival })));
    });
    assert.deepEqual(
      (await Promise.all(runs)).map((r) => r.stats.evalCount),
      [4, 4, 4, 4],
    );
    return fills;
  } finally {
    await engine.shutdown();
  }
}

test("burst admission: requests announced together are prefilled in one decode step, not the first one alone", async () => {
  const fills = await burst();
  assert.equal(fills[0], 4, `the first decode step carried ${fills[0]} prompts`);
  assert.equal(fills.length, 4, "one step per token position");
  // Without announcements the first request's prompt usually goes alone (what the announcements are for), but whether
  // the next one, 5 ms later, joins it depends on the machine's speed: that contrast is for a benchmark, not a test.
});

test("burst admission: an announced request that never arrives delays the others only by the bound", async () => {
  const engine = await makeEngine({ numParallel: 2 });
  try {
    const stuck = engine.announce();
    const r = await collect(engine.generate(request(await endless(), chat("alone"), { num_predict: 2 })));
    assert.equal(r.stats.evalCount, 2);
    stuck.settle();
  } finally {
    await engine.shutdown();
  }
});

test("shutdown refuses new work", async () => {
  const engine = await makeEngine();
  const model = await endless();
  await engine.shutdown();
  const it = engine.generate(request(model, chat("late"), { num_predict: 1 }))[Symbol.asyncIterator]();
  await assert.rejects(it.next(), (e) => isAppError(e) && e.code === "SHUTTING_DOWN");
});

test("shutdown lets running streams finish until the deadline, then aborts them", async () => {
  const engine = await makeEngine({ numParallel: 2, contextLength: LONG_CONTEXT });
  const model = await endlessLong();
  const short = startStream(engine.generate(request(model, chat("short"), { num_predict: 5 })));
  const endlessRun = startStream(engine.generate(request(model, chat("endless"), { num_predict: -1 })));
  await Promise.all([short.firstText, endlessRun.firstText]);
  // Time enough for 4 more tokens on a loaded machine; far from enough for 131,072 on a fast one.
  await engine.shutdown({ deadlineMs: 2000 });
  assert.equal((await short.done).stats.doneReason, "length");
  assert.equal((await endlessRun.done).stats.doneReason, "abort", "still generating at the deadline");
  assert.equal(engine.running().length, 0);
});

test("maxLoadedModels 2: the least recently used idle model is the one evicted", async () => {
  const engine = await makeEngine({ maxLoadedModels: 2 });
  try {
    const [a, b, c] = [await endless("lru-a", 11), await endless("lru-b", 12), await endless("lru-c", 13)];
    await engine.load(a, {});
    await engine.load(b, {});
    await collect(engine.generate(request(a, chat("touch a"), { num_predict: 1 })));
    await engine.load(c, {});
    assert.deepEqual(
      engine
        .running()
        .map((m) => m.name)
        .sort(),
      ["lru-a", "lru-c"],
    );
  } finally {
    await engine.shutdown();
  }
});

test("a model file that cannot be loaded fails with MODEL_LOAD_FAILED before streaming", async () => {
  const engine = await makeEngine();
  try {
    const broken = specFor("/nonexistent/model.gguf", "broken");
    const it = engine.generate(request(broken, chat("x"), { num_predict: 1 }))[Symbol.asyncIterator]();
    await assert.rejects(
      it.next(),
      (e) => isAppError(e) && e.code === "MODEL_LOAD_FAILED" && e.message.includes("broken"),
    );
    assert.equal(engine.isLoaded("broken"), false);
    // The engine stays usable.
    const ok = await collect(engine.generate(request(await endless(), chat("fine"), { num_predict: 2 })));
    assert.equal(ok.stats.evalCount, 2);
  } finally {
    await engine.shutdown();
  }
});
