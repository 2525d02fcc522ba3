// `gantry run <file>::<export>` as users run it — the installed package's bin (test/support/installed-gantry.ts) in
// the foreground, stopped with Ctrl-C (SIGINT) or SIGTERM — answered by the `openai` and `ollama` npm clients and curl
// on both path forms ({url}/local/<app>/v1 and plain {url}/v1, {url}/api), public and private. The example app
// (examples/chat.ts) runs as is: a local hub serves a tiny generated model under its repository's name
// (GANTRY_HUB_URL), into a model store of the test's own (GANTRY_MODELS), so the first run downloads it.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { after, before, test } from "node:test";
import Anthropic from "@anthropic-ai/sdk";
import { Ollama } from "ollama";
import OpenAI from "openai";
import { startHubServer, type HubServer } from "../../support/hub-server.ts";
import { installedGantry, type InstalledGantry } from "../../support/installed-gantry.ts";
import { tinyModelPath } from "../../support/models.ts";
import { curl, printedCurl } from "../../support/printed-example.ts";
import { freePort, REPO } from "../../support/server.ts";
import { userProject } from "../../support/user-project.ts";
import { runCli } from "../cli/run-cli.ts";
import { eventually } from "../operator/helpers.ts";

const MODEL = "hf.co/HuggingFaceTB/SmolLM2-135M-Instruct-GGUF:Q4_K_M";
const HELLO = [{ role: "user" as const, content: "Hello!" }];

let gantry: InstalledGantry, hub: HubServer, work: string, models: string;
const running: ChildProcess[] = [];

before(async () => {
  // The hub first (milliseconds): once it listens, after() closes it even when the install fails.
  hub = await startHubServer();
  gantry = await installedGantry();
  await hub.register({
    org: "HuggingFaceTB",
    repo: "SmolLM2-135M-Instruct-GGUF",
    files: { "SmolLM2-135M-Instruct-Q4_K_M.gguf": await tinyModelPath({ controlLogit: -8 }) },
  });
  // A user's project as `npm init -y` makes it ("type": "commonjs"), holding a copy of the example app.
  work = userProject("npm-init");
  fs.copyFileSync(path.join(REPO, "examples", "chat.ts"), path.join(work, "app.ts"));
  models = path.join(work, "home", "models");
});

after(async () => {
  for (const p of running) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
  await hub?.close();
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

const env = (): Record<string, string> => ({
  PATH: `${path.dirname(gantry.bin)}:${path.dirname(process.execPath)}:${process.env.PATH}`,
  GANTRY_HUB_URL: `http://127.0.0.1:${hub.port}`,
  GANTRY_MODELS: models,
  GANTRY_THREADS: "2",
});

interface RunningApp {
  proc: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Sends the signal; resolves with the exit code once the process exited. */
  stop(signal: NodeJS.Signals): Promise<number | null>;
}

/** Starts `gantry run <args>` and waits until it printed that the app answers (stdout's first line). */
async function startRun(args: string[], cwd = work): Promise<RunningApp> {
  const proc = spawn(gantry.bin, ["run", ...args], {
    cwd,
    env: { ...process.env, ...env() },
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.push(proc);
  let out = "",
    err = "";
  proc.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  proc.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.once("exit", (code) => resolve(code)));
  const deadline = Date.now() + 300_000;
  while (!out.includes("\n")) {
    if (proc.exitCode !== null) throw new Error(`gantry run exited ${proc.exitCode}\nstdout: ${out}\nstderr: ${err}`);
    if (Date.now() > deadline) throw new Error(`gantry run did not answer\nstdout: ${out}\nstderr: ${err}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    proc,
    stdout: () => out,
    stderr: () => err,
    stop: async (signal) => {
      proc.kill(signal);
      const t = setTimeout(() => proc.kill("SIGKILL"), 30_000);
      const code = await exited;
      clearTimeout(t);
      return code;
    },
  };
}

/** The per-request line of a metered POST to `path` that generated `completion` tokens. */
const lineOf = (path: string, completion: number): RegExp =>
  new RegExp(`^POST ${path} 200 \\([\\d.]+ ms, [1-9]\\d* \\+ ${completion} tokens\\)$`, "m");

/** The run log's lines (JSON), as `gantry run` writes them next to the model store. */
const runLog = (app: string): Record<string, unknown>[] =>
  fs
    .readFileSync(path.join(path.dirname(models), "logs", `run-${app}.log`), "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as Record<string, unknown>);

test("run examples/chat.ts::chat: downloads on the first run, answers openai, ollama and curl on both path forms; Ctrl-C stops it", async () => {
  const app = await startRun(["examples/chat.ts::chat", "--port", "0"], REPO);
  const [, url, base] =
    /^chat is running at ((http:\/\/127\.0\.0\.1:\d+)\/local\/chat) \(public: no key needed\)\n/.exec(app.stdout())!;
  assert.ok(url && base, app.stdout());
  assert.match(app.stderr(), new RegExp(`^downloading ${MODEL.replace(/[.]/g, "\\.")}: the first run of this model`));
  assert.match(app.stderr(), /pulling [0-9a-f]{12}: 100% /, "download progress");
  assert.ok(app.stdout().includes(`${base}/v1 (OpenAI clients)`));
  assert.ok(app.stdout().includes(`const client = new OpenAI({ baseURL: "${url}/v1", apiKey: "unused" });`));

  for (const baseURL of [`${url}/v1`, `${base}/v1`]) {
    const openai = new OpenAI({ baseURL, apiKey: "unused" });
    const answer = await openai.chat.completions.create({ model: MODEL, messages: HELLO, max_tokens: 4 });
    assert.equal(answer.choices[0]?.message.role, "assistant", baseURL);
    assert.ok(answer.usage!.completion_tokens > 0);
    const stream = await openai.chat.completions.create({ model: MODEL, messages: HELLO, max_tokens: 4, stream: true });
    let finish: string | null | undefined;
    for await (const chunk of stream) finish = chunk.choices[0]?.finish_reason ?? finish;
    assert.ok(finish === "length" || finish === "stop", `${baseURL}: the stream finished (${finish})`);
    assert.deepEqual(
      (await openai.models.list()).data.map((m) => m.id),
      [MODEL, "chat"],
      "the model first, then the app's name",
    );
    // The app's name selects its one model, as fal's users address an app; other names stay 404 naming the model.
    for (const model of ["chat", "chat:latest"]) {
      const byName = await openai.chat.completions.create({ model, messages: HELLO, max_tokens: 2 });
      assert.equal(byName.choices[0]?.message.role, "assistant", model);
    }
    const other = await openai.chat.completions.create({ model: "chatbot", messages: HELLO, max_tokens: 2 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(other instanceof OpenAI.NotFoundError, String(other));
    assert.match(other.message, new RegExp(`serves "${MODEL.replace(/[.]/g, "\\.")}" \\(also "chat"\\)`));
  }
  for (const host of [url, base]) {
    const ollama = new Ollama({ host });
    const r = await ollama.chat({ model: MODEL, messages: HELLO, options: { num_predict: 3 } });
    assert.equal(r.message.role, "assistant", host);
    assert.equal(r.eval_count, 3);
    assert.deepEqual(
      (await ollama.ps()).models.map((m) => m.name),
      [MODEL],
      "loaded before the URL was printed",
    );
  }
  const printed = await curl(printedCurl(app.stdout()));
  assert.equal(printed.status, 200, printed.body);
  assert.equal((JSON.parse(printed.body) as { object: string }).object, "chat.completion");
  const plain = await curl(
    `curl ${base}/api/generate -d '{"model":"${MODEL}","prompt":"hi","stream":false,"options":{"num_predict":2}}'`,
  );
  assert.equal(plain.status, 200, plain.body);
  assert.equal((JSON.parse(plain.body) as { eval_count: number }).eval_count, 2);
  const wrong = await curl(`curl ${url}/v1/chat/completions -d '{"model":"${MODEL}","messages":"hi"}'`);
  assert.equal(wrong.status, 400, "bad input: the server's 400 through the gateway");
  assert.equal(typeof (JSON.parse(wrong.body) as { error: { message: string } }).error.message, "string");
  assert.match(
    app.stderr(),
    /^POST \/v1\/chat\/completions 200 \([\d.]+ ms, \d+ \+ 4 tokens\)$/m,
    "one line a request",
  );

  assert.equal(await app.stop("SIGINT"), 0, app.stderr());
  assert.match(app.stderr(), /\nstopping chat\nstopped chat\n$/);
  const log = runLog("chat");
  assert.ok(
    log.some((l) => l.msg === "model unloaded" && l.model === MODEL),
    "the model was unloaded",
  );
  assert.equal(log.at(-1)?.msg, "stopped");
  await assert.rejects(fetch(`${base}/v1/models`), "nothing listens any more");
});

test("run --auth private in an `npm init -y` project: a temporary key printed once (also as x-api-key); no key or a wrong one is 401 in each API's shape; SIGTERM stops it", async () => {
  const port = await freePort();
  const app = await startRun([
    "app.ts::chat",
    "--auth",
    "private",
    "--app-name",
    "demo",
    "--port",
    String(port),
    "--host",
    "127.0.0.1",
  ]);
  const url = `http://127.0.0.1:${port}/local/demo`;
  const base = `http://127.0.0.1:${port}`;
  assert.match(app.stdout(), new RegExp(`^demo is running at ${url} \\(private: requests need the key below`));
  assert.doesNotMatch(app.stderr(), /downloading/, "the second run uses the store");
  const key: string = /^ {2}export GANTRY_API_KEY=(\S+)$/m.exec(app.stdout())?.[1] ?? "";
  assert.ok(key, app.stdout());
  assert.equal(app.stdout().split(key).length, 2, "the key is printed once");
  assert.ok(!fs.readFileSync(path.join(path.dirname(models), "logs", "run-demo.log"), "utf8").includes(key));
  const command = printedCurl(app.stdout());
  assert.ok(command.includes(`-H "Authorization: Key $GANTRY_API_KEY"`), command);

  const accepted = await curl(command, key);
  assert.equal(accepted.status, 200, accepted.body);
  for (const baseURL of [`${url}/v1`, `${base}/v1`]) {
    const answer = await new OpenAI({ baseURL, apiKey: key }).chat.completions.create({
      model: MODEL,
      messages: HELLO,
      max_tokens: 2,
    });
    assert.equal(answer.choices[0]?.message.role, "assistant");
    for (const apiKey of ["unused", `${key}x`]) {
      const refused = await new OpenAI({ baseURL, apiKey, maxRetries: 0 }).chat.completions
        .create({ model: MODEL, messages: HELLO, max_tokens: 2 })
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      assert.ok(refused instanceof OpenAI.AuthenticationError, `${baseURL} with ${apiKey}: ${String(refused)}`);
      assert.equal(refused.status, 401);
    }
  }
  for (const host of [url, base]) {
    const ok = await new Ollama({ host, headers: { Authorization: `Key ${key}` } }).chat({
      model: MODEL,
      messages: HELLO,
      options: { num_predict: 2 },
    });
    assert.equal(ok.message.role, "assistant");
    const refused = await new Ollama({ host }).chat({ model: MODEL, messages: HELLO }).then(
      () => undefined,
      (e: unknown) => e as { status_code?: number; error?: string },
    );
    assert.equal(refused?.status_code, 401, `${host}: ${String(refused)}`);
  }
  // The Anthropic SDK sends its key as x-api-key; the Responses API through the openai client; streamed and not,
  // each request metered (the per-request line counts its tokens).
  const claude = new Anthropic({ baseURL: url, apiKey: key, maxRetries: 0 });
  const message = await claude.messages.create({ model: MODEL, max_tokens: 2, messages: HELLO });
  assert.deepEqual([message.stop_reason, message.usage.output_tokens], ["max_tokens", 2]);
  const streamed = await claude.messages.stream({ model: MODEL, max_tokens: 3, messages: HELLO }).finalMessage();
  assert.equal(streamed.usage.output_tokens, 3);
  const counted = await claude.messages.countTokens({ model: MODEL, messages: HELLO });
  // As Anthropic's usage: input_tokens leaves out the prompt tokens read from the cache.
  assert.equal(counted.input_tokens, message.usage.input_tokens + (message.usage.cache_read_input_tokens ?? 0));
  const refusedClaude = await new Anthropic({ baseURL: url, apiKey: `${key}x`, maxRetries: 0 }).messages
    .create({ model: MODEL, max_tokens: 2, messages: HELLO })
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  assert.ok(refusedClaude instanceof Anthropic.AuthenticationError, String(refusedClaude));
  assert.equal((refusedClaude.error as { error: { type: string } }).error.type, "authentication_error");
  const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: key });
  const response = await openai.responses.create({ model: MODEL, input: "Hello!", max_output_tokens: 2 });
  assert.equal(response.usage?.output_tokens, 2);
  const streamedResponse = await openai.responses
    .stream({ model: MODEL, input: "Hello!", max_output_tokens: 3 })
    .finalResponse();
  assert.equal(streamedResponse.usage?.output_tokens, 3);
  // Lines are written as requests are accounted for (in batches): wait for the last one.
  const metered = [2, 3].flatMap((n) => ["/v1/messages", "/v1/responses"].map((path) => lineOf(path, n)));
  await eventually("the per-request lines of /v1/messages and /v1/responses", async () =>
    metered.every((line) => line.test(app.stderr())) ? true : undefined,
  );

  // The error in each API's own shape, with and without the path's app prefix.
  for (const prefix of [url, base]) {
    for (const auth of ["", ` -H "Authorization: Key ${key}x"`]) {
      const openaiShape = await curl(`curl ${prefix}/v1/models${auth}`);
      assert.equal(openaiShape.status, 401);
      const e = (JSON.parse(openaiShape.body) as { error: { message: string; type: string } }).error;
      assert.equal(typeof e.message, "string");
      assert.equal(typeof e.type, "string");
      const ollamaShape = await curl(`curl ${prefix}/api/tags${auth}`);
      assert.equal(ollamaShape.status, 401);
      assert.equal(typeof (JSON.parse(ollamaShape.body) as { error: string }).error, "string");
    }
  }

  assert.equal(await app.stop("SIGTERM"), 0, app.stderr());
  assert.match(app.stderr(), /stopped demo\n$/);
  assert.ok(runLog("demo").some((l) => l.msg === "model unloaded"));
});

test("an app's Modelfile overrides and server settings apply; a .mjs file, an async function, a local GGUF", async () => {
  fs.copyFileSync(await tinyModelPath({ controlLogit: -8 }), path.join(work, "tiny.gguf"));
  fs.writeFileSync(
    path.join(work, "app.mjs"),
    `import { defineApp } from "gantry";
export async function brief() {
  return defineApp({ model: "./tiny.gguf", modelfile: "SYSTEM be brief\\nPARAMETER num_predict 4\\n", server: { contextLength: 256 } });
}
`,
  );
  const app = await startRun(["app.mjs::brief", "--port", "0", "-o", "json"]);
  const info = JSON.parse(app.stdout().split("\n")[0]!) as Record<string, string>;
  assert.deepEqual(
    { org: info.org, app: info.app, model: info.model, auth: info.auth },
    { org: "local", app: "brief", model: "brief:latest", auth: "public" },
  );
  assert.match(info.url!, /^http:\/\/127\.0\.0\.1:\d+\/local\/brief$/);
  assert.ok(!("key" in info));
  const answer = await new OpenAI({ baseURL: `${info.url}/v1`, apiKey: "unused" }).chat.completions.create({
    model: "brief:latest",
    messages: HELLO,
  });
  assert.equal(answer.usage?.completion_tokens, 4, "PARAMETER num_predict from the app file");
  const ollama = new Ollama({ host: info.url! });
  assert.equal((await ollama.show({ model: "brief:latest" })).system, "be brief");
  assert.equal(
    ((await ollama.ps()).models[0] as { context_length?: number } | undefined)?.context_length,
    256,
    "server.contextLength",
  );
  assert.equal(await app.stop("SIGINT"), 0, app.stderr());
});

test("bad app references give one clear line and exit code 2; a port in use exits 1 saying so", async () => {
  fs.writeFileSync(
    path.join(work, "bad.ts"),
    `import { defineApp } from "gantry";
export const chat = defineApp({ model: "hf.co/org/repo-GGUF:Q4_K_M" });
export const answer = 42;
export const wrong = defineApp({ model: "hf.co/org/repo-GGUF", scaling: { maxReplicas: 0 } });
export const overrides = defineApp({ model: "hf.co/org/repo-GGUF", modelfile: "FROM other\\n" });
`,
  );
  const cases: [string, RegExp][] = [
    ["nope.ts::chat", /^Error: nope\.ts: no such file\n$/],
    ["bad.ts::chats", /^Error: bad\.ts has no export "chats" \(exports that are apps: chat, overrides, wrong\)\n$/],
    ["bad.ts::answer", /^Error: bad\.ts::answer is a number, not an app definition .*\n$/],
    ["bad.ts::wrong", /^Error: bad\.ts::wrong: invalid app: spec\.scaling\.maxReplicas: Too small.*\n$/],
    ["bad.ts::overrides", /^Error: bad\.ts::overrides: invalid app: spec\.modelfile: .*\n$/],
    ["bad.txt::chat", /^Error: bad\.txt: an app file ends in \.ts, \.mts, \.cts, \.js, \.mjs, \.cjs\n$/],
  ];
  for (const [ref, message] of cases) {
    const r = await runCli(["run", ref], { bin: gantry.bin, cwd: work, env: env() });
    assert.equal(r.code, 2, `${ref}: ${r.stderr}`);
    assert.match(r.stderr, message, ref);
    assert.equal(r.stdout, "");
  }
  const badAuth = await runCli(["run", "bad.ts::chat", "--auth", "secret"], { bin: gantry.bin, cwd: work, env: env() });
  assert.equal(badAuth.code, 2, "a usage error, as for every command");
  assert.equal(badAuth.stderr, 'Error: --auth must be one of private, shared, public (not "secret")\n');

  const taken = await startRun(["examples/chat.ts::chat", "--port", "0", "-o", "json"], REPO);
  const port = new URL((JSON.parse(taken.stdout().split("\n")[0]!) as { url: string }).url).port;
  const r = await runCli(["run", "examples/chat.ts::chat", "--port", port], { bin: gantry.bin, cwd: REPO, env: env() });
  assert.equal(r.code, 1);
  assert.equal(r.stderr, `Error: cannot listen on 127.0.0.1:${port}: the port is in use (choose another: --port)\n`);
  assert.equal(await taken.stop("SIGTERM"), 0);
});
