import { test } from "node:test";
import assert from "node:assert/strict";
import { StopStringMatcher } from "../../../server/engine/stop-matcher.ts";

const feed = (stops: string[], chunks: string[]) => {
  const m = new StopStringMatcher(stops);
  let out = "";
  for (const c of chunks) {
    const r = m.push(c);
    out += r.emit;
    if (r.stopped) return { out, stopped: true };
  }
  return { out: out + m.flush(), stopped: false };
};

test("text without stop strings passes through unchanged", () => {
  assert.deepEqual(feed([], ["hel", "lo"]), { out: "hello", stopped: false });
  assert.deepEqual(feed(["END"], ["hel", "lo"]), { out: "hello", stopped: false });
});

test("a stop string is excluded, with the text after it", () => {
  assert.deepEqual(feed(["END"], ["abcENDxyz"]), { out: "abc", stopped: true });
});

test("a stop string split across chunks is caught and never leaked", () => {
  const m = new StopStringMatcher(["</s>"]);
  assert.deepEqual(m.push("hi <"), { emit: "hi ", stopped: false });
  assert.deepEqual(m.push("/"), { emit: "", stopped: false });
  assert.deepEqual(m.push("s> more"), { emit: "", stopped: true });
});

test("held-back text is released when it turns out not to be a stop string", () => {
  const m = new StopStringMatcher(["STOP"]);
  assert.equal(m.push("go ST").emit, "go ");
  assert.equal(m.push("ART").emit, "START");
});

test("held text is released by flush at the end of generation", () => {
  assert.deepEqual(feed(["STOP"], ["abc ST"]), { out: "abc ST", stopped: false });
});

test("the earliest of several stop strings wins", () => {
  assert.deepEqual(feed(["bb", "a"], ["xxbba"]), { out: "xx", stopped: true });
});

test("empty stop strings are ignored", () => {
  assert.deepEqual(feed([""], ["abc"]), { out: "abc", stopped: false });
});
