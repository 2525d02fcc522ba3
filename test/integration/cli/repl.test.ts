// The interactive chat of `gantry run <model>` in a real terminal (tmux): answers, history sent with each turn, """
// multi-line input, /set parameter, /show, /set system, /clear, images, Ctrl-C cancelling an answer, /bye, and the
// input history kept for the next session.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { tinyModelPath } from "../../support/models.ts";
import { createModel, GANTRY, startTestServer, type TestServer } from "../../support/server.ts";
import { TmuxSession } from "./tmux.ts";

let server: TestServer;
let tmux: TmuxSession | null = null;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-repl-"));
const image = path.join(dir, "cat.png");
fs.writeFileSync(image, Buffer.from("89504e470d0a1a0a0000000d49484452", "hex"));

before(async () => {
  // The store inside the test's directory, so the history file (next to the store) is the test's own.
  // The answer Ctrl-C cancels must still be running when the key arrives, however fast the machine: a context of
  // 131,072 tokens (the server's default context too), where the default 4,096 are generated in a moment.
  server = await startTestServer({ modelsDir: path.join(dir, "models"), env: { GANTRY_CONTEXT_LENGTH: "131072" } });
  // The GGUF's own chat template renders the whole conversation; num_predict keeps answers short.
  await createModel(server.url, "chatty", await tinyModelPath({ controlLogit: -8, contextLength: 131_072 }), {
    parameters: { num_predict: 10 },
  });
});

after(async () => {
  tmux?.kill();
  await server?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

const count = (s: string, re: RegExp): number => [...s.matchAll(re)].length;
const promptEvalCounts = (s: string): number[] =>
  [...s.matchAll(/prompt eval count:\s+(\d+)/g)].map((m) => Number(m[1]));
const evalCounts = (s: string): number[] => [...s.matchAll(/^eval count:\s+(\d+)/gm)].map((m) => Number(m[1]));
const shellQuote = (s: string) => `'${s.replace(/'/g, "'\\''")}'`;

test("an interactive session in a terminal", async () => {
  const env = `GANTRY_HOST=127.0.0.1:${server.port} GANTRY_MODELS=${shellQuote(server.modelsDir)}`;
  const command = `env ${env} ${shellQuote(process.execPath)} ${shellQuote(GANTRY)} run chatty --verbose; echo "EXIT=$?"; sleep 600`;
  tmux = TmuxSession.start(`gantry-repl-${process.pid}`, command);
  const t = tmux;
  await t.waitFor("the >>> prompt", (s) => s.includes(">>> "));

  // --verbose prints the counts after each answer: the prompt grows with the history and shrinks after /clear.
  t.type("hello there");
  await t.waitFor("the first answer", (x) => count(x, /eval rate:/g) === 1);
  t.type("hello there");
  let s = await t.waitFor("the second answer", (x) => count(x, /eval rate:/g) === 2);
  const [p1, p2] = promptEvalCounts(s);
  assert.ok(p2! > p1! + 10, `the second prompt carries the first exchange (${p1} → ${p2})`);

  t.type("/clear");
  await t.waitFor("the /clear notice", (x) => x.includes("Cleared session context"));
  t.type("hello there");
  s = await t.waitFor("an answer after /clear", (x) => count(x, /eval rate:/g) === 3);
  assert.equal(promptEvalCounts(s)[2], p1, "after /clear the prompt is the first one again");

  // A """ block is one message: one more answer, not two, and the continuation prompt shows while it is open.
  t.type('"""first line');
  await t.waitFor("the ... continuation prompt", (x) => x.includes("... "));
  t.type('second line"""');
  await t.waitFor("the multi-line answer", (x) => count(x, /eval rate:/g) === 4);
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(count(t.screen(), /eval rate:/g), 4, "exactly one answer for the block");

  // /set parameter takes effect on the next answer, and /show parameters lists it next to the model's own.
  t.type("/set parameter num_predict 3");
  await t.waitFor("the confirmation", (x) => x.includes("Set parameter 'num_predict' to '3'"));
  t.type("/show parameters");
  s = await t.waitFor("the parameters", (x) => x.includes("User defined parameters:"));
  assert.match(s, /Model defined parameters:\nnum_predict\s+10\n/);
  assert.match(s, /User defined parameters:\nnum_predict\s+3\n/);
  t.type("short answer please");
  s = await t.waitFor("the short answer", (x) => count(x, /eval rate:/g) === 5);
  assert.equal(evalCounts(s)[4], 3, "the answer stopped after 3 tokens");
  t.type("/set parameter temperature hot");
  await t.waitFor("the rejection", (x) => x.includes("Error: invalid value for temperature: expected a number"));

  t.type("/set system You are a pirate.");
  await t.waitFor("the confirmation", (x) => x.includes("Set system message."));
  t.type("/show system");
  await t.waitFor("the system message", (x) => /\/show system\nYou are a pirate\.\n/.test(x));
  t.type("/show info");
  await t.waitFor("the model summary", (x) => /architecture\s+llama/.test(x) && /Capabilities\n\s+completion/.test(x));
  // Images (by /image or a path inside the prompt) are read and sent; this model has no vision, so the server's
  // refusal is shown as one error line and the session goes on.
  t.type(`/image ${image} what is this?`);
  await t.waitFor(
    "the image refusal",
    (x) => x.includes(`Added image '${image}'`) && x.includes(`Error: model "chatty:latest" does not support images`),
  );
  t.type(`and what is in ${image} ?`);
  await t.waitFor("the second refusal", (x) => count(x, /does not support images/g) === 2);
  t.type("/?");
  await t.waitFor("the help", (x) => x.includes("Available Commands:") && x.includes("/bye"));

  // Ctrl-C stops an answer that would go on and on, and the session carries on.
  t.type("/set parameter num_predict 100000");
  await t.waitFor("the confirmation", (x) => x.includes("Set parameter 'num_predict' to '100000'"));
  // Prompts are counted at line starts: the tiny model's gibberish can itself contain ">>> ".
  const before = count(t.screen(), /^>>> /gm);
  const asked = ">>> tell me everything";
  t.type("tell me everything");
  // Ctrl-C once the answer is streaming (its text shows after the prompt line), not after a guessed time.
  await t.waitFor(
    "the long answer streaming",
    (x) => x.includes(asked) && x.slice(x.lastIndexOf(asked) + asked.length).replace(/\s/g, "").length >= 2,
  );
  t.key("C-c");
  s = await t.waitFor("the prompt after Ctrl-C", (x) => count(x, /^>>> /gm) === before + 1);
  assert.equal(count(s, /eval rate:/g), 5, "a cancelled answer has no final stats");
  t.type("/show system");
  await t.waitFor("a responsive session", (x) => count(x, /You are a pirate\./g) >= 3);

  t.type("/bye");
  await t.waitFor("the process to exit", (x) => x.includes("EXIT=0"));
  t.kill();

  // The input history is kept for the next session: the up arrow brings back the last line.
  const history = fs.readFileSync(path.join(dir, "history"), "utf8").split("\n");
  for (const line of ["hello there", "/set parameter num_predict 3", "/bye"])
    assert.ok(history.includes(line), `${line} in history`);
  tmux = TmuxSession.start(`gantry-repl2-${process.pid}`, command);
  await tmux.waitFor("the >>> prompt", (x) => x.includes(">>> "));
  tmux.key("Up");
  await tmux.waitFor("the recalled line", (x) => x.includes(">>> /bye"));
  // Ctrl-C clears the typed line, and Ctrl-D on an empty line ends the session (it would not with text left).
  tmux.key("C-c");
  await tmux.waitFor("the cleared line", (x) => x.trimEnd().split("\n").pop() === ">>>");
  tmux.key("C-d");
  await tmux.waitFor("the process to exit", (x) => x.includes("EXIT=0"));
});
