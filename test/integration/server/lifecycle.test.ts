// Operability as a pod or a laptop user sees it: /health while a model loads, a failed preload, graceful SIGTERM,
// the Prometheus metrics, CORS.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createModel, startTestServer } from "../../support/server.ts";
import { benchModelPath, tinyModelPath } from "../../support/models.ts";

test("/health answers 503 while the --model loads, then 200", async () => {
  // /health is asked every 5 ms from the start: the first answer comes while the 250 MB file is still being hashed
  // (a tenth of a second even on the fastest machine) and loaded, not up to 100 ms after the server listens.
  const srv = await startTestServer({
    args: ["--model", await benchModelPath("250m")],
    waitReady: false,
    pollMs: 5,
  });
  try {
    const seen: Array<{ status: number; body: { status: string } }> = [];
    const deadline = Date.now() + 60_000;
    for (;;) {
      const r = await fetch(`${srv.url}/health`);
      seen.push({ status: r.status, body: (await r.json()) as { status: string } });
      if (r.status === 200) break;
      assert.ok(Date.now() < deadline, "model never became ready");
      await new Promise((res) => setTimeout(res, 5));
    }
    assert.equal(seen[0]!.status, 503, "first answer while loading");
    assert.equal(seen[0]!.body.status, "loading");
    assert.deepEqual(seen.at(-1)!.body, { status: "ok" });
  } finally {
    await srv.stop();
  }
});

test("/health stays 503 with the reason when the --model cannot be loaded", async () => {
  const srv = await startTestServer({ args: ["--model", "no-such-model:1b"], waitReady: false });
  try {
    let r: Response;
    const deadline = Date.now() + 30_000;
    while (
      (r = await fetch(`${srv.url}/health`)) &&
      ((await r.clone().json()) as { status: string }).status === "loading"
    ) {
      assert.ok(Date.now() < deadline);
      await new Promise((res) => setTimeout(res, 20));
    }
    assert.equal(r.status, 503);
    const body = (await r.json()) as { status: string; error: string };
    assert.equal(body.status, "failed");
    assert.match(body.error, /no-such-model/);
  } finally {
    await srv.stop();
  }
});

test("SIGTERM (even repeated) lets a running stream finish, then the process exits 0", async () => {
  // 2,000 tokens: still generating when the signals arrive on a fast machine (not 40, done before the signal there),
  // and done well within the shutdown deadline on a slow one.
  const srv = await startTestServer({ env: { GANTRY_SHUTDOWN_TIMEOUT: "120s" } });
  await createModel(srv.url, "babbler", await tinyModelPath({ controlLogit: -8, contextLength: 131_072 }));
  const res = await fetch(`${srv.url}/api/generate`, {
    method: "POST",
    body: JSON.stringify({ model: "babbler", prompt: "go", options: { num_predict: 2000, num_ctx: 4096 } }),
  });
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let text = (await reader.read()).value ?? "";
  srv.proc.kill("SIGTERM");
  await new Promise((r) => setTimeout(r, 50));
  srv.proc.kill("SIGTERM"); // supervisors repeat it; the shutdown stays graceful
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    text += value;
  }
  const last = JSON.parse(text.trim().split("\n").at(-1)!) as { done: boolean; eval_count: number };
  assert.equal(last.done, true);
  assert.equal(last.eval_count, 2000, "the request in flight was completed");
  assert.equal(await srv.stop(), 0);
  await assert.rejects(fetch(`${srv.url}/health`), "no longer listening");
});

test("SIGTERM answers requests still generating at the shutdown deadline (503 or an error line), then exits 0", async () => {
  // Never ends and has room for 131,072 tokens: still generating when the deadline passes, however fast the machine.
  // The server's default context is that long too, so the /v1 request (no num_ctx) may be the one that loads it.
  const srv = await startTestServer({ env: { GANTRY_SHUTDOWN_TIMEOUT: "1s", GANTRY_CONTEXT_LENGTH: "131072" } });
  await createModel(srv.url, "endless", await tinyModelPath({ controlLogit: -8, contextLength: 131_072 }));
  const options = { num_predict: -1 };
  const post = (p: string, body: object) => fetch(srv.url + p, { method: "POST", body: JSON.stringify(body) });
  const native = post("/api/generate", { model: "endless", prompt: "go", stream: false, options });
  const openai = post("/v1/chat/completions", {
    model: "endless",
    messages: [{ role: "user", content: "go" }],
    max_tokens: 100_000,
  });
  const streaming = await post("/api/generate", { model: "endless", prompt: "go", options });
  const reader = streaming.body!.pipeThrough(new TextDecoderStream()).getReader();
  let streamed = (await reader.read()).value ?? "";
  for (;;) {
    const metrics = await (await fetch(`${srv.url}/metrics`)).text();
    if (/^gantry_busy_sequences\{model="endless:latest"\} 3$/m.test(metrics)) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  srv.proc.kill("SIGTERM");
  const [a, b] = await Promise.all([native, openai]);
  assert.equal(a.status, 503);
  assert.match(((await a.json()) as { error: string }).error, /shutting down/);
  assert.equal(b.status, 503);
  const e = ((await b.json()) as { error: { message: string; type: string } }).error;
  assert.match(e.message, /shutting down/);
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    streamed += value;
  }
  assert.match(
    streamed.trim().split("\n").at(-1)!,
    /^\{"error":"the server is shutting down/,
    "the stream ends with an error line",
  );
  assert.equal(await srv.stop(), 0);
});

/** Sum of a counter's samples (all label sets, or those whose labels include `labels`) in a /metrics text. */
function counter(text: string, name: string, labels = ""): number {
  return text
    .split("\n")
    .filter((l) => l.startsWith(`${name}{`) && l.includes(labels))
    .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
}

test("metrics and CORS", async () => {
  const srv = await startTestServer();
  try {
    await createModel(srv.url, "tiny", await tinyModelPath());
    await fetch(`${srv.url}/api/generate`, {
      method: "POST",
      // Greedy: the same 5 tokens every run (sampled, this model ends early now and then: the counts below are exact).
      body: JSON.stringify({ model: "tiny", prompt: "hi", stream: false, options: { num_predict: 5, temperature: 0 } }),
    });
    const metrics = await (await fetch(`${srv.url}/metrics`)).text();
    for (const name of [
      "gantry_http_requests_total",
      "gantry_prompt_tokens_total",
      "gantry_generated_tokens_total",
      "gantry_time_to_first_token_seconds",
      "gantry_tokens_per_second",
      "gantry_queue_depth",
      "gantry_busy_sequences",
      "gantry_loaded_models",
      "gantry_model_load_seconds",
      "gantry_decode_steps_total",
      "gantry_decode_seconds_total",
      "gantry_decode_idle_seconds_total",
      "gantry_decode_js_busy_seconds_total",
      "gantry_batch_fill_ratio",
      "gantry_in_flight_requests",
      // the process's own (prom-client defaults): CPU, memory, event-loop lag
      "gantry_process_process_cpu_seconds_total",
      "gantry_process_process_resident_memory_bytes",
      "gantry_process_nodejs_eventloop_lag_p99_seconds",
    ]) {
      assert.match(metrics, new RegExp(`^# TYPE ${name} `, "m"), name);
    }
    assert.match(metrics, /^gantry_generated_tokens_total\{model="tiny:latest"\} 5$/m);
    // One stream: one decode step per generated token (the prompt's step yields the first), each carrying the stream.
    assert.match(metrics, /^gantry_decode_steps_total\{model="tiny:latest"\} 5$/m);
    assert.match(metrics, /^gantry_batch_fill_ratio_count\{model="tiny:latest"\} 5$/m);
    assert.match(metrics, /^gantry_batch_fill_ratio_sum\{model="tiny:latest"\} 5$/m);
    assert.match(metrics, /^gantry_http_requests_total\{route="\/api\/generate",method="POST",status="200"\} 1$/m);
    // Inline decode (the CPU's default): its calls are timed too.
    assert.ok(counter(metrics, "gantry_decode_seconds_total") > 0, "decode seconds");
    const local = await fetch(`${srv.url}/api/tags`, { headers: { Origin: "http://localhost:3000" } });
    assert.equal(local.headers.get("access-control-allow-origin"), "http://localhost:3000");
    const evil = await fetch(`${srv.url}/api/tags`, { headers: { Origin: "https://evil.example" } });
    assert.equal(evil.headers.get("access-control-allow-origin"), null);
    const preflight = await fetch(`${srv.url}/v1/chat/completions`, {
      method: "OPTIONS",
      headers: { Origin: "http://127.0.0.1:5173", "Access-Control-Request-Method": "POST" },
    });
    assert.equal(preflight.status, 204);
  } finally {
    await srv.stop();
  }
});

test("metrics: a streamed generation's decode seconds and the seconds its accelerator waited, pipelined steps", async () => {
  // The GPU's path on the CPU: steps decode on a worker, the next one started before the streams have their tokens.
  const srv = await startTestServer({ env: { GANTRY_STEP_PIPELINE: "on", GANTRY_NUM_PARALLEL: "2" } });
  try {
    // Never ends early: each stream generates all its tokens.
    await createModel(srv.url, "endless", await tinyModelPath({ controlLogit: -8 }));
    const scrape = async () => {
      const text = await (await fetch(`${srv.url}/metrics`)).text();
      return {
        steps: counter(text, "gantry_decode_steps_total"),
        pipelined: counter(text, "gantry_decode_steps_pipelined_total"),
        decode: counter(text, "gantry_decode_seconds_total"),
        generation: counter(text, "gantry_decode_seconds_total", 'call="generation"'),
        generationCalls: counter(text, "gantry_decode_calls_total", 'call="generation"'),
        jsBusy: counter(text, "gantry_decode_js_busy_seconds_total"),
        sampling: counter(text, "gantry_decode_idle_seconds_total", 'part="sampling"'),
        other: counter(text, "gantry_decode_idle_seconds_total", 'part="other"'),
      };
    };
    const before = await scrape();
    const started = performance.now();
    await Promise.all(
      ["a", "b"].map(async (prompt) => {
        const r = await fetch(`${srv.url}/api/generate`, {
          method: "POST",
          body: JSON.stringify({ model: "endless", prompt, raw: true, stream: true, options: { num_predict: 12 } }),
        });
        const lines = (await r.text()).trim().split("\n");
        assert.equal((JSON.parse(lines.at(-1)!) as { eval_count: number }).eval_count, 12);
      }),
    );
    const after = await scrape();
    const wall = (performance.now() - started) / 1000;
    const steps = after.steps - before.steps;
    const decode = after.decode - before.decode;
    const idle = after.sampling + after.other - before.sampling - before.other;
    assert.ok(steps >= 12 && after.pipelined > before.pipelined, JSON.stringify({ before, after }));
    assert.ok(decode > 0, "decode seconds");
    // Every step a generation step's call but the prompts' (one step, or two if the requests came apart).
    const generationCalls = after.generationCalls - before.generationCalls;
    assert.ok(generationCalls >= steps - 2 && generationCalls < steps, JSON.stringify({ generationCalls, steps }));
    assert.ok(after.generation - before.generation > 0 && after.generation - before.generation < decode);
    // Pipelined steps decode on a worker: the streams' JavaScript runs meanwhile, within the decodes' time.
    const jsBusy = after.jsBusy - before.jsBusy;
    assert.ok(jsBusy > 0 && jsBusy <= decode, JSON.stringify({ jsBusy, decode }));
    assert.ok(after.sampling > before.sampling && idle >= 0, "idle seconds, the rows' sampling among them");
    // Both only while the requests had work, never at once: together no more than the requests' wall time.
    assert.ok(decode + idle <= wall, JSON.stringify({ decode, idle, wall, steps }));
  } finally {
    await srv.stop();
  }
});
