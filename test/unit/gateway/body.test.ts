import assert from "node:assert/strict";
import { test } from "node:test";
import { parseBody } from "../../../server/gateway/3-route/request-body.ts";
import type { RequestBody } from "../../../server/gateway/context.ts";
import { podBody } from "../../../server/gateway/4-forward/pod-request.ts";
import { apiRoute } from "../../../server/gateway/routes.ts";

/** The body a pod gets for /api/chat, when the gateway changed it. */
const out = (body: string) => {
  const raw = Buffer.from(body);
  const r = podBody(apiRoute("/api/chat")!, parseBody(raw) as RequestBody);
  return r.payload === raw ? undefined : r.payload?.toString();
};

test("keep_alive is taken out of an Ollama body, however the key is written; everything else is kept", () => {
  assert.deepEqual(JSON.parse(out('{"model":"m","keep_alive":0,"messages":[]}')!), { model: "m", messages: [] });
  assert.deepEqual(JSON.parse(out('{"model":"m","keep\\u005falive":"1s"}')!), { model: "m" });
  assert.deepEqual(JSON.parse(out('{"keep_alive":-1,"model":"m","keep_alive":0}')!), { model: "m" });
  // Nothing to take out: the body goes on as it came, also for what is not a JSON object.
  for (const body of ['{"model":"m"}', '{"model":"caf\\u00e9"}', '{"model":', "[1]", "null", '"keep_alive"', ""])
    assert.equal(out(body), undefined, body);
});
