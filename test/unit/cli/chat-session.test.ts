import assert from "node:assert/strict";
import { test } from "node:test";
import { ChatSession } from "../../../server/cli/chat-session.ts";

test("each request carries the system message, the whole history and the new turn", () => {
  const s = new ChatSession("tiny", { keepAlive: "10m" });
  const first = { role: "user" as const, content: "hi" };
  assert.deepEqual(s.request(first), { model: "tiny", messages: [first], keep_alive: "10m" });
  s.think = false;
  assert.equal(s.request(first).think, false);
  s.think = undefined;
  s.commit(first, "hello!");
  s.system = "be brief";
  const second = { role: "user" as const, content: "and?" };
  assert.deepEqual(s.request(second).messages, [
    { role: "system", content: "be brief" },
    first,
    { role: "assistant", content: "hello!" },
    second,
  ]);
  s.clear();
  assert.deepEqual(s.request(second).messages, [{ role: "system", content: "be brief" }, second]);
});

test("setParameter types values, repeats stop, and rejects bad names and values", () => {
  const s = new ChatSession("m");
  assert.equal(s.setParameter("temperature", ["0.25"]), null);
  assert.equal(s.setParameter("num_ctx", ["2048"]), null);
  assert.equal(s.setParameter("stop", ["<|im_end|>", "END"]), null);
  assert.deepEqual(s.request({ role: "user", content: "x" }).options, {
    temperature: 0.25,
    num_ctx: 2048,
    stop: ["<|im_end|>", "END"],
  });
  assert.match(s.setParameter("temperature", ["hot"]) ?? "", /expected a number/);
  assert.match(s.setParameter("num_ctx", ["1.5"]) ?? "", /expected an integer/);
  assert.match(s.setParameter("bogus", ["1"]) ?? "", /unknown parameter "bogus"/);
  assert.match(s.setParameter("temperature", ["1", "2"]) ?? "", /takes one value/);
  assert.equal(s.options.temperature, 0.25, "a rejected value leaves the old one");
  assert.equal(
    s.describeOptions(),
    [
      `${"temperature".padEnd(30)} 0.25`,
      `${"num_ctx".padEnd(30)} 2048`,
      `${"stop".padEnd(30)} "<|im_end|>"`,
      `${"stop".padEnd(30)} "END"`,
    ].join("\n"),
  );
});
