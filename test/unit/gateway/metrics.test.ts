import assert from "node:assert/strict";
import { test } from "node:test";
import { Histogram, Registry } from "prom-client";
import { GatewayMetrics } from "../../../server/gateway/metrics.ts";

const lines = (text: string, name: string) => text.split("\n").filter((l) => l.startsWith(name) && !l.startsWith("#"));

test("per-request counts kept in plain numbers are exposed as prom-client would expose them", async () => {
  const m = new GatewayMetrics();
  const s = m.app("acme", "chat");
  assert.equal(m.app("acme", "chat"), s, "one stats object per app");
  s.count(200);
  s.count(200);
  s.count(429);
  const k = s.key("0123456789abcdef");
  k.requests += 2;
  k.prompt += 7;
  k.completion += 11;
  s.key("-").requests++;
  // The histogram, against prom-client's own for the same observations.
  const ref = new Registry();
  const h = new Histogram({
    name: "gantry_gateway_request_duration_seconds",
    help: "x",
    labelNames: ["org", "app"],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers: [ref],
  });
  for (const v of [0.0004, 0.001, 0.003, 0.2, 400]) {
    s.duration.observe(v);
    h.observe({ org: "acme", app: "chat" }, v);
  }
  const text = await m.registry.metrics();
  assert.deepEqual(
    lines(text, "gantry_gateway_request_duration_seconds"),
    lines(await ref.metrics(), "gantry_gateway_request_duration_seconds"),
  );
  assert.deepEqual(lines(text, "gantry_gateway_requests_total"), [
    'gantry_gateway_requests_total{org="acme",app="chat",code="200"} 2',
    'gantry_gateway_requests_total{org="acme",app="chat",code="429"} 1',
  ]);
  assert.deepEqual(lines(text, "gantry_gateway_usage_requests_total"), [
    'gantry_gateway_usage_requests_total{org="acme",app="chat",key_id="0123456789abcdef"} 2',
    'gantry_gateway_usage_requests_total{org="acme",app="chat",key_id="-"} 1',
  ]);
  assert.deepEqual(lines(text, "gantry_gateway_usage_tokens_total"), [
    'gantry_gateway_usage_tokens_total{org="acme",app="chat",key_id="0123456789abcdef",type="prompt"} 7',
    'gantry_gateway_usage_tokens_total{org="acme",app="chat",key_id="0123456789abcdef",type="completion"} 11',
  ]);
  assert.match(text, /# TYPE gantry_gateway_time_to_first_byte_seconds histogram/);
  assert.match(text, /# TYPE gantry_gateway_requests_total counter/);
});
