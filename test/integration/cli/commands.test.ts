// The model commands of the seed document, driven as processes against a real `gantry serve` on the tiny model:
// run (prompt, piped stdin, ./file.gguf), create -f, show, list, ps, stop, cp, rm, and one-line errors.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { tinyModelPath } from "../../support/models.ts";
import { startTestServer, type TestServer } from "../../support/server.ts";
import { apiChat, runCli, runOk, type CliOptions } from "./run-cli.ts";

const SEED_TEMPLATE =
  "<|startoftext|><|im_start|>system\n{{ .System }}<|im_end|>\n<|im_start|>user\n{{ .Prompt }}<|im_end|>\n<|im_start|>assistant\n";

let server: TestServer;
let work: string;
let cli: CliOptions;

before(async () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-cli-it-"));
  server = await startTestServer();
  cli = { env: { GANTRY_HOST: `127.0.0.1:${server.port}`, GANTRY_MODELS: server.modelsDir }, cwd: work };
  // The model sits next to its Modelfile; FROM names it relatively, as in the seed document.
  fs.mkdirSync(path.join(work, "seed"));
  fs.copyFileSync(await tinyModelPath({ controlLogit: -8 }), path.join(work, "seed", "model.gguf"));
  fs.writeFileSync(
    path.join(work, "seed", "Modelfile"),
    [
      "FROM ./model.gguf",
      `TEMPLATE """${SEED_TEMPLATE}"""`,
      "PARAMETER temperature 0.7",
      "PARAMETER top_p 0.9",
      'PARAMETER stop "<|im_end|>"',
      'PARAMETER stop "<|endoftext|>"',
      "PARAMETER seed 7",
      "PARAMETER num_predict 16",
      "",
    ].join("\n"),
  );
});

after(async () => {
  await server?.stop();
  fs.rmSync(work, { recursive: true, force: true });
});

const tags = async () =>
  (
    (await (await fetch(`${server.url}/api/tags`)).json()) as {
      models: { name: string; digest: string; size: number }[];
    }
  ).models;
const running = async () =>
  ((await (await fetch(`${server.url}/api/ps`)).json()) as { models: { name: string }[] }).models;

/** The one line a failing command prints. */
function assertOneLineError(
  r: { code: number | null; stdout: string; stderr: string },
  pattern: RegExp,
  code = 1,
): void {
  assert.equal(r.code, code, `exit code (stderr: ${r.stderr})`);
  const lines = r.stderr.split("\n").filter((l) => l !== "");
  assert.equal(lines.length, 1, `exactly one stderr line: ${JSON.stringify(r.stderr)}`);
  assert.match(lines[0]!, /^Error: /);
  assert.match(lines[0]!, pattern);
  assert.ok(!r.stderr.includes("    at "), "no stack trace");
}

test("create -f with the seed Modelfile: FROM relative to the Modelfile, blob uploaded, status lines, success", async () => {
  // Run from another directory: the FROM path must resolve against the Modelfile, not the working directory.
  const r = await runOk(["create", "seedy", "-f", path.join(work, "seed", "Modelfile")], { ...cli, cwd: os.tmpdir() });
  assert.match(r.stderr, /copying file sha256:[0-9a-f]{64}/);
  assert.match(r.stderr, /writing manifest\n/);
  assert.match(r.stderr, /success\n$/);
  assert.ok((await tags()).some((m) => m.name === "seedy:latest"));
  const show = (await (
    await fetch(`${server.url}/api/show`, { method: "POST", body: JSON.stringify({ model: "seedy" }) })
  ).json()) as { template: string; parameters: string };
  assert.equal(show.template, SEED_TEMPLATE);
  assert.match(show.parameters, /stop\s+"<\|im_end\|>"\nstop\s+"<\|endoftext\|>"/);
});

test("run <model> <prompt> prints the same answer the API gives, and exits", async () => {
  const r = await runOk(["run", "seedy", "Why", "is", "the", "sky", "blue?"], cli);
  const expected = await apiChat(server.url, "seedy", "Why is the sky blue?");
  assert.ok(expected.length > 0);
  assert.equal(r.stdout, `${expected}\n`);
});

test("run reads a piped stdin as the prompt, after the prompt arguments", async () => {
  const piped = await runOk(["run", "seedy"], { ...cli, input: "Tell me a story.\n" });
  assert.equal(piped.stdout, `${await apiChat(server.url, "seedy", "Tell me a story.")}\n`);
  const both = await runOk(["run", "seedy", "Summarise:"], { ...cli, input: "The quick brown fox.\n" });
  assert.equal(both.stdout, `${await apiChat(server.url, "seedy", "Summarise:\nThe quick brown fox.")}\n`);
});

test("run ./file.gguf works without a prior create, uploading the blob only once", async () => {
  const dir = path.join(work, "local");
  fs.mkdirSync(dir);
  // A model that ends its answers by itself (without a Modelfile there is no num_predict to stop it).
  fs.copyFileSync(await tinyModelPath(), path.join(dir, "Tiny-Local.gguf"));
  const first = await runOk(["run", "./Tiny-Local.gguf", "hello"], { ...cli, cwd: dir });
  assert.match(first.stderr, /copying file sha256:[0-9a-f]{64} \(Tiny-Local\.gguf\)/);
  assert.ok(
    (await tags()).some((m) => m.name === "tiny-local:latest"),
    "a model named after the file",
  );
  // Sampling is random without a seed: the answer's text cannot be predicted, only that it was printed and ended.
  assert.ok(first.stdout.endsWith("\n"), JSON.stringify(first.stdout.slice(-50)));
  // The same file again, as ../ from a subdirectory: the server has the blob, nothing is uploaded.
  fs.mkdirSync(path.join(dir, "sub"));
  const again = await runOk(["run", "../Tiny-Local.gguf", "hello"], { ...cli, cwd: path.join(dir, "sub") });
  assert.ok(!again.stderr.includes("copying file"), `blob already on the server: ${again.stderr}`);
  assert.equal((await tags()).filter((m) => m.name.startsWith("tiny-local")).length, 1);
});

test("show prints a summary, each part, and a --modelfile that creates an equal model", async () => {
  const summary = await runOk(["show", "seedy"], cli);
  for (const re of [
    /architecture\s+llama/,
    /context length\s+\d+/,
    /embedding length\s+64/,
    /quantization\s+\S+/,
    /Capabilities\n\s+completion/,
    /temperature\s+0\.7/,
  ]) {
    assert.match(summary.stdout, re);
  }
  assert.equal((await runOk(["show", "seedy", "--template"], cli)).stdout, SEED_TEMPLATE);
  assert.match((await runOk(["show", "seedy", "--parameters"], cli)).stdout, /top_p\s+0\.9/);
  const modelfile = (await runOk(["show", "seedy", "--modelfile"], cli)).stdout;
  assert.match(modelfile, /^FROM /m);
  fs.writeFileSync(path.join(work, "Roundtrip.modelfile"), modelfile);
  await runOk(["create", "seedy-again", "-f", "Roundtrip.modelfile"], cli);
  const again = (await runOk(["show", "seedy-again", "--modelfile"], cli)).stdout;
  const body = (text: string) =>
    text
      .split("\n")
      .filter((l) => !l.startsWith("#"))
      .join("\n");
  assert.equal(body(again), body(modelfile));
  assert.equal((await runOk(["show", "seedy-again", "--template"], cli)).stdout, SEED_TEMPLATE);
});

test("list shows NAME, 12-hex ID, human SIZE and relative MODIFIED for every model", async () => {
  const r = await runOk(["list"], cli);
  const lines = r.stdout.trimEnd().split("\n");
  assert.match(lines[0]!, /^NAME\s+ID\s+SIZE\s+MODIFIED$/);
  for (const m of await tags()) {
    const row = lines.find((l) => l.startsWith(`${m.name} `));
    assert.ok(row, `${m.name} listed:\n${r.stdout}`);
    assert.match(
      row,
      new RegExp(`\\s${m.digest.slice(0, 12)}\\s+\\d[\\d.]* (B|KB|MB)\\s+(Less than a second|An? \\w+|\\d+ \\w+) ago$`),
    );
  }
  const firstColumn = (out: string) => out.split("\n").map((l) => l.split(" ")[0]);
  assert.deepEqual(firstColumn((await runOk(["ls"], cli)).stdout), firstColumn(r.stdout), "ls is list");
});

test("ps lists a loaded model; stop unloads it", async () => {
  await runOk(["run", "seedy", "--keepalive", "10m", "hi"], cli);
  const ps = await runOk(["ps"], cli);
  assert.match(ps.stdout, /^NAME\s+ID\s+SIZE\s+PROCESSOR\s+CONTEXT\s+KV CACHE\s+UNTIL\n/);
  assert.match(
    ps.stdout,
    /\nseedy:latest\s+[0-9a-f]{12}\s+\S+ \w+\s+100% CPU\s+\d+\s+f16 \d[\d.]* (KB|MB)\s+(9|10) minutes from now\n/,
  );
  await runOk(["stop", "seedy"], cli);
  const deadline = Date.now() + 10_000;
  while ((await running()).some((m) => m.name === "seedy:latest") && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 100));
  assert.ok(!(await running()).some((m) => m.name === "seedy:latest"), "unloaded");
  assert.ok(!(await runOk(["ps"], cli)).stdout.includes("seedy:latest"));
});

test("cp copies a model; rm removes one or several", async () => {
  assert.equal((await runOk(["cp", "seedy", "seedy-copy"], cli)).stdout, "copied 'seedy' to 'seedy-copy'\n");
  assert.equal((await runOk(["show", "seedy-copy", "--template"], cli)).stdout, SEED_TEMPLATE);
  const rm = await runOk(["rm", "seedy-copy", "seedy-again"], cli);
  assert.equal(rm.stdout, "deleted 'seedy-copy'\ndeleted 'seedy-again'\n");
  const names = (await tags()).map((m) => m.name);
  assert.ok(
    !names.includes("seedy-copy:latest") && !names.includes("seedy-again:latest") && names.includes("seedy:latest"),
    names.join(", "),
  );
});

test("failures exit 1 with one line: the server's message; usage errors exit 2", async () => {
  assertOneLineError(await runCli(["run", "no-such-model", "hi"], cli), /model "no-such-model" not found/);
  assertOneLineError(await runCli(["show", "no-such-model"], cli), /not found/);
  assertOneLineError(await runCli(["rm", "no-such-model"], cli), /not found/);
  assertOneLineError(await runCli(["cp", "no-such-model", "x"], cli), /not found/);
  assertOneLineError(await runCli(["frobnicate"], cli), /unknown command "frobnicate"/, 2);
  assertOneLineError(await runCli(["cp", "only-one"], cli), /missing destination/, 2);
  assertOneLineError(await runCli(["show", "seedy", "--bogus"], cli), /Unknown option '--bogus'/, 2);
  fs.writeFileSync(
    path.join(work, "Broken"),
    "FROM ./model.gguf\nPARAMETER temperature 0.5\nPARAMETER temperature hot\n",
  );
  assertOneLineError(await runCli(["create", "broken", "-f", "Broken"], cli), /line 3/);
  assertOneLineError(await runCli(["create", "broken", "-f", "Missing"], cli), /no Modelfile at .*Missing/, 2);
  // list does not start a server: with none at the address it says so.
  assertOneLineError(
    await runCli(["list"], { ...cli, env: { ...cli.env!, GANTRY_HOST: "127.0.0.1:1" } }),
    /could not connect to the gantry server at http:\/\/127\.0\.0\.1:1/,
  );
});

test("--help lists the commands and environment variables; --version shows client and server", async () => {
  const help = await runOk(["--help"], cli);
  for (const cmd of ["serve", "run", "pull", "create", "show", "list", "ps", "stop", "cp", "rm"])
    assert.match(help.stdout, new RegExp(`gantry ${cmd}\\b`));
  for (const v of ["GANTRY_HOST", "GANTRY_MODELS", "GANTRY_KEEP_ALIVE"]) assert.ok(help.stdout.includes(v), v);
  const version = await runOk(["--version"], cli);
  assert.match(version.stdout, /^gantry version \d+\.\d+\.\d+\nserver version \d+\.\d+\.\d+ /);
});
