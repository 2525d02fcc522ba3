// Speculative decoding on the real SmolLM2-135M: with prompt-lookup drafts the greedy output is the same, token for
// token, as without them, and the drafts are verified (drafted and accepted counts in the final stats).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import type { Engine, GenerateRequest, ModelSpec } from "../../../server/engine/types.ts";
import { smollm2Path } from "../../support/models.ts";
import { collect, makeEngine, request, specFor } from "./helpers.ts";

let engine: Engine;
let model: ModelSpec;
before(async () => {
  engine = await makeEngine({ numParallel: 1 });
  model = specFor(await smollm2Path(), "smollm2");
});
after(() => engine.shutdown());

// Text that repeats itself, as a raw prompt: what prompt lookup drafts well, and a model continues with confidence
// (a decode of several tokens may round differently from one of a single token, so a near-tie could go either way).
const PROMPT = "The cat sat on the mat. The dog sat on the log. ".repeat(4) + "The cat sat";

const greedy = (draft: number, target = model, options: GenerateRequest["options"] = {}) =>
  collect(
    engine.generate(
      request(
        target,
        { kind: "prompt", prompt: PROMPT, raw: true },
        { temperature: 0, num_predict: 40, draft_ngram: draft, ...options },
        { returnTokens: true },
      ),
    ),
  );

test("greedy output with prompt-lookup drafts is the output without them", async () => {
  const plain = await greedy(0);
  const drafted = await greedy(8);
  assert.equal(plain.stats.draft, undefined);
  assert.deepEqual(drafted.stats.tokens, plain.stats.tokens);
  assert.equal(drafted.text, plain.text);
  assert.equal(drafted.stats.evalCount, plain.stats.evalCount);
  const d = drafted.stats.draft!;
  assert.ok(d.drafted > 0, "tokens were drafted");
  assert.ok(d.accepted <= d.drafted, JSON.stringify(d));
  // Again with the sequence's cache holding the earlier exchange: the same answer.
  assert.deepEqual((await greedy(8)).stats.tokens, plain.stats.tokens);
});

test("without repeat penalties the text repeats: prompt lookup drafts most of it, and every draft is accepted", async () => {
  const unpenalized = { repeat_penalty: 1 };
  const plain = await greedy(0, model, unpenalized);
  const drafted = await greedy(8, model, unpenalized);
  assert.deepEqual(drafted.stats.tokens, plain.stats.tokens);
  const d = drafted.stats.draft!;
  // The pacer starts small and grows the drafts as they are accepted.
  assert.ok(d.drafted >= 30, JSON.stringify(d));
  assert.equal(d.accepted, d.drafted);
});

test("a draft model (SmolLM2-135M drafting for itself) under the stream's repeat penalty: every draft accepted, the same output", async () => {
  const selfDrafted = specFor(model.modelPath, "smollm2-drafted", {
    draft: { name: "smollm2", digest: "sha256:draft", modelPath: model.modelPath },
  });
  const plain = await greedy(0);
  // A draft model as big as the target never pays (the pacer drafts nothing): draft_min makes it draft.
  const drafted = await greedy(0, selfDrafted, { draft_min: 4 });
  assert.deepEqual(drafted.stats.tokens, plain.stats.tokens);
  const d = drafted.stats.draft!;
  assert.ok(d.drafted >= 20, JSON.stringify(d));
  assert.equal(d.accepted, d.drafted, "the draft samples with the target's penalties (Ollama's default 1.1)");
  assert.equal((await greedy(0, selfDrafted)).stats.draft?.drafted, 0, "paced: no drafts that cannot pay");
});
