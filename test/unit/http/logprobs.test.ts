import { test } from "node:test";
import assert from "node:assert/strict";
import { positionLogprobs } from "../../../server/engine/native-sampler.ts";
import type { OutputTokenLogprob } from "../../../server/engine/types.ts";
import {
  logprobsRequest,
  ollamaLogprobs,
  openaiChatLogprobs,
  openaiCompletionLogprobs,
} from "../../../server/http/logprobs.ts";

test("positionLogprobs: logits minus the row's log-sum-exp; the top pairs first, then the sampled token's", () => {
  // Row logits: token 7 → 2, token 3 → 1, token 9 → 0 (sampled, asked for after the top 2).
  const logSumExp = Math.log(Math.exp(2) + Math.exp(1) + Math.exp(0));
  const p = positionLogprobs({ pairs: [7, 2, 3, 1, 9, 0], logSumExp }, 9, 2);
  assert.equal(p.token, 9);
  assert.ok(Math.abs(p.logprob - (0 - logSumExp)) < 1e-12);
  assert.deepEqual(
    p.top.map((t) => t.token),
    [7, 3],
  );
  assert.ok(Math.abs(p.top.reduce((s, t) => s + Math.exp(t.logprob), 0) + Math.exp(p.logprob) - 1) < 1e-12);
  // No alternatives asked for: the top pair only gave the maximum.
  const none = positionLogprobs({ pairs: [7, 2, 7, 2], logSumExp }, 7, 0);
  assert.deepEqual(none.top, []);
  assert.ok(Math.abs(none.logprob - (2 - logSumExp)) < 1e-12);
});

const lps: OutputTokenLogprob[] = [
  {
    token: "Hi",
    logprob: -0.5,
    bytes: [72, 105],
    topLogprobs: [
      { token: "Hi", logprob: -0.5, bytes: [72, 105] },
      { token: "Yo", logprob: -1.5, bytes: [89, 111] },
    ],
  },
  {
    token: " you",
    logprob: -0.25,
    bytes: [32, 121, 111, 117],
    topLogprobs: [{ token: " you", logprob: -0.25, bytes: [32, 121, 111, 117] }],
  },
];

test("each API's shape", () => {
  assert.deepEqual(logprobsRequest(undefined, 3), undefined);
  assert.deepEqual(logprobsRequest(true, undefined), { top: 0 });
  assert.deepEqual(ollamaLogprobs(lps, 0)[0], { token: "Hi", logprob: -0.5, bytes: [72, 105] });
  assert.deepEqual(ollamaLogprobs(lps, 2)[0]!.top_logprobs?.[1], { token: "Yo", logprob: -1.5, bytes: [89, 111] });
  const chat = openaiChatLogprobs(lps);
  assert.equal(chat.refusal, null);
  assert.equal(chat.content[1]!.top_logprobs.length, 1);
  assert.deepEqual(openaiCompletionLogprobs(lps, 10), {
    tokens: ["Hi", " you"],
    token_logprobs: [-0.5, -0.25],
    top_logprobs: [{ Hi: -0.5, Yo: -1.5 }, { " you": -0.25 }],
    text_offset: [10, 12],
  });
});
