import { test } from "node:test";
import assert from "node:assert/strict";
import { TokenTextStream } from "../../../server/engine/token-text-stream.ts";

// Byte-level "tokenizer": token = byte value; decoding as a real detokenizer does (invalid/incomplete → U+FFFD).
const decode = (tokens: readonly number[]): string => new TextDecoder().decode(Uint8Array.from(tokens));
const bytes = (s: string): number[] => [...new TextEncoder().encode(s)];

function streamAll(tokens: number[]): string[] {
  const s = new TokenTextStream((t) => decode(t));
  const out = tokens.map((t) => s.push(t));
  out.push(s.flush());
  return out.filter((x) => x !== "");
}

test("multi-byte characters split across tokens are emitted whole", () => {
  const chunks = streamAll(bytes("añ日😀b"));
  assert.equal(chunks.join(""), "añ日😀b");
  for (const c of chunks) assert.ok(!c.includes("\uFFFD"), `fragment ${JSON.stringify(c)}`);
  assert.ok(chunks.includes("日") && chunks.includes("😀"));
});

test("an incomplete character at the very end is dropped, not emitted as U+FFFD", () => {
  const chunks = streamAll([...bytes("ok"), ...bytes("日").slice(0, 2)]);
  assert.deepEqual(chunks, ["o", "k"]);
});

test("invalid bytes that can never complete are emitted after a bounded wait", () => {
  // A lone continuation byte followed by ASCII: the text is genuinely invalid, so it must not block the stream.
  const text = streamAll([0x80, ...bytes("abcd")]).join("");
  assert.equal(text, "\uFFFDabcd");
});

test("the detokenizer receives the preceding tokens as context", () => {
  const seen: number[][] = [];
  const s = new TokenTextStream((t, last) => {
    seen.push([...last]);
    return decode(t);
  });
  s.push(65);
  s.push(66);
  s.push(67);
  assert.deepEqual(seen, [[], [65], [65, 66]]);
});
