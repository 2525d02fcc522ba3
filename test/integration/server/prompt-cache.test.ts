// A conversation's earlier turns stay in its sequence's KV cache: the next turn evaluates only what is new, and says
// so (OpenAI's usage.prompt_tokens_details.cached_tokens, the final /api object's prompt_cached_count, the
// gantry_prompt_tokens_total{cached} counter), on the real SmolLM2 model with one sequence, through the openai and
// ollama clients. When the prefix was evicted (another conversation took the sequence), its state comes back from the
// RAM prompt cache instead (GANTRY_PROMPT_CACHE_RAM), counted in /metrics, and the greedy answer is the same.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { Ollama } from "ollama";
import OpenAI from "openai";
import { smollm2Path } from "../../support/models.ts";
import { createModel, freePort, spawnGantry, startTestServer, type TestServer } from "../../support/server.ts";

let srv: TestServer, openai: OpenAI, ollama: Ollama;
const MODEL = "smollm2";
const GREEDY = { temperature: 0, max_tokens: 12 };

before(async () => {
  srv = await startTestServer({ env: { GANTRY_NUM_PARALLEL: "1" } });
  await createModel(srv.url, MODEL, await smollm2Path());
  openai = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: "unused" });
  ollama = new Ollama({ host: srv.url });
});
after(() => srv?.stop());

/** gantry_prompt_tokens_total of the model, cached="true" and "false". */
async function promptCounters(): Promise<{ cached: number; evaluated: number }> {
  const text = await (await fetch(`${srv.url}/metrics`)).text();
  const value = (cached: string) =>
    Number(
      new RegExp(`^gantry_prompt_tokens_total\\{[^}]*cached="${cached}"[^}]*\\} (\\S+)$`, "m").exec(text)?.[1] ?? 0,
    );
  return { cached: value("true"), evaluated: value("false") };
}

/** A /metrics sample by its name, the first with `label` among its labels (0 when absent). */
async function cacheCounter(name: string, label = ""): Promise<number> {
  const text = await (await fetch(`${srv.url}/metrics`)).text();
  const line = text
    .split("\n")
    .find((l) => (l.startsWith(`${name}{`) || l.startsWith(`${name} `)) && l.includes(label));
  return Number(line?.split(" ").at(-1) ?? 0);
}

type Msg = OpenAI.Chat.Completions.ChatCompletionMessageParam;
const ask = (messages: Msg[]) => openai.chat.completions.create({ model: MODEL, messages, ...GREEDY });

test("the second turn evaluates only its suffix; evicted, it is restored from RAM and answers the same", async () => {
  const first: Msg[] = [{ role: "user", content: "Name three colours of the rainbow." }];
  const turn1 = await ask(first);
  assert.equal(turn1.usage?.prompt_tokens_details?.cached_tokens, 0, "a new server has nothing cached");
  const second: Msg[] = [
    ...first,
    { role: "assistant", content: turn1.choices[0]!.message.content ?? "" },
    { role: "user", content: "And two more?" },
  ];
  const before = await promptCounters();
  const turn2 = await ask(second);
  const cached = turn2.usage!.prompt_tokens_details!.cached_tokens!;
  assert.ok(
    cached >= turn1.usage!.prompt_tokens - 1,
    `turn 1's prompt is reused: ${cached} of ${turn1.usage!.prompt_tokens}`,
  );
  assert.ok(cached < turn2.usage!.prompt_tokens, "the new turn is evaluated");
  const after1 = await promptCounters();
  assert.equal(after1.cached - before.cached, cached, "the cached counter");
  assert.equal(after1.evaluated - before.evaluated, turn2.usage!.prompt_tokens - cached, "the evaluated counter");

  // Another conversation takes the only sequence: the first one's history goes to the RAM prompt cache, and comes back.
  await openai.chat.completions.create({
    model: MODEL,
    messages: [{ role: "user", content: "Write a haiku about the sea, please." }],
    ...GREEDY,
  });
  const hitsBefore = await cacheCounter("gantry_prompt_cache_requests_total", 'result="hit"');
  const again = await ask(second);
  const cachedAgain = again.usage!.prompt_tokens_details!.cached_tokens!;
  assert.ok(cachedAgain >= turn2.usage!.prompt_tokens - 1, `restored: ${cachedAgain} of ${turn2.usage!.prompt_tokens}`);
  assert.equal(again.usage!.prompt_tokens, turn2.usage!.prompt_tokens);
  assert.equal(await cacheCounter("gantry_prompt_cache_requests_total", 'result="hit"'), hitsBefore + 1);
  assert.ok((await cacheCounter("gantry_prompt_cache_bytes")) > 0, "the cache holds the states");
  assert.equal(again.choices[0]!.message.content, turn2.choices[0]!.message.content, "the same greedy answer");
});

test("/api/chat's final object counts the cached tokens in prompt_cached_count, prompt_eval_count keeps all", async () => {
  const messages = [{ role: "user", content: "What is the capital of France?" }];
  const r1 = await ollama.chat({ model: MODEL, messages, options: { temperature: 0, num_predict: 8 } });
  const r2 = await ollama.chat({
    model: MODEL,
    messages: [...messages, r1.message, { role: "user", content: "And of Italy?" }],
    options: { temperature: 0, num_predict: 8 },
  });
  const final = r2 as unknown as { prompt_cached_count: number; prompt_eval_count: number };
  assert.ok(final.prompt_cached_count >= r1.prompt_eval_count - 1, JSON.stringify(final));
  assert.ok(final.prompt_eval_count > final.prompt_cached_count, "prompt_eval_count counts the whole prompt");
  const streamed = await ollama.chat({
    model: MODEL,
    messages,
    options: { temperature: 0, num_predict: 8 },
    stream: true,
  });
  let last: Record<string, unknown> = {};
  for await (const part of streamed) last = part as unknown as Record<string, unknown>;
  assert.equal(typeof last.prompt_cached_count, "number", "the streamed final object too");
});

test("/v1/responses reports them as OpenAI does: usage.input_tokens_details.cached_tokens", async () => {
  const input = "Name a planet of the solar system.";
  const first = await openai.responses.create({ model: MODEL, input, max_output_tokens: 8, temperature: 0 });
  const again = await openai.responses.create({ model: MODEL, input, max_output_tokens: 8, temperature: 0 });
  assert.equal(again.usage?.input_tokens, first.usage?.input_tokens);
  assert.ok(
    (again.usage?.input_tokens_details.cached_tokens ?? 0) >= (first.usage?.input_tokens ?? 0) - 1,
    JSON.stringify(again.usage),
  );
});

test("a RAM prompt cache larger than the memory available is refused at start, with both numbers", async () => {
  const port = await freePort();
  const models = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-cache-ram-"));
  try {
    await assert.rejects(
      spawnGantry(
        ["serve"],
        { GANTRY_HOST: `127.0.0.1:${port}`, GANTRY_MODELS: models, GANTRY_PROMPT_CACHE_RAM: "100000gb" },
        `http://127.0.0.1:${port}/api/version`,
        (status) => status === 200,
      ),
      /exited with 1:[\s\S]*GANTRY_PROMPT_CACHE_RAM: 100000gb \(100000\.00 GiB\) is more than the memory available now \(\d+\.\d\d GiB\)/,
    );
  } finally {
    fs.rmSync(models, { recursive: true, force: true });
  }
});
