// The one responder: a generation that fails after its first piece ends the stream with one error line in the API's
// own shape, through the error catalogue (an internal message never reaches the client), on both APIs; the catalogue
// decides what is logged as a server fault. The engine here is a scripted fake: the real model's mid-stream error
// (shutdown deadline) is tested in test/integration/server/lifecycle.test.ts.
import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import { pino } from "pino";
import { AppError } from "../../../server/common/errors.ts";
import { createServerApp } from "../../../server/http/app.ts";
import { ServerMetrics } from "../../../server/http/metrics.ts";
import type { Engine, GenerationEvent, ModelSpec } from "../../../server/engine/types.ts";

const model: ModelSpec = {
  name: "fake:latest",
  digest: `sha256:${"0".repeat(64)}`,
  modelPath: "/nonexistent.gguf",
  parameters: {},
  messages: [],
  adapters: [],
  size: 0,
};

let failure: unknown;
const engine = {
  buildInfo: { build: "prebuilt", threadpool: false, inlineSampling: false, inlineDecode: false },
  announce: () => ({ settle: () => {} }),
  arrivalWaitMs: 0,
  running: () => [],
  async *generate(): AsyncIterable<GenerationEvent> {
    yield { type: "text", text: "Hel" };
    throw failure;
  },
} as unknown as Engine;

const logLines: string[] = [];
let url = "";
let close: () => void;
before(async () => {
  const app = createServerApp({
    logger: pino({ level: "info" }, { write: (line: string) => void logLines.push(line) }),
    engine,
    store: {
      resolve: async () => model,
      list: async () => [],
      aliasesOf: () => [],
      capabilities: async () => ["completion"],
    },
    metrics: new ServerMetrics(),
    version: "test",
    readiness: { loading: null, shuttingDown: false, failed: null },
    config: { bodyLimit: "1mb", origins: "" },
  });
  const server = app.listen(0, "127.0.0.1");
  await new Promise<void>((resolve) => server.once("listening", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  close = () => server.close();
});
after(() => close());

const post = async (path: string, body: object): Promise<string> => {
  const res = await fetch(`${url}${path}`, { method: "POST", body: JSON.stringify(body) });
  assert.equal(res.status, 200, "the headers went out before the failure");
  return res.text();
};
const ndjsonLast = (text: string) => JSON.parse(text.trim().split("\n").at(-1)!) as unknown;
const sseEvents = (text: string) =>
  text
    .split("\n\n")
    .filter((e) => e.startsWith("data: "))
    .map((e) => e.slice(6));

const cases = [
  {
    name: "an internal error: a generic message, logged as a fault",
    error: new Error("ENOENT /home/secret/model.gguf"),
    native: { error: "internal server error" },
    openai: { message: "internal server error", type: "server_error", code: "internal" },
    logged: true,
  },
  {
    name: "a deliberate 503 (shutdown): its message, not a fault",
    error: new AppError("SHUTTING_DOWN", "the server is shutting down"),
    native: { error: "the server is shutting down" },
    openai: { message: "the server is shutting down", type: "unavailable_error", code: "shutting_down" },
    logged: false,
  },
];

for (const c of cases) {
  test(`mid-stream, ${c.name}`, async () => {
    failure = c.error;
    for (const path of ["/api/generate", "/api/chat"]) {
      logLines.length = 0;
      const body = path === "/api/chat" ? { model: "fake", messages: [{ role: "user", content: "hi" }] } : {};
      const text = await post(path, { model: "fake", prompt: "hi", ...body });
      assert.match(text, /"Hel"/, `${path}: the piece before the failure went out`);
      assert.deepEqual(ndjsonLast(text), c.native, path);
      assert.equal(
        logLines.some((l) => l.includes('"request failed"')),
        c.logged,
        `${path}: logged as a fault`,
      );
    }
    for (const [path, body] of [
      ["/v1/chat/completions", { messages: [{ role: "user", content: "hi" }] }],
      ["/v1/completions", { prompt: "hi" }],
    ] as const) {
      logLines.length = 0;
      const events = sseEvents(await post(path, { model: "fake", stream: true, ...body }));
      assert.equal(events.at(-1), "[DONE]", path);
      assert.deepEqual(JSON.parse(events.at(-2)!), { error: { ...c.openai, param: null } }, path);
      assert.equal(
        logLines.some((l) => l.includes('"request failed"')),
        c.logged,
        `${path}: logged as a fault`,
      );
    }
  });
}

test("each API answers unknown paths and wrong methods in its own error shape", async () => {
  const native = await fetch(`${url}/api/nope`);
  assert.equal(native.status, 404);
  assert.deepEqual(await native.json(), { error: "GET /api/nope not found" });
  const openai = await fetch(`${url}/v1/nope`);
  assert.equal(openai.status, 404);
  assert.equal(((await openai.json()) as { error: { type: string } }).error.type, "not_found_error");
  const wrongMethod = await fetch(`${url}/v1/chat/completions`);
  assert.equal(wrongMethod.status, 405);
  assert.equal(wrongMethod.headers.get("allow"), "POST");
  assert.equal(((await wrongMethod.json()) as { error: { code: string } }).error.code, "method_not_allowed");
  const badJson = await fetch(`${url}/api/chat`, { method: "POST", body: "{" });
  assert.equal(badJson.status, 400);
  assert.match(((await badJson.json()) as { error: string }).error, /invalid JSON/);
});
