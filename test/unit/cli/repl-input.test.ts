import assert from "node:assert/strict";
import { test } from "node:test";
import { MultilineBuffer, parseReplInput } from "../../../server/cli/repl-input.ts";

test('""" blocks collect lines until closed; ordinary lines pass through', () => {
  const b = new MultilineBuffer();
  assert.equal(b.push("hello"), "hello");
  assert.equal(b.push('"""first line'), null);
  assert.equal(b.open, true);
  assert.equal(b.push(""), null);
  assert.equal(b.push('third line"""'), "first line\n\nthird line");
  assert.equal(b.open, false);
  assert.equal(b.push('"""one line"""'), "one line");
  assert.equal(b.push('/set system """You are'), null);
  assert.equal(b.push('a pirate."""'), "/set system You are\na pirate.");
  assert.equal(b.push('"""'), null);
  b.cancel();
  assert.equal(b.open, false);
  assert.equal(b.push("after cancel"), "after cancel");
});

test("slash commands", () => {
  assert.deepEqual(parseReplInput("/bye"), { kind: "bye" });
  assert.deepEqual(parseReplInput("  /BYE "), { kind: "bye" });
  assert.deepEqual(parseReplInput("/?"), { kind: "help" });
  assert.deepEqual(parseReplInput("/help"), { kind: "help" });
  assert.deepEqual(parseReplInput("/clear"), { kind: "clear" });
  assert.deepEqual(parseReplInput("/set parameter temperature 0.2"), {
    kind: "set-parameter",
    name: "temperature",
    values: ["0.2"],
  });
  assert.deepEqual(parseReplInput('/set parameter stop "<|im_end|>" "two words" x'), {
    kind: "set-parameter",
    name: "stop",
    values: ["<|im_end|>", "two words", "x"],
  });
  assert.deepEqual(parseReplInput("/set system You are terse.  Really."), {
    kind: "set-system",
    text: "You are terse.  Really.",
  });
  assert.deepEqual(parseReplInput("/set system You are\na pirate."), {
    kind: "set-system",
    text: "You are\na pirate.",
  });
  assert.deepEqual(parseReplInput("/set think"), { kind: "set-think", value: true });
  assert.deepEqual(parseReplInput("/set think high"), { kind: "set-think", value: "high" });
  assert.deepEqual(parseReplInput("/set think low"), { kind: "set-think", value: "low" });
  assert.deepEqual(parseReplInput("/set think max"), { kind: "set-think", value: "max" });
  assert.deepEqual(parseReplInput("/set nothink"), { kind: "set-think", value: false });
  assert.equal(parseReplInput("/set think hard").kind, "invalid");
  for (const topic of ["info", "template", "parameters", "system", "license", "modelfile"]) {
    assert.deepEqual(parseReplInput(`/show ${topic}`), { kind: "show", topic });
  }
  assert.deepEqual(parseReplInput("/image ./cat.jpg what is this?"), {
    kind: "image",
    path: "./cat.jpg",
    text: "what is this?",
  });
});

test("messages, blanks and mistakes", () => {
  assert.deepEqual(parseReplInput("why is the sky blue?"), { kind: "message", text: "why is the sky blue?" });
  assert.deepEqual(parseReplInput("   "), { kind: "empty" });
  for (const bad of [
    "/set parameter temperature",
    "/set parameter",
    "/set system",
    "/set foo bar",
    "/show",
    "/show nonsense",
    "/image",
    "/frobnicate",
  ]) {
    assert.equal(parseReplInput(bad).kind, "invalid", bad);
  }
  assert.match((parseReplInput("/frobnicate") as { message: string }).message, /unknown command "\/frobnicate"/);
});
