// Burst admission over HTTP: requests arriving together are prefilled in one decode step, also when one of them comes
// on a connection that was accepted but had not sent its request yet when the first one reached its prompt step.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import { createModel, startTestServer, type TestServer } from "../../support/server.ts";
import { tinyModelPath } from "../../support/models.ts";

let srv: TestServer;
before(async () => {
  // A wait longer than any machine needs (the 50 ms default bounds it): the test waits for events, not for time.
  srv = await startTestServer({ env: { GANTRY_NUM_PARALLEL: "2", GANTRY_ARRIVAL_WAIT_MS: "10000" } });
  await createModel(srv.url, "burst", await tinyModelPath({ controlLogit: -8 }));
  // Loaded before the burst, so the two requests only wait for each other.
  await fetch(`${srv.url}/api/generate`, {
    method: "POST",
    body: JSON.stringify({ model: "burst", prompt: "warm", stream: false, options: { num_predict: 1 } }),
  });
});
after(async () => {
  await srv?.stop();
});

async function decodeSteps(): Promise<number> {
  const text = await (await fetch(`${srv.url}/metrics`)).text();
  return Number(/^gantry_decode_steps_total\{model="burst:latest"\} (\d+)$/m.exec(text)?.[1] ?? 0);
}

/** A raw HTTP/1.1 request on an already connected socket; resolves with the response's body once the server closes. */
function sendOn(socket: net.Socket, body: object): Promise<string> {
  const json = JSON.stringify(body);
  let out = "";
  socket.setEncoding("utf8");
  socket.on("data", (d: string) => {
    out += d;
  });
  const done = new Promise<string>((resolve) => socket.once("close", () => resolve(out)));
  socket.write(
    `POST /api/generate HTTP/1.1\r\nHost: gantry\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\nConnection: close\r\n\r\n${json}`,
  );
  return done;
}

test("a request on a connection accepted a moment earlier is prefilled with the first one, not after it", async () => {
  const before = await decodeSteps();
  const late = net.connect(Number(new URL(srv.url).port), "127.0.0.1");
  await new Promise((r) => late.once("connect", r));
  const body = (prompt: string) => ({
    model: "burst",
    prompt,
    stream: false,
    options: { num_predict: 3, temperature: 0 },
  });
  const first = fetch(`${srv.url}/api/generate`, { method: "POST", body: JSON.stringify(body("the first one")) });
  // Long enough for the first request to reach its prompt step on its own, most likely; the wait above holds it there.
  await new Promise((r) => setTimeout(r, 15));
  const second = sendOn(late, body("the second one"));
  const [a, b] = await Promise.all([first.then((r) => r.json() as Promise<{ eval_count: number }>), second]);
  assert.equal(a.eval_count, 3);
  assert.match(b, /^HTTP\/1\.1 200/);
  assert.match(b, /"eval_count":3/);
  // One step prefills both prompts (and yields their first tokens), two more generate the rest: 3. The first prompt
  // alone would make it 4 (its prompt, then its tokens alongside the second's prompt and tokens, one step behind).
  assert.equal((await decodeSteps()) - before, 3);
});
