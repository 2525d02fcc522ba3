// PrefixHash: the key of a request (a key the client sent, else its conversation's start, read from the request's
// parsed body by the fields of its route in the route table) and the ring (consistent hashing with bounded loads):
// table tests, and the key checked against the rule written out once more on many generated bodies.
import assert from "node:assert/strict";
import { randomInt } from "node:crypto";
import { test } from "node:test";
import { prefixKey } from "../../../server/gateway/3-route/prefix-key.ts";
import { PrefixRing } from "../../../server/gateway/3-route/prefix-ring.ts";
import { parseBody } from "../../../server/gateway/3-route/request-body.ts";
import { apiRoute } from "../../../server/gateway/routes.ts";

/** The key the gateway routes a request to `path` with this body by (as 3-route/route.ts's prefixRoute reads it). */
function keyOf(path: string, raw: Buffer | null, chars: number, session?: string): string | undefined {
  const fields = apiRoute(path)?.prefixHash;
  const body = parseBody(raw);
  return fields && body !== "too-deep" && body.json ? prefixKey(fields, body.json, chars, session) : undefined;
}

const body = (o: unknown, indent?: number) => Buffer.from(JSON.stringify(o, null, indent));
const chat = (messages: unknown[], extra: object = {}) => body({ model: "m", ...extra, messages });

test("every turn of a chat has the key of its first turn; another conversation has another", () => {
  const turn1 = [
    { role: "system", content: "be brief" },
    { role: "user", content: "hi" },
  ];
  const turn2 = [...turn1, { role: "assistant", content: "Hello!" }, { role: "user", content: "how are you?" }];
  const turn3 = [...turn2, { role: "assistant", content: "Fine." }, { role: "user", content: "bye" }];
  const keys = [turn1, turn2, turn3].map((m) => keyOf("/v1/chat/completions", chat(m), 100));
  assert.equal(keys[0], "m\nsystem:be brief\n\nhi");
  assert.deepEqual(new Set(keys).size, 1);
  assert.notEqual(keyOf("/v1/chat/completions", chat([{ role: "user", content: "hello" }]), 100), keys[0]);
  assert.notEqual(keyOf("/v1/chat/completions", body({ model: "n", messages: turn1 }), 100), keys[0], "the model");
  assert.equal(keyOf("/api/chat", chat(turn3, { stream: false, options: { temperature: 0 } }), 100), keys[0]);
});

test("the system text and the first user message are each cut at prefixCharLength characters", () => {
  const long = "a".repeat(500);
  assert.equal(keyOf("/v1/chat/completions", chat([{ role: "user", content: long }]), 10), "m\n\naaaaaaaaaa");
  // A long system prompt shared by an app's conversations does not give them all one key.
  const persona = { role: "system", content: "You are the support assistant of ACME. ".repeat(20) };
  const [a, b] = ["my order is late", "reset my password"].map((q) =>
    keyOf("/v1/chat/completions", chat([persona, { role: "user", content: q }]), 100),
  );
  assert.notEqual(a, b);
  assert.equal(a, `m\nsystem:${persona.content.slice(0, 93)}\nmy order is late`);
  assert.equal(keyOf("/v1/completions", body({ model: "m", prompt: long }), 7), "m\n\naaaaaaa");
  assert.equal(keyOf("/v1/completions", body({ model: "m", prompt: ["abc", "def"] }), 7), "m\n\nabcdef");
});

test("each API's own fields: Anthropic's system, Responses' instructions and input, Ollama's generate", () => {
  assert.equal(
    keyOf("/v1/messages", body({ model: "m", system: "sys", messages: [{ role: "user", content: "q" }] }), 100),
    "m\nsys\nq",
  );
  assert.equal(
    keyOf(
      "/v1/messages",
      body({
        model: "m",
        system: [{ type: "text", text: "sys" }],
        messages: [{ role: "user", content: [{ type: "text", text: "q" }] }],
      }),
      100,
    ),
    "m\nsys\nq",
  );
  assert.equal(keyOf("/v1/responses", body({ model: "m", instructions: "i", input: "q" }), 100), "m\ni\nq");
  assert.equal(
    keyOf(
      "/v1/responses",
      body({ model: "m", input: [{ role: "user", content: "q" }, { type: "function_call" }] }),
      100,
    ),
    "m\n\nq",
  );
  assert.equal(keyOf("/api/generate", body({ model: "m", system: "s", prompt: "p" }), 100), "m\ns\np");
});

test("images and other parts leave no text; key order, whitespace and escapes do not matter", () => {
  const image = { type: "image_url", image_url: { url: `data:image/png;base64,${"A".repeat(100_000)}` } };
  const parts = [{ role: "user", content: [image, { type: "text", text: 'say "hi"\n\u00e9\ud83d\ude00' }] }];
  const expected = 'm\n\nsay "hi"\n\u00e9\ud83d\ude00';
  assert.equal(keyOf("/v1/chat/completions", chat(parts), 100), expected);
  assert.equal(keyOf("/v1/chat/completions", chat(parts), 100), keyOf("/v1/chat/completions", chat(parts, {}), 100));
  const reordered = Buffer.from(
    '{ "messages" : [ { "content" : [ {"text":"say \\"hi\\"\\n\\u00e9\\ud83d\\ude00","type":"text"} ] , "role":"user" } ],\n "model":"m" }',
  );
  assert.equal(keyOf("/v1/chat/completions", reordered, 100), expected);
});

test("no key where the route has no conversation or the body is not JSON there", () => {
  for (const [path, b] of [
    ["/v1/models", chat([{ role: "user", content: "x" }])],
    ["/v1/embeddings", body({ model: "m", input: "x" })],
    ["/v1/chat/completions", Buffer.from('{"model":"m","messages":[{"role":"user","content":"x"')],
    ["/v1/chat/completions", Buffer.from("not json")],
    ["/v1/chat/completions", Buffer.from('["messages"]')],
    ["/v1/chat/completions", body({ model: "m", messages: [] })],
    ["/v1/chat/completions", null],
  ] as const)
    assert.equal(keyOf(path, b, 100), undefined, `${path} ${String(b)}`);
});

/** The key's rule on a parsed body, written out once more (what prefixKey must agree with). */
function expectedKey(o: { model?: string; messages: { role: string; content: unknown }[] }, chars: number): string {
  const text = (c: unknown): string =>
    typeof c === "string"
      ? c
      : Array.isArray(c)
        ? c.map((p) => (typeof p === "string" ? p : typeof p?.text === "string" ? p.text : "")).join("")
        : "";
  let lead = "",
    user: string | undefined;
  for (const m of o.messages) {
    if (m.role === "user") {
      user = text(m.content).slice(0, chars) || " ";
      break;
    }
    lead = (lead + `${m.role}:${text(m.content)}\n`).slice(0, chars);
  }
  return `${o.model ?? ""}\n${lead}\n${user ?? ""}`;
}

test("on 2,000 generated chats, the key is the rule applied to JSON.parse's result", () => {
  const alphabet = ["a", "b", " ", '"', "\\", "\n", "\u00e9", "\u4e2d", "\ud83d\ude00", "/", "\t", "\u0001"];
  const word = (n: number) => Array.from({ length: n }, () => alphabet[randomInt(alphabet.length)]).join("");
  for (let i = 0; i < 2000; i++) {
    const messages = Array.from({ length: 1 + randomInt(4) }, () => {
      const role = ["system", "user", "assistant", "tool"][randomInt(4)]!;
      const content =
        randomInt(3) === 0 ? [{ type: "text", text: word(randomInt(60)) }, { type: "x" }] : word(randomInt(80));
      return randomInt(2) ? { role, content } : { content, role, name: word(3) };
    });
    // Fields in any order: the model may come after the messages.
    const fields: Array<[string, unknown]> = [
      ["model", word(5)],
      ["messages", messages],
      ["temperature", 0.5],
    ];
    if (randomInt(2)) fields.push(["tools", [{ type: "function", function: { name: "f", parameters: {} } }]]);
    fields.sort(() => randomInt(3) - 1);
    const o = Object.fromEntries(fields) as Parameters<typeof expectedKey>[0];
    const chars = 1 + randomInt(120);
    const raw = body(o, randomInt(2) ? 2 : undefined);
    assert.equal(keyOf("/v1/chat/completions", raw, chars), expectedKey(o, chars), raw.toString());
  }
});

const ids = (n: number) => Array.from({ length: n }, (_, i) => `pod-${i}`);
const keys = (n: number) => Array.from({ length: n }, (_, i) => `conversation ${i}`);
const idle = () => 0;

test("the ring spreads keys evenly, and a key stays on its pod", () => {
  const ring = new PrefixRing(ids(3), 256);
  const counts = new Map<string, number>();
  for (const k of keys(30_000)) {
    const c = ring.pick(k, idle, 1.25)!;
    assert.equal(c.via, "first");
    counts.set(c.id, (counts.get(c.id) ?? 0) + 1);
  }
  for (const [id, n] of counts) assert.ok(Math.abs(n / 10_000 - 1) < 0.15, `${id}: ${n} of 30000`);
  assert.deepEqual(ring.pick("conversation 7", idle, 1.25), ring.pick("conversation 7", idle, 1.25));
  assert.deepEqual(
    new PrefixRing([...ids(3)].reverse(), 256).pick("conversation 7", idle, 1.25),
    ring.pick("conversation 7", idle, 1.25),
    "the same ring whatever the pods' order",
  );
});

test("a pod over meanLoadFactor × the mean load passes the key on along the ring; all over: the key's own", () => {
  const ring = new PrefixRing(ids(3), 256);
  const owned = keys(200).find((k) => ring.pick(k, idle, 1.25)!.id === "pod-0")!;
  const loads: Record<string, number> = { "pod-0": 10, "pod-1": 0, "pod-2": 0 };
  const moved = ring.pick(owned, (id) => loads[id]!, 1.25)!;
  assert.notEqual(moved.id, "pod-0");
  assert.equal(moved.via, "next");
  // Within the bound: ceil((total + 1) / pods × factor) = ceil((2 + 1) / 3 × 1.25) = 2 ≥ 0 + 1.
  assert.deepEqual(
    ring.pick(owned, (id) => ({ "pod-0": 0, "pod-1": 1, "pod-2": 1 })[id]!, 1.25),
    {
      id: "pod-0",
      via: "first",
    },
  );
  assert.deepEqual(
    ring.pick(owned, () => 1, 1),
    { id: "pod-0", via: "first" },
    "even loads: the key's own pod",
  );
  // However uneven the loads, the least loaded pod is within the bound (a key never finds every pod over it).
  for (let i = 0; i < 200; i++) {
    const loads = ids(3).map(() => randomInt(20));
    const c = ring.pick(keys(200)[i]!, (id) => loads[Number(id.slice(4))]!, 1);
    assert.ok(loads[Number(c!.id.slice(4))]! + 1 <= Math.ceil((loads.reduce((a, b) => a + b) + 1) / 3), `${loads}`);
  }
  assert.equal(new PrefixRing([], 256).pick("x", idle, 1.25), undefined);
});

test("adding a pod moves only the keys it takes over; removing one moves only its keys", () => {
  const three = new PrefixRing(ids(3), 256),
    four = new PrefixRing(ids(4), 256);
  let moved = 0;
  for (const k of keys(20_000)) {
    const before = three.pick(k, idle, 1.25)!.id,
      after = four.pick(k, idle, 1.25)!.id;
    if (before !== after) {
      moved++;
      assert.equal(after, "pod-3", "a moved key goes to the new pod");
    }
  }
  assert.ok(moved / 20_000 < 0.32 && moved / 20_000 > 0.18, `${moved} of 20000 moved (a fair share is 1/4)`);
  const two = new PrefixRing(["pod-0", "pod-2"], 256);
  for (const k of keys(5_000)) {
    const before = three.pick(k, idle, 1.25)!.id;
    if (before !== "pod-1") assert.equal(two.pick(k, idle, 1.25)!.id, before, "keys of the pods that stay stay");
  }
});
