// Images from the CLI with the generated vision pair: `gantry create` from a Modelfile with two FROM lines (model and
// projector), `gantry show` listing the vision capability and the projector, a one-shot `gantry run <model> "<prompt
// with an image path>"`, and the interactive chat in a real terminal (tmux): /image <path> <text>, an image path
// written in the prompt (quoted, with spaces, with ~), and a missing file as one error line after which the chat goes
// on. The CLI's answers equal the server's own answer to the same turn (greedy), so the image really reached the model.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { encodeJpeg, encodePng, patternImage } from "../../support/images.ts";
import { imageTokens } from "../../support/gguf/vision.ts";
import { visionPairPaths } from "../../support/models.ts";
import { requirePatchedBuild } from "../../support/patched-engine.ts";
import { GANTRY, startTestServer, type TestServer } from "../../support/server.ts";
import { runOk, runCli } from "./run-cli.ts";
import { TmuxSession } from "./tmux.ts";

let server: TestServer;
let tmux: TmuxSession | null = null;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-vision-cli-"));
// A home of the test's own, so "~/…" paths resolve inside it.
const home = path.join(dir, "home");
const images = {
  a: path.join(dir, "a.png"),
  spaced: path.join(dir, "my pics", "b.jpg"),
  home: path.join(home, "c.png"),
};
let env: Record<string, string>;

before(async () => {
  requirePatchedBuild();
  fs.mkdirSync(path.dirname(images.spaced), { recursive: true });
  fs.mkdirSync(home, { recursive: true });
  fs.writeFileSync(images.a, encodePng(patternImage(120, 90, 1)));
  fs.writeFileSync(images.spaced, encodeJpeg(patternImage(120, 90, 2)));
  fs.writeFileSync(images.home, encodePng(patternImage(120, 90, 3)));
  server = await startTestServer({ modelsDir: path.join(dir, "models") });
  env = { GANTRY_HOST: `127.0.0.1:${server.port}`, GANTRY_MODELS: server.modelsDir, HOME: home };
  const pair = await visionPairPaths();
  fs.copyFileSync(pair.model, path.join(dir, "model.gguf"));
  fs.copyFileSync(pair.mmproj, path.join(dir, "mmproj.gguf"));
  fs.writeFileSync(
    path.join(dir, "Modelfile"),
    "FROM ./model.gguf\nFROM ./mmproj.gguf\nPARAMETER temperature 0\nPARAMETER num_predict 12\n",
  );
  await runOk(["create", "vis", "-f", path.join(dir, "Modelfile")], { env });
});

after(async () => {
  tmux?.kill();
  await server?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** The server's own greedy answer to one user turn with these images. */
async function apiAnswer(content: string, files: string[]): Promise<string> {
  const r = await fetch(`${server.url}/api/chat`, {
    method: "POST",
    body: JSON.stringify({
      model: "vis",
      stream: false,
      messages: [{ role: "user", content, images: files.map((f) => fs.readFileSync(f).toString("base64")) }],
    }),
  });
  assert.equal(r.status, 200, await r.clone().text());
  return ((await r.json()) as { message: { content: string } }).message.content;
}

test("gantry show: the vision capability and the projector", async () => {
  const { stdout } = await runOk(["show", "vis"], { env });
  assert.match(stdout, /Capabilities\n\s+completion\n\s+vision/);
  assert.match(stdout, /Projector\n\s+architecture\s+clip/);
  const mf = await runOk(["show", "vis", "--modelfile"], { env });
  assert.equal((mf.stdout.match(/^FROM /gm) ?? []).length, 2, mf.stdout);
});

test("one-shot: an image path inside the prompt is attached; a missing one is one error line", async () => {
  const r = await runOk(["run", "vis", `Describe ${images.a}`], { env });
  const answer = await apiAnswer("Describe", [images.a]);
  assert.ok(answer.length > 0);
  assert.equal(r.stdout.trim(), answer.trim());
  assert.match(r.stderr, new RegExp(`Added image '${images.a}'`));
  const missing = await runCli(["run", "vis", `Describe ${path.join(dir, "nope.png")}`], { env });
  assert.equal(missing.code, 1);
  const errors = missing.stderr.split("\n").filter((l) => l.startsWith("Error"));
  assert.deepEqual(errors, [`Error: cannot read image ${path.join(dir, "nope.png")}: no such file`]);
});

test("interactive: /image, quoted and ~ paths in the prompt, and a missing file that the chat survives", async () => {
  const shellQuote = (q: string) => `'${q.replace(/'/g, "'\\''")}'`;
  const vars = Object.entries(env)
    .map(([k, v]) => `${k}=${shellQuote(v)}`)
    .join(" ");
  // --verbose prints each answer's prompt eval count: an image adds its positions to the prompt.
  tmux = TmuxSession.start(
    `gantry-vision-${process.pid}`,
    `env ${vars} ${shellQuote(process.execPath)} ${shellQuote(GANTRY)} run vis --verbose; echo "EXIT=$?"; sleep 600`,
  );
  const t = tmux;
  await t.waitFor("the >>> prompt", (s) => s.includes(">>> "));
  const counts = (s: string): number[] => [...s.matchAll(/prompt eval count:\s+(\d+)/g)].map((m) => Number(m[1]));
  const turn = async (typed: string, n: number) => {
    t.type(typed);
    return counts(await t.waitFor(`the answer to ${typed}`, (s) => counts(s).length === n));
  };
  await turn(`/image ${images.a} What is this?`, 1);
  await turn(`Compare with "${images.spaced}" please`, 2);
  await turn("And ~/c.png?", 3);
  t.type("What about ./missing.png?");
  await t.waitFor("one error line", (s) => s.includes("Error: cannot read image ./missing.png: no such file"));
  const [p1, p2, p3, p4] = await turn("Thanks.", 4);
  const s = t.screen();
  for (const f of [images.a, images.spaced, images.home]) assert.ok(s.includes(`Added image '${f}'`), f);
  assert.equal([...s.matchAll(/Added image/g)].length, 3);
  // Each turn's prompt holds the conversation so far: the image turns add at least the image's positions.
  assert.ok(p1! > imageTokens(), `${p1}`);
  assert.ok(p2! >= p1! + imageTokens(), `${p1} → ${p2}`);
  assert.ok(p3! >= p2! + imageTokens(), `${p2} → ${p3}`);
  assert.ok(
    p4! > p3! && p4! < p3! + imageTokens() + 14,
    `the turn after the missing file carries no image (${p3} → ${p4})`,
  );
  t.type("/bye");
  await t.waitFor("the exit", (x) => x.includes("EXIT=0"));
});
