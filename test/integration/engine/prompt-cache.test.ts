// The RAM prompt cache on the real SmolLM2 model (one sequence, so every new conversation evicts the last): an evicted
// conversation's next request is restored from host memory instead of evaluated, with the same greedy answer as cold;
// a saved state the runtime refuses (one from a context of another size) falls back to evaluating the prompt, counted.
import { test } from "node:test";
import assert from "node:assert/strict";
import { PromptCache } from "../../../server/engine/prompt-cache.ts";
import type { EngineMetricsSink } from "../../../server/engine/metrics.ts";
import { smollm2Path } from "../../support/models.ts";
import { chat, collect, makeEngine, request, specFor } from "./helpers.ts";

const GREEDY = { temperature: 0, num_predict: 12 };
const topic = (what: string, n: number) =>
  `Here are some notes about ${what}. ` +
  Array.from({ length: n }, (_, i) => `Note ${i + 1}: ${what} matters for reason number ${i + 1}.`).join(" ") +
  ` In one sentence, what are these notes about?`;

test("an evicted prompt is restored from RAM with the same greedy answer; a refused state is evaluated instead", async () => {
  const outcomes: Array<[string, number]> = [];
  const metrics: EngineMetricsSink = { onPromptCache: (_m, outcome, tokens) => outcomes.push([outcome, tokens]) };
  const cache = new PromptCache(512 * 1024 ** 2);
  const engine = await makeEngine({ threads: 1, numParallel: 1, contextLength: 1024, promptCache: cache, metrics });
  try {
    const path = await smollm2Path();
    const model = specFor(path, "smollm2");
    const run = (prompt: string, options = {}) =>
      collect(engine.generate(request(model, chat(prompt), { ...GREEDY, ...options })));
    const a = topic("rivers", 8),
      b = topic("mountains", 8);
    const cold = await run(a);
    await run(b);
    assert.equal(cache.size, 1, "the first conversation's state was saved when the second took the sequence");
    const restored = await run(a);
    assert.equal(restored.text, cold.text, "the same greedy answer from the restored state");
    assert.ok(
      restored.stats.promptCachedCount >= cold.stats.promptEvalCount - 1,
      `restored ${restored.stats.promptCachedCount} of ${cold.stats.promptEvalCount} prompt tokens`,
    );
    const hit = outcomes.find(([o]) => o === "hit");
    assert.ok(hit && hit[1] === restored.stats.promptCachedCount, JSON.stringify(outcomes));

    // A state saved by a context of 1024 tokens, holding more cells than one of 256 has: refused there.
    const long = topic("forests", 24);
    await run(long);
    await run(b);
    const longEntry = cache.list().find((e) => e.tokens.length > 256);
    assert.ok(longEntry, "the long conversation's state was saved");
    const small = specFor(path, "smollm2-small");
    const c = topic("lakes", 8);
    const smallRun = () => collect(engine.generate(request(small, chat(c), { ...GREEDY, num_ctx: 256 })));
    const smallCold = await smallRun();
    await collect(engine.generate(request(small, chat(b), { ...GREEDY, num_ctx: 256 })));
    // The small context's entry for `c` (saved when `b` took its sequence) now carries the big context's state.
    const smallEntry = cache.list().at(-1)!;
    const smallScope = smallEntry.scope;
    cache.delete(smallEntry);
    cache.add(smallScope, smallEntry.tokens, longEntry.state);
    outcomes.length = 0;
    const fallback = await smallRun();
    assert.deepEqual(
      outcomes.map(([o]) => o),
      ["failed"],
    );
    assert.equal(fallback.text, smallCold.text, "evaluated again: the same greedy answer");
    assert.equal(fallback.stats.promptCachedCount, 0);
    assert.ok(!cache.list().some((e) => e.state === longEntry.state && e.scope === smallScope), "the entry is gone");
  } finally {
    await engine.shutdown();
  }
});
