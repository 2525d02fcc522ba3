// What clients the project does not contain send and read (the Python ollama and openai SDKs, langchain-ollama,
// litellm), reproduced through the `ollama` and `openai` npm clients against a `gantry serve` process: nulls for
// absent fields, tools, think and suffix, log probabilities, push, context overflow, the small fields clients read, and
// keep_alive values beyond a Node timer's range (the server's default here is GANTRY_KEEP_ALIVE=720h).
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import type { Logprob, Ollama } from "ollama";
import type OpenAI from "openai";
import { createModel, REPO, type TestServer } from "../../support/server.ts";
import { tinyModelPath } from "../../support/models.ts";
import { startTinyServer } from "../../support/tiny-server.ts";

let srv: TestServer;
let ollama: Ollama;
let openai: OpenAI;

before(async () => {
  // "babbler" never ends on its own: its answers are exactly num_predict tokens.
  ({ srv, ollama, openai } = await startTinyServer({ GANTRY_KEEP_ALIVE: "720h" }));
});
after(async () => {
  await srv?.stop();
});

/** The error a client call fails with (it must fail). */
async function failure(p: Promise<unknown>): Promise<{ status: number; message: string; code?: string | null }> {
  try {
    await p;
  } catch (e) {
    const err = e as { status?: number; status_code?: number; message: string; code?: string | null };
    return { status: err.status ?? err.status_code ?? 0, message: err.message, code: err.code ?? null };
  }
  assert.fail("the call succeeded");
}

const user = [{ role: "user" as const, content: "hi" }];
const quiet = { num_predict: 4, temperature: 0, repeat_penalty: 1 };

describe("null means absent", () => {
  test("options with null values, as langchain's OllamaEmbeddings sends them on every call", async () => {
    const r = await ollama.embed({
      model: "tiny",
      input: "hi",
      options: { temperature: null, mirostat: null, stop: null, num_ctx: null } as never,
    });
    assert.equal(r.embeddings.length, 1);
    assert.ok(r.embeddings[0]!.length > 0);
    const g = await ollama.generate({
      model: "babbler",
      prompt: "hi",
      options: { ...quiet, top_k: null, seed: null } as never,
      format: null as never,
      system: null as never,
      images: null as never,
    });
    assert.equal(g.eval_count, 4);
  });

  test("null on optional /v1 fields, as the openai Python client sends tools=None, user=None, …", async () => {
    const r = await openai.chat.completions.create({
      model: "babbler",
      messages: [{ role: "user", content: "hi", name: null }],
      max_tokens: 3,
      user: null,
      tools: null,
      tool_choice: null,
      response_format: null,
      stream_options: null,
      stop: null,
      temperature: null,
      seed: null,
      logit_bias: null,
    } as never);
    assert.equal(r.usage?.completion_tokens, 3);
    const e = await openai.embeddings.create({
      model: "tiny",
      input: "hi",
      encoding_format: null,
      dimensions: null,
      user: null,
    } as never);
    assert.ok(e.data[0]!.embedding.length > 0);
  });
});

describe("tools, think and suffix on a model that cannot use them: 400, as Ollama answers", () => {
  const tools = [
    {
      type: "function" as const,
      function: { name: "lookup", description: "d", parameters: { type: "object", properties: {} } },
    },
  ];

  test("/v1: tools are refused unless tool_choice is none or the list is empty", async () => {
    const refused = await failure(
      openai.chat.completions.create({ model: "babbler", messages: user, max_tokens: 2, tools }),
    );
    assert.equal(refused.status, 400);
    assert.match(refused.message, /babbler:latest does not support tools/);
    const none = await openai.chat.completions.create({
      model: "babbler",
      messages: user,
      max_tokens: 2,
      tools,
      tool_choice: "none",
    });
    assert.equal(none.usage?.completion_tokens, 2);
    const empty = await openai.chat.completions.create({ model: "babbler", messages: user, max_tokens: 2, tools: [] });
    assert.equal(empty.usage?.completion_tokens, 2);
  });

  test("/api/chat: tools are refused (they used to be ignored)", async () => {
    const refused = await failure(ollama.chat({ model: "babbler", messages: user, tools, options: quiet }));
    assert.equal(refused.status, 400);
    assert.match(refused.message, /babbler:latest does not support tools/);
    const empty = await ollama.chat({ model: "babbler", messages: user, tools: [], options: quiet });
    assert.equal(empty.eval_count, 4);
  });

  test("a Modelfile TEMPLATE that renders .Tools makes /api/show claim them, and tools are taken", async () => {
    const modelfile = fs.readFileSync(path.join(REPO, "test/fixtures/modelfiles/tools.Modelfile"), "utf8");
    const template = /TEMPLATE """([\s\S]*?)"""/.exec(modelfile)![1]!;
    await createModel(srv.url, "tooly", await tinyModelPath(), { template });
    assert.deepEqual((await ollama.show({ model: "tooly" })).capabilities, ["completion", "tools"]);
    const r = await ollama.chat({ model: "tooly", messages: user, tools, options: quiet });
    assert.equal(r.done, true);
  });

  test("think and suffix are refused; think: false is fine", async () => {
    const think = await failure(ollama.chat({ model: "babbler", messages: user, think: true }));
    assert.equal(think.status, 400);
    assert.match(think.message, /babbler:latest does not support thinking/);
    assert.match(
      (await failure(ollama.generate({ model: "babbler", prompt: "hi", think: "high" }))).message,
      /thinking/,
    );
    const off = await ollama.chat({ model: "babbler", messages: user, think: false, options: quiet });
    assert.equal(off.eval_count, 4);
    const suffix = await failure(ollama.generate({ model: "babbler", prompt: "def f(", suffix: "return x" }));
    assert.equal(suffix.status, 400);
    assert.match(suffix.message, /babbler:latest does not support insert/);
    const v1 = await failure(openai.completions.create({ model: "babbler", prompt: "a", suffix: "b", max_tokens: 2 }));
    assert.equal(v1.status, 400);
    assert.match(v1.message, /does not support insert/);
  });
});

describe("logprobs", () => {
  /** The shape every API shares: the token's text and UTF-8 bytes, a log probability, alternatives best first. */
  const checkToken = (t: { token: string; logprob: number; bytes?: number[] | null }) => {
    assert.equal(typeof t.token, "string");
    assert.ok(t.logprob <= 0 && Number.isFinite(t.logprob), `logprob ${t.logprob}`);
    assert.deepEqual(t.bytes, [...Buffer.from(t.token, "utf8")]);
  };
  const checkTop = (top: Array<{ token: string; logprob: number }>, n: number) => {
    assert.equal(top.length, n);
    for (let i = 1; i < top.length; i++) assert.ok(top[i - 1]!.logprob >= top[i]!.logprob, "most likely first");
    assert.ok(top.reduce((s, t) => s + Math.exp(t.logprob), 0) <= 1 + 1e-6, "probabilities of distinct tokens");
  };

  test("/api/generate and /api/chat: one entry per output token, text and bytes, the top alternatives", async () => {
    const g = await ollama.generate({
      model: "babbler",
      prompt: "hello",
      logprobs: true,
      top_logprobs: 3,
      options: { num_predict: 6, temperature: 0, repeat_penalty: 1 },
    });
    const lps: Logprob[] = g.logprobs ?? [];
    assert.equal(lps.length, g.eval_count);
    assert.equal(lps.map((l) => l.token).join(""), g.response);
    for (const l of lps) {
      checkToken(l);
      checkTop(l.top_logprobs!, 3);
      assert.equal(l.top_logprobs![0]!.token, l.token, "greedy picks the most likely token");
      assert.equal(l.top_logprobs![0]!.logprob, l.logprob);
    }
    // Without top_logprobs: the tokens only, as Ollama answers.
    const c = await ollama.chat({ model: "babbler", messages: user, logprobs: true, options: quiet });
    assert.equal(c.logprobs?.length, 4);
    assert.equal(c.logprobs![0]!.top_logprobs, undefined);
    // Streaming: each chunk carries its tokens' log probabilities.
    let streamed = 0;
    for await (const part of await ollama.chat({
      model: "babbler",
      messages: user,
      logprobs: true,
      stream: true,
      options: quiet,
    }))
      streamed += part.logprobs?.length ?? 0;
    assert.equal(streamed, 4);
    // Not asked for: not there.
    assert.equal((await ollama.generate({ model: "babbler", prompt: "hi", options: quiet })).logprobs, undefined);
  });

  test("/v1/chat/completions: choices[].logprobs.content, streamed too", async () => {
    const r = await openai.chat.completions.create({
      model: "babbler",
      messages: user,
      max_tokens: 5,
      temperature: 0,
      logprobs: true,
      top_logprobs: 2,
    });
    const content = r.choices[0]!.logprobs!.content!;
    assert.equal(content.length, 5);
    assert.equal(content.map((t) => t.token).join(""), r.choices[0]!.message.content);
    for (const t of content) {
      checkToken(t);
      checkTop(t.top_logprobs, 2);
    }
    let streamed = 0;
    for await (const chunk of await openai.chat.completions.create({
      model: "babbler",
      messages: user,
      max_tokens: 5,
      logprobs: true,
      stream: true,
    }))
      streamed += chunk.choices[0]?.logprobs?.content?.length ?? 0;
    assert.equal(streamed, 5);
    const plain = await openai.chat.completions.create({ model: "babbler", messages: user, max_tokens: 2 });
    assert.equal(plain.choices[0]!.logprobs, null);
  });

  test("/v1/completions: the legacy shape (tokens, token_logprobs, top_logprobs, text_offset)", async () => {
    const r = await openai.completions.create({ model: "babbler", prompt: "the sky", max_tokens: 4, logprobs: 2 });
    const lp = r.choices[0]!.logprobs!;
    assert.equal(lp.tokens!.length, 4);
    // A character cut by max_tokens is dropped from the text (token-text-stream.ts); its token is still listed.
    const joined = lp.tokens!.join("");
    assert.equal(
      r.choices[0]!.finish_reason === "length" ? joined.replace(/\uFFFD+$/u, "") : joined,
      r.choices[0]!.text,
    );
    assert.equal(lp.token_logprobs!.length, 4);
    assert.equal(lp.top_logprobs!.length, 4);
    for (const top of lp.top_logprobs!) assert.equal(Object.keys(top).length, 2);
    let at = 0;
    lp.text_offset!.forEach((offset, i) => {
      assert.equal(offset, at);
      at += lp.tokens![i]!.length;
    });
  });
});

test("/api/push is a route that says pushing is not supported", async () => {
  const e = await failure(ollama.push({ model: "tiny", stream: false }));
  assert.equal(e.status, 501);
  assert.match(e.message, /pushing models is not supported/);
});

describe("a prompt longer than the context (600 tokens; the tiny model's context is 512)", () => {
  const long = "hello ".repeat(600);
  const longChat = [
    { role: "system" as const, content: "be brief" },
    { role: "user" as const, content: long },
    { role: "assistant" as const, content: "ok" },
    { role: "user" as const, content: "and now?" },
  ];

  test("is cut from the front and answered, as Ollama does by default, on /api and /v1", async () => {
    const g = await ollama.generate({ model: "babbler", prompt: long, options: quiet });
    assert.equal(g.done_reason, "length");
    assert.ok(g.prompt_eval_count < 512, `cut to ${g.prompt_eval_count}`);
    // The chat loses its oldest turns: the system message and the last turns stay.
    const c = await ollama.chat({ model: "babbler", messages: longChat, options: quiet });
    assert.ok(c.prompt_eval_count < 100, `the long turn went: ${c.prompt_eval_count} tokens`);
    const v1 = await openai.chat.completions.create({ model: "babbler", messages: longChat, max_tokens: 2 });
    assert.ok(v1.usage!.prompt_tokens < 100);
  });

  test("truncate false refuses it: 400 with the counts, context_length_exceeded on /v1", async () => {
    const native = await failure(ollama.generate({ model: "tiny", prompt: long, truncate: false } as never));
    assert.equal(native.status, 400);
    assert.match(native.message, /\d{3} tokens, context length is 512/);
    const chat = await failure(
      ollama.chat({ model: "tiny", messages: [{ role: "user", content: long }], truncate: false } as never),
    );
    assert.equal(chat.status, 400);
    const v1 = await failure(
      openai.chat.completions.create({
        model: "tiny",
        messages: [{ role: "user", content: long }],
        max_tokens: 2,
        truncate: false,
      } as never),
    );
    assert.equal(v1.status, 400);
    assert.equal(v1.code, "context_length_exceeded");
    assert.match(v1.message, /\d{3} tokens, context length is 512/);
  });

  test("/v1/responses refuses it unless truncation is auto, as OpenAI's; /v1/messages refuses it, as Anthropic's", async () => {
    const responses = await failure(openai.responses.create({ model: "tiny", input: long, max_output_tokens: 2 }));
    assert.equal(responses.status, 400);
    assert.equal(responses.code, "context_length_exceeded");
    const auto = await openai.responses.create({
      model: "babbler",
      input: long,
      max_output_tokens: 2,
      truncation: "auto",
    });
    assert.ok(auto.usage!.input_tokens < 512);
    const messages = await fetch(`${srv.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ model: "tiny", max_tokens: 2, messages: [{ role: "user", content: long }] }),
    });
    assert.equal(messages.status, 400);
    const body = (await messages.json()) as { type: string; error: { type: string; message: string } };
    assert.equal(body.error.type, "invalid_request_error");
    assert.match(body.error.message, /prompt is too long/);
  });

  test("embeddings are cut by default; truncate false answers Ollama's text", async () => {
    const cut = await ollama.embed({ model: "tiny", input: long });
    assert.equal(cut.embeddings.length, 1);
    const refused = await failure(ollama.embed({ model: "tiny", input: long, truncate: false }));
    assert.equal(refused.status, 400);
    assert.match(refused.message, /the input length exceeds the context length/);
  });
});

describe("small fields clients read", () => {
  test("/v1 chat messages carry refusal: null and annotations: []", async () => {
    const r = await openai.chat.completions.create({ model: "babbler", messages: user, max_tokens: 2 });
    const message = r.choices[0]!.message as unknown as Record<string, unknown>;
    assert.equal(message.refusal, null);
    assert.deepEqual(message.annotations, []);
  });

  test("/api/generate returns the exchange's tokens as context, and a context given is the prompt's prefix", async () => {
    const first = await ollama.generate({ model: "babbler", prompt: "hello there", options: quiet });
    const context = first.context!;
    assert.ok(context.length > first.prompt_eval_count, "prompt and answer tokens");
    assert.ok(context.every((t) => Number.isInteger(t) && t >= 0));
    const next = await ollama.generate({ model: "babbler", prompt: "and then", context, options: quiet });
    assert.ok(next.prompt_eval_count > context.length, "the context went in front of the new prompt");
    assert.deepEqual(next.context!.slice(0, context.length), context);
    const raw = await ollama.generate({ model: "babbler", prompt: "x", raw: true, options: quiet });
    assert.equal(raw.context, undefined, "raw prompts return no context (as Ollama)");
    const bad = await failure(ollama.generate({ model: "babbler", prompt: "x", context: [1, 10_000_000] }));
    assert.equal(bad.status, 400);
    assert.match(bad.message, /token id 10000000 is not in the model's vocabulary/);
  });

  test("/api/embed skips an empty input string, as Ollama does; an empty list item still gets a vector", async () => {
    assert.deepEqual((await ollama.embed({ model: "tiny", input: "" })).embeddings, []);
    const two = await ollama.embed({ model: "tiny", input: ["", "hello"] });
    assert.equal(two.embeddings.length, 2);
    assert.equal(two.embeddings[0]!.length, two.embeddings[1]!.length);
    assert.ok(two.embeddings[0]!.length > 0, "never a zero-length vector");
  });

  test("registry.ollama.ai/library/<name> is <name>", async () => {
    const shown = await ollama.show({ model: "registry.ollama.ai/library/tiny:latest" });
    assert.deepEqual(shown.capabilities, ["completion"]);
    const r = await ollama.generate({ model: "registry.ollama.ai/library/babbler", prompt: "hi", options: quiet });
    assert.equal(r.eval_count, 4);
  });

  test("/api/ps reports the digest /api/tags reports", async () => {
    await ollama.generate({ model: "tiny", prompt: "hi", options: { num_predict: 1 } });
    const tags = (await ollama.list()).models.find((m) => m.name === "tiny:latest")!;
    const ps = (await ollama.ps()).models.find((m) => m.name === "tiny:latest")!;
    assert.match(tags.digest, /^[0-9a-f]{64}$/);
    assert.equal(ps.digest, tags.digest);
  });

  test("/api/version passes Ollama clients' minimum-version checks and names Gantry's own version", async () => {
    const v = (await (await fetch(`${srv.url}/api/version`)).json()) as { version: string; gantry: string };
    const [major, minor, patch] = v.version.split(".").map(Number) as [number, number, number];
    assert.ok(major > 0 || minor > 12 || (minor === 12 && patch >= 11), `${v.version} is at least 0.12.11`);
    assert.equal(v.version, (await ollama.version()).version);
    assert.match(v.gantry, /^\d+\.\d+\.\d+/);
  });
});

describe("keep_alive beyond a Node timer's 24.8 days means very long, not now", () => {
  const loaded = async (name: string) => (await ollama.ps()).models.find((m) => m.name === name);
  const days = (iso: string | Date) => (new Date(iso).getTime() - Date.now()) / 86_400_000;

  test('a request with keep_alive "720h" or 1e300 keeps its model loaded', async () => {
    await ollama.generate({ model: "tiny", prompt: "", keep_alive: "720h" });
    await new Promise((r) => setTimeout(r, 1000));
    const m = await loaded("tiny:latest");
    assert.ok(m, "still loaded a second later");
    assert.ok(Math.abs(days(m.expires_at) - 30) < 0.01, `expires in 30 days (${m.expires_at})`);
    await ollama.generate({ model: "tiny", prompt: "", keep_alive: 1e300 });
    await new Promise((r) => setTimeout(r, 1000));
    assert.ok(days((await loaded("tiny:latest"))!.expires_at) > 365 * 200, "clamped to very long, not unloaded");
    await ollama.generate({ model: "tiny", prompt: "", keep_alive: 3_000_000 });
    await new Promise((r) => setTimeout(r, 1000));
    assert.ok(Math.abs(days((await loaded("tiny:latest"))!.expires_at) - 3e6 / 86_400) < 0.01);
  });

  test("GANTRY_KEEP_ALIVE=720h is the default for requests that give none", async () => {
    await ollama.generate({ model: "babbler", prompt: "hi", options: { num_predict: 1 } });
    await new Promise((r) => setTimeout(r, 1000));
    const m = await loaded("babbler:latest");
    assert.ok(m, "still loaded a second later");
    assert.ok(Math.abs(days(m.expires_at) - 30) < 0.01, `expires in 30 days (${m.expires_at})`);
  });
});
