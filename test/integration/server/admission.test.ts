// Admission control on one sequence: a full queue answers 503 + Retry-After in both API shapes, and a client that
// disconnects frees its sequence at once.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { createModel, startTestServer, type TestServer } from "../../support/server.ts";
import { tinyModelPath } from "../../support/models.ts";

let srv: TestServer;
before(async () => {
  // The held stream must outlast the checks on a fast machine: a 131,072-token context (the tiny model's 512 tokens are
  // generated in well under a second there).
  srv = await startTestServer({
    env: { GANTRY_NUM_PARALLEL: "1", GANTRY_MAX_QUEUE: "1", GANTRY_CONTEXT_LENGTH: "131072" },
  });
  await createModel(srv.url, "babbler", await tinyModelPath({ controlLogit: -8, contextLength: 131_072 }));
});
after(async () => {
  await srv?.stop();
});

/** Starts an endless stream and resolves once the first chunk arrived. */
async function holdSequence(): Promise<AbortController> {
  const ac = new AbortController();
  const res = await fetch(`${srv.url}/api/generate`, {
    method: "POST",
    signal: ac.signal,
    body: JSON.stringify({ model: "babbler", prompt: "go on forever", options: { num_predict: -1 } }),
  });
  assert.equal(res.status, 200);
  const reader = res.body!.getReader();
  await reader.read();
  return ac;
}

async function metric(name: string): Promise<number> {
  const text = await (await fetch(`${srv.url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name}{`) && l.includes('model="babbler:latest"'));
  return line ? Number(line.split(" ").pop()) : 0;
}

test("a full queue answers 503 with Retry-After, in the Ollama and OpenAI shapes", async () => {
  const running = await holdSequence();
  const queued = new AbortController();
  const waiting = fetch(`${srv.url}/api/generate`, {
    method: "POST",
    signal: queued.signal,
    body: JSON.stringify({ model: "babbler", prompt: "me next", options: { num_predict: 2 } }),
  }).catch(() => undefined);
  // Wait until the second request is really queued.
  const deadline = Date.now() + 5000;
  while ((await metric("gantry_queue_depth")) < 1) {
    assert.ok(Date.now() < deadline, "second request never queued");
    await new Promise((r) => setTimeout(r, 20));
  }
  const native = await fetch(`${srv.url}/api/generate`, {
    method: "POST",
    body: JSON.stringify({ model: "babbler", prompt: "and me", stream: false }),
  });
  assert.equal(native.status, 503);
  assert.ok(Number(native.headers.get("retry-after")) > 0);
  assert.match(((await native.json()) as { error: string }).error, /busy/);
  const oa = await fetch(`${srv.url}/v1/chat/completions`, {
    method: "POST",
    body: JSON.stringify({ model: "babbler", messages: [{ role: "user", content: "hi" }] }),
  });
  assert.equal(oa.status, 503);
  assert.ok(Number(oa.headers.get("retry-after")) > 0);
  assert.equal(typeof ((await oa.json()) as { error: { message: string } }).error.message, "string");
  running.abort();
  queued.abort();
  await waiting;
});

test("a client disconnect frees its sequence within 1 s and the next request is served", async () => {
  const running = await holdSequence();
  assert.equal(await metric("gantry_busy_sequences"), 1);
  running.abort();
  const aborted = Date.now();
  // Timed to when the /metrics request that saw it free was sent (its own round trip is not the sequence's).
  for (;;) {
    const asked = Date.now();
    if ((await metric("gantry_busy_sequences")) === 0) break;
    assert.ok(asked - aborted < 1000, "sequence still busy 1 s after the client disconnected");
    await new Promise((r) => setTimeout(r, 10));
  }
  const res = await fetch(`${srv.url}/api/generate`, {
    method: "POST",
    body: JSON.stringify({ model: "babbler", prompt: "hi", stream: false, options: { num_predict: 3 } }),
  });
  assert.equal(res.status, 200);
  assert.match(srv.logs(), /"path":"\/api\/generate","status":499/, "the cancelled request is logged as 499");
  assert.doesNotMatch(srv.logs(), /go on forever/, "prompts are never logged");
  assert.equal(((await res.json()) as { eval_count: number }).eval_count, 3);
});
