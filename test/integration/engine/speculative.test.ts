// Speculative decoding on the real SmolLM2-135M: with prompt-lookup drafts the greedy output is the same, token for
// token, as without them, and the drafts are verified (drafted and accepted counts in the final stats).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import type { Engine, ModelSpec } from "../../../server/engine/types.ts";
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

const greedy = (draft: number, target = model) =>
  collect(
    engine.generate(
      request(
        target,
        { kind: "prompt", prompt: PROMPT, raw: true },
        { temperature: 0, num_predict: 40, draft_ngram: draft },
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
  assert.ok(d.accepted > 0 && d.accepted <= d.drafted, JSON.stringify(d));
  // Again with the sequence's cache holding the earlier exchange: the same answer.
  assert.deepEqual((await greedy(8)).stats.tokens, plain.stats.tokens);
});

test("greedy output with a draft model (SmolLM2-135M drafting for itself) is the output without it", async () => {
  const plain = await greedy(0);
  const drafted = await greedy(
    0,
    specFor(model.modelPath, "smollm2-drafted", {
      draft: { name: "smollm2", digest: "sha256:draft", modelPath: model.modelPath },
    }),
  );
  assert.deepEqual(drafted.stats.tokens, plain.stats.tokens);
  const d = drafted.stats.draft!;
  assert.ok(d.drafted > 0 && d.accepted > 0 && d.accepted <= d.drafted, JSON.stringify(d));
});
