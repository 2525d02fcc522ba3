// The GPU path end to end through `gantry serve`, on the backend GANTRY_GPU names: the GPU bundle's run.sh (test/gpu/)
// runs this file with GANTRY_GPU=cuda on a GPU machine, where the whole model must be in GPU memory on the patched CUDA
// engine (no silent fall back to the CPU); `npm test` runs it on the CPU. Either way: generation with the real clients,
// concurrent requests decoded in shared steps, embeddings, and /api/ps and `gantry ps` telling where the model is.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { Ollama } from "ollama";
import OpenAI from "openai";
import { testGpu } from "../../support/engine-build.ts";
import { tinyModelPath } from "../../support/models.ts";
import { createModel, startTestServer, type TestServer } from "../../support/server.ts";
import { runOk } from "../cli/run-cli.ts";

const gpu = testGpu();
let srv: TestServer;
let openai: OpenAI;

before(async () => {
  srv = await startTestServer({ env: { GANTRY_GPU: gpu, GANTRY_NUM_PARALLEL: "4" } });
  await createModel(srv.url, "babbler", await tinyModelPath({ controlLogit: -8 }));
  openai = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: "placeholder" });
});
after(async () => {
  await srv?.stop();
});

/** The backend the engine reports in its "engine ready" log line: "cuda", … or false (the CPU). */
function engineGpu(): string | false {
  const line = srv
    .logs()
    .split("\n")
    .find((l) => l.includes('"engine ready"'));
  assert.ok(line, `no "engine ready" line in:\n${srv.logs()}`);
  return (JSON.parse(line) as { gpu: string | false }).gpu;
}

test("a chat answer streams from the model, which is where GANTRY_GPU puts it: /api/ps, gantry ps, /api/version", async () => {
  const stream = await openai.chat.completions.create({
    model: "babbler",
    messages: [{ role: "user", content: "Hello there" }],
    max_tokens: 8,
    stream: true,
  });
  let text = "";
  for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
  assert.ok(text.length > 0);

  const backend = engineGpu();
  if (gpu === "cuda") assert.equal(backend, "cuda", "GANTRY_GPU=cuda must run on CUDA, not fall back to the CPU");
  if (gpu === "off") assert.equal(backend, false);
  const { models } = (await (await fetch(`${srv.url}/api/ps`)).json()) as {
    models: Array<{ name: string; size: number; size_vram: number }>;
  };
  assert.equal(models.length, 1);
  assert.ok(models[0]!.size > 0);
  assert.equal(models[0]!.size_vram, backend === false ? 0 : models[0]!.size, "the whole model on one side");
  const ps = await runOk(["ps"], { env: { GANTRY_HOST: `127.0.0.1:${srv.port}` } });
  assert.match(ps.stdout, backend === false ? /babbler:latest.*100% CPU/ : /babbler:latest.*100% GPU/);
  // The patched engine on either side (on CUDA: the patched CPU build plus the CUDA backend module).
  const version = (await (await fetch(`${srv.url}/api/version`)).json()) as { engine: { build: string } };
  assert.equal(version.engine.build, "patched-local");
});

test("concurrent requests are decoded together, in shared steps", async () => {
  const steps = async () =>
    Number(
      /^gantry_decode_steps_total\{model="babbler:latest"\} (\d+)$/m.exec(
        await (await fetch(`${srv.url}/metrics`)).text(),
      )?.[1] ?? 0,
    );
  const ollama = new Ollama({ host: srv.url });
  const before = await steps();
  const answers = await Promise.all(
    [0, 1, 2, 3].map((i) =>
      ollama.generate({ model: "babbler", prompt: `story number ${i}`, options: { num_predict: 8, seed: i } }),
    ),
  );
  for (const a of answers) assert.equal(a.eval_count, 8);
  // Alone, each would take 8 steps (32 in all); together they share them: 8 when all arrive at once, and well under 32
  // when one joins a step or two late.
  const taken = (await steps()) - before;
  assert.ok(taken <= 16, `${taken} decode steps for 4 × 8 tokens`);
});

test("embeddings: one normalised vector per input, the same for the same text", async () => {
  const r = await openai.embeddings.create({ model: "babbler", input: ["the same text", "another", "the same text"] });
  assert.equal(r.data.length, 3);
  const [a, b, c] = r.data.map((d) => d.embedding);
  assert.equal(a!.length, 64);
  assert.ok(Math.abs(Math.hypot(...a!) - 1) < 1e-3);
  assert.deepEqual(a, c);
  assert.notDeepEqual(a, b);
});
