import { test } from "node:test";
import assert from "node:assert/strict";
import type { Token } from "node-llama-cpp";
import {
  fitPrompt,
  fromTurn,
  keptTokens,
  shiftDiscard,
  shiftedMaxTokens,
  truncateTokens,
  type FitOptions,
} from "../../../server/engine/fit-prompt.ts";
import type { BuiltPrompt } from "../../../server/engine/prompt.ts";
import type { ChatMessage, PromptInput } from "../../../server/engine/types.ts";
import { isAppError } from "../../../server/common/errors.ts";

const BOS = 1 as Token;
const range = (from: number, n: number): Token[] => Array.from({ length: n }, (_, i) => (from + i) as Token);
/** A "template" that spends 10 tokens per message after a BOS. */
const build = (input: PromptInput): BuiltPrompt => {
  const tokens: Token[] = [BOS];
  if (input.kind === "chat") input.messages.forEach((m, i) => tokens.push(...range(100 * (i + 1), 10)));
  else tokens.push(...range(1000, input.prompt.length));
  return { tokens, stopStrings: [] };
};
const on: FitOptions = { truncate: true, numKeep: 4, bos: BOS };
const msgs = (roles: string[]): ChatMessage[] => roles.map((role, i) => ({ role, content: `m${i}` }));

test("a prompt that fits is left as it is", () => {
  const p = fitPrompt(build, { kind: "prompt", prompt: "x".repeat(50) }, 64, on);
  assert.equal(p.tokens.length, 51);
});

test("truncate off: a prompt with no room left for an answer is CONTEXT_OVERFLOW with the counts", () => {
  assert.throws(
    () => fitPrompt(build, { kind: "prompt", prompt: "x".repeat(63) }, 64, { ...on, truncate: false }),
    (e) => isAppError(e) && e.code === "CONTEXT_OVERFLOW" && /64 tokens, context length is 64/.test(e.message),
  );
});

test("a long prompt keeps the BOS and num_keep tokens, then the end, leaving half the rest of the context free", () => {
  const p = fitPrompt(build, { kind: "prompt", prompt: "x".repeat(200) }, 64, on);
  // keep = 1 + 4; limit = 64 - floor((64 - 5) / 2) = 35
  assert.equal(p.tokens.length, 35);
  assert.deepEqual(p.tokens.slice(0, 5), [BOS, ...range(1000, 4)]);
  assert.equal(p.tokens.at(-1), 1000 + 199, "the prompt's end is kept");
});

test("a chat drops its oldest turns first, keeping the system messages and the last turns", () => {
  const input: PromptInput = {
    kind: "chat",
    messages: msgs(["system", "user", "assistant", "user", "assistant", "user"]),
  };
  // 1 + 10 per message: 61 tokens; a context of 40 holds 3 messages (31 tokens).
  const p = fitPrompt(build, input, 40, on);
  assert.equal(p.tokens.length, 31);
  assert.deepEqual(
    fromTurn(input.messages, 4).map((m) => m.content),
    ["m0", "m4", "m5"],
  );
});

test("a last message longer than the context alone is cut at the token level", () => {
  const p = fitPrompt(build, { kind: "chat", messages: msgs(["user", "user"]) }, 8, on);
  assert.ok(p.tokens.length < 8);
  assert.equal(p.tokens[0], BOS);
});

test("num_keep -1 keeps the whole prompt's start up to the context; the BOS counts only when it is there", () => {
  assert.equal(keptTokens(-1, range(5, 100), BOS, 64), 63);
  assert.equal(keptTokens(4, [BOS, ...range(5, 10)], BOS, 64), 5);
  assert.equal(keptTokens(4, range(5, 10), BOS, 64), 4);
  assert.deepEqual(truncateTokens(range(0, 10), 2, 100), range(0, 10));
});

test("a context shift drops half of what follows the kept tokens (llama-server's n_discard)", () => {
  assert.equal(shiftDiscard(512, 5), 253);
  assert.equal(shiftDiscard(5, 5), 0);
});

test("with context shifts an answer without num_predict stops after ten contexts, as Ollama's; a smaller limit stays", () => {
  assert.equal(shiftedMaxTokens(undefined, 512), 5120);
  assert.equal(shiftedMaxTokens(100_000, 512), 5120);
  assert.equal(shiftedMaxTokens(64, 512), 64);
});
