// The generated vision pair (test/support/gguf/vision.ts) is real for llama.cpp itself, not only for Gantry: its own
// llama-mtmd-cli, built from the llama.cpp release node-llama-cpp ships (test/bench/llama-cpp/tools.ts, cached), loads
// model.gguf with mmproj.gguf, encodes an image into the projector's 16 embeddings, decodes them and generates, and the
// image steers the answer (greedy: the same image gives the same text, another image other text); and Gantry's own
// image input (the patched addon) answers exactly as llama-mtmd-cli does.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { decodeImage } from "../../../server/engine/native/mtmd.ts";
import { requirePatchedBuild } from "../../support/patched-engine.ts";
import { run } from "../../../server/setup/llama-source.ts";
import { llamaTools } from "../../bench/llama-cpp/tools.ts";
import { imageTokens } from "../../support/gguf/vision.ts";
import { encodeJpeg, encodePng, patternImage } from "../../support/images.ts";
import { visionPairPaths } from "../../support/models.ts";
import { generate, openVisionEngine } from "../../support/vision-engine.ts";

let dir: string;
before(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-vision-pair-"));
});
after(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

/**
 * One single-turn run of llama-mtmd-cli: its answer (stdout) and llama.cpp's log (stderr; every message with
 * `verbose`). The CLI prints through llama.cpp's asynchronous log thread, which is not drained when it exits, so the
 * end of its output is often lost (13 of 30 runs here): a run counts when its output reaches the blank line the CLI
 * prints last and, verbose, its log the timings printed after the generation (the image's decode is logged just before
 * them). Up to 20 runs: all of them cut short is then about 1 in 10^7.
 */
async function mtmdCli(image: string, prompt: string, verbose = false): Promise<{ answer: string; log: string }> {
  const { mtmdCli: cli } = await llamaTools(["llama-mtmd-cli"]);
  const pair = await visionPairPaths();
  const args = [
    ["-m", pair.model],
    ["--mmproj", pair.mmproj],
    ["--image", image],
    ["-p", prompt],
    ["-n", "24"],
    ["--temp", "0"],
    ["-t", "2"],
    ["-c", "512"],
    ["--no-warmup"],
    verbose ? ["--verbose"] : [],
  ].flat();
  for (let attempt = 1; ; attempt++) {
    const logFile = path.join(dir, `${path.basename(image)}.${attempt}.log`);
    const out = await run(cli, args, { capture: true, log: logFile });
    const log = fs.readFileSync(logFile, "utf8");
    const whole = out.endsWith("\n\n") && (!verbose || log.includes("llama_perf_context_print"));
    if (whole || attempt === 20) return { answer: out.trim(), log };
  }
}

test("llama-mtmd-cli loads the pair, encodes an image into the projector's embeddings and answers", async () => {
  const a = path.join(dir, "a.png");
  fs.writeFileSync(a, encodePng(patternImage(96, 80, 1)));
  const { answer, log } = await mtmdCli(a, "What is in the image?", true);
  // The projector as llama.cpp reads it: a LLaVA MLP projector with a vision encoder.
  assert.match(log, /projector:\s+mlp/);
  assert.match(log, /has vision encoder/);
  // The image became imageTokens() embeddings decoded into the context.
  assert.match(log, new RegExp(`n_tokens_batch = ${imageTokens()}\\b`));
  assert.ok(answer.length > 0, `no answer; log:\n${log.slice(-2000)}`);
});

test("with llama-mtmd-cli the image steers the answer: same image same answer, another image another answer", async () => {
  const files = {
    a: path.join(dir, "a.jpg"),
    a2: path.join(dir, "a-again.jpg"),
    b: path.join(dir, "b.jpg"),
  };
  fs.writeFileSync(files.a, encodeJpeg(patternImage(120, 90, 1)));
  fs.copyFileSync(files.a, files.a2);
  fs.writeFileSync(files.b, encodeJpeg(patternImage(120, 90, 2)));
  const prompt = "Describe this picture.";
  const a = await mtmdCli(files.a, prompt);
  const a2 = await mtmdCli(files.a2, prompt);
  const b = await mtmdCli(files.b, prompt);
  assert.ok(a.answer.length > 0);
  assert.equal(a2.answer, a.answer);
  assert.notEqual(b.answer, a.answer);
});

test("Gantry's image input answers exactly as llama-mtmd-cli does (same pair, image, prompt, greedy)", async () => {
  requirePatchedBuild();
  const file = path.join(dir, "same.jpg");
  fs.writeFileSync(file, encodeJpeg(patternImage(120, 90, 3)));
  const cli = await mtmdCli(file, "Describe this picture.");

  const engine = await openVisionEngine(await visionPairPaths(), { parallel: 1 });
  try {
    const { loaded, projector } = engine;
    // llama-mtmd-cli's single-turn prompt: the marker before the text, in the model's ChatML template; then 24
    // tokens greedily, as its -n 24 --temp 0.
    const prompt = await projector.tokenize(
      `<|im_start|>user\n${projector.info.marker}Describe this picture.<|im_end|>\n<|im_start|>assistant\n`,
      [await decodeImage(loaded.context.model.llama, fs.readFileSync(file))],
    );
    const tokens = await generate(engine, engine.slots[0]!, prompt, 24);
    await prompt.dispose();
    assert.ok(tokens.length > 0);
    assert.equal(loaded.model.detokenize(tokens).trim(), cli.answer);
  } finally {
    await engine.close();
  }
});
