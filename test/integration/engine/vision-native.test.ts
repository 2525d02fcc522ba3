// Image input at the native level (server/engine/native/mtmd.ts on the patched addon), with the generated vision pair
// and the engine's own parts: a LoadedModel (one context, its step batcher and slots) and a Projector. A prompt with
// images is evaluated into a sequence the way the scheduler will do it: text chunks as ordinary prompt tokens through
// the step batcher, image chunks encoded on a worker and their embeddings decoded into the sequence's KV cells; then
// greedy generation. Fails where setup could not build the patched addon.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import type { Token } from "node-llama-cpp";
import {
  decodeImage,
  imageFromPixels,
  loadProjector,
  mtmdAvailable,
  type ImageInput,
  type Projector,
} from "../../../server/engine/native/mtmd.ts";
import { TokenSampler } from "../../../server/engine/token-sampler.ts";
import type { LoadedModel } from "../../../server/engine/loaded-model.ts";
import type { Slot } from "../../../server/engine/slot-loop.ts";
import { imageTokens, TINY_PROJECTOR, writeTinyProjector } from "../../support/gguf/vision.ts";
import { encodeBmp, encodeGif, encodeJpeg, encodePng, patternImage, solidImage } from "../../support/images.ts";
import { visionPairPaths } from "../../support/models.ts";
import { requirePatchedBuild } from "../../support/patched-engine.ts";
import {
  continueGreedy,
  generate as generateOn,
  generateFromText as generateFromTextOn,
  GREEDY,
  IMAGE_CELL,
  openVisionEngine,
  type VisionEngine,
} from "../../support/vision-engine.ts";

let engine: VisionEngine;
let loaded: LoadedModel;
let projector: Projector;
let tmp: string;

const chatPrompt = (marker: string, text: string, images: number): string =>
  `<|im_start|>user\n${marker.repeat(images)}\n${text}<|im_end|>\n<|im_start|>assistant\n`;

const generate = (slot: Slot, prompt: Parameters<typeof generateOn>[2], n: number) =>
  generateOn(engine, slot, prompt, n);
const generateFromText = (slot: Slot, tokens: Token[], n: number) => generateFromTextOn(engine, slot, tokens, n);

/** A fresh answer on `slot`: the slot is emptied first. */
async function answer(slot: Slot, text: string, images: ImageInput[], n = 24): Promise<Token[]> {
  await loaded.slots.truncate(slot, () => 0);
  const prompt = await projector.tokenize(chatPrompt(projector.info.marker, text, images.length), images);
  try {
    return await generate(slot, prompt, n);
  } finally {
    await prompt.dispose();
  }
}

const image = async (bytes: Uint8Array): Promise<ImageInput> => decodeImage(loaded.context.model.llama, bytes);
const slot = (i: number): Slot => engine.slots[i]!;

describe("image input on the patched addon (mtmd)", () => {
  before(async () => {
    requirePatchedBuild();
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-vision-native-"));
    engine = await openVisionEngine(await visionPairPaths(), { parallel: 3 });
    ({ loaded, projector } = engine);
    assert.ok(mtmdAvailable(loaded.context.model.llama), "the patched build has the mtmd bindings");
    assert.deepEqual(
      engine.slots.map((s) => s.id),
      [0, 1, 2],
    );
  });
  after(async () => {
    await engine?.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  test("a prompt splits at its marker into text, image and text chunks; the image takes its embeddings' positions", async () => {
    const img = await image(encodePng(patternImage(80, 60, 1)));
    assert.deepEqual([img.width, img.height, img.format], [80, 60, "PNG"]);
    assert.match(img.id, /^[0-9a-f]{64}$/);
    const prompt = await projector.tokenize(chatPrompt(projector.info.marker, "what is this", 1), [img]);
    try {
      assert.deepEqual(
        prompt.chunks.map((c) => c.type),
        ["text", "image", "text"],
      );
      const pic = prompt.chunks[1]!;
      assert.equal(pic.nTokens, imageTokens());
      assert.equal(pic.nPos, imageTokens());
      assert.equal(pic.type !== "text" && pic.id, img.id);
      // The text chunks are the model's own tokens of the text around the marker (BOS first).
      const first = prompt.chunks[0]!;
      assert.ok(first.type === "text");
      assert.deepEqual(first.tokens, [loaded.model.tokens.bos, ...loaded.model.tokenize("<|im_start|>user\n", true)]);
      assert.equal(
        prompt.nPos,
        prompt.chunks.reduce((n, c) => n + c.nPos, 0),
      );
    } finally {
      await prompt.dispose();
    }
    assert.deepEqual(projector.info, { marker: "<__media__>", mrope: false, nonCausalImages: false });
  });

  test("the context's threadpool sleeps once paused (no core spent polling) and the next decode wakes it: same answers", async () => {
    const native = loaded.slots.native;
    assert.ok(native.threadpoolThreads > 1, "the context has a persistent threadpool");
    assert.ok(native.pauseThreadpool, "the patched build pauses it");
    const pic = await image(encodePng(patternImage(64, 64, 7)));
    const first = await answer(slot(0), "What is it?", [pic]);
    assert.equal(native.pauseThreadpool(), true);
    assert.equal(native.pauseThreadpool(), true, "pausing a paused pool is harmless");
    // Paused, the pool's threads sleep: the process spends next to no CPU while idle. Unpaused, they would poll for the
    // next decode (ggml's poll level 50: tens to hundreds of milliseconds of a core after each decode).
    const cpu = process.cpuUsage();
    await new Promise((r) => setTimeout(r, 300));
    const { user, system } = process.cpuUsage(cpu);
    assert.ok(user + system < 40_000, `${(user + system) / 1000} ms of CPU in 300 ms with the pool paused`);
    // The next decode (the encode runs between decodes, with the pool paused by the step batcher) wakes the pool.
    assert.deepEqual(await answer(slot(1), "What is it?", [pic]), first);
  });

  test("greedy answers: the same image gives the same tokens on any sequence, another image other tokens", async () => {
    const a = encodeJpeg(patternImage(120, 90, 1));
    const b = encodeJpeg(patternImage(120, 90, 2));
    const first = await answer(slot(0), "Describe the picture.", [await image(a)]);
    const again = await answer(slot(1), "Describe the picture.", [await image(Buffer.from(a))]);
    const other = await answer(slot(2), "Describe the picture.", [await image(b)]);
    const none = await answer(slot(0), "Describe the picture.", []);
    assert.ok(first.length >= 4, `only ${first.length} tokens`);
    assert.deepEqual(again, first);
    assert.notDeepEqual(other, first);
    assert.notDeepEqual(none, first);
  });

  test("every decodable format: PNG, JPEG, BMP and GIF (its first frame) of one picture all steer the answer", async () => {
    const pic = patternImage(64, 64, 5);
    const png = await image(encodePng(pic));
    const bmp = await image(encodeBmp(pic));
    const gif = await image(encodeGif([pic, solidImage(64, 64, [0, 0, 255])]));
    const jpeg = await image(encodeJpeg(pic, 95));
    assert.deepEqual([png.format, bmp.format, gif.format, jpeg.format], ["PNG", "BMP", "GIF", "JPEG"]);
    // Lossless formats decode to exactly the pixels written.
    assert.deepEqual(Buffer.from(png.pixels), Buffer.from(pic.rgb));
    assert.deepEqual(Buffer.from(bmp.pixels), Buffer.from(pic.rgb));
    for (const img of [png, bmp, gif, jpeg]) assert.equal(img.pixels.length, 64 * 64 * 3);
    // Pixels from elsewhere (a decoder outside the addon) work the same as decoded ones.
    const fromPixels = imageFromPixels(64, 64, pic.rgb);
    assert.deepEqual(await answer(slot(1), "what", [fromPixels]), await answer(slot(0), "what", [png]));
    // The GIF's first frame is the picture (up to its 256-color palette), not the blue second frame.
    const meanDiff = (a: Uint8Array, b: Uint8Array) => a.reduce((n, v, i) => n + Math.abs(v - b[i]!), 0) / a.length;
    const blueRgb = solidImage(64, 64, [0, 0, 255]).rgb;
    assert.ok(meanDiff(gif.pixels, pic.rgb) < meanDiff(gif.pixels, blueRgb) / 2, "the GIF decodes to its first frame");
    assert.ok(meanDiff(jpeg.pixels, pic.rgb) < 10, `JPEG differs by ${meanDiff(jpeg.pixels, pic.rgb)}`);
    const blue = await image(encodePng(solidImage(64, 64, [0, 0, 255])));
    assert.notDeepEqual(await answer(slot(0), "what", [gif]), await answer(slot(1), "what", [blue]));
  });

  test("several images in one prompt, in order: each is decoded at its place and their order matters", async () => {
    const imgs = await Promise.all([1, 2, 3].map((s) => image(encodePng(patternImage(70, 70, s)))));
    const prompt = await projector.tokenize(
      `<|im_start|>user\nfirst ${projector.info.marker} second ${projector.info.marker} third ${projector.info.marker} compare them<|im_end|>\n<|im_start|>assistant\n`,
      imgs,
    );
    try {
      assert.deepEqual(
        prompt.chunks.map((c) => c.type),
        ["text", "image", "text", "image", "text", "image", "text"],
      );
      assert.deepEqual(
        prompt.chunks.filter((c) => c.type === "image").map((c) => c.type !== "text" && c.id),
        imgs.map((i) => i.id),
      );
      await loaded.slots.truncate(slot(0), () => 0);
      const inOrder = await generate(slot(0), prompt, 16);
      // The sequence holds the chunks in order: text tokens, an image's positions, text, … then the answer.
      const cells = prompt.chunks.flatMap((c) =>
        c.type === "text" ? c.tokens : new Array<Token>(c.nPos).fill(IMAGE_CELL),
      );
      assert.deepEqual(slot(0).tokens.slice(0, prompt.nPos), cells);
      assert.deepEqual(slot(0).tokens.slice(prompt.nPos), inOrder.slice(0, slot(0).tokens.length - prompt.nPos));
      assert.ok(inOrder.length > 0);
    } finally {
      await prompt.dispose();
    }
    const swapped = await answer(slot(1), "compare them", [imgs[2]!, imgs[1]!, imgs[0]!]);
    const straight = await answer(slot(2), "compare them", imgs);
    assert.notDeepEqual(swapped, straight);
  });

  test("evalChunks (the whole prompt in the context's batches) matches the step-batcher path; encodings are reused by id", async () => {
    const img = await image(encodePng(patternImage(100, 100, 7)));
    const text = chatPrompt(projector.info.marker, "look", 2);
    const viaBatcher = await answer(slot(0), "look", [img, img]);
    const prompt = await projector.tokenize(text, [img, img]);
    const encoded = new Map();
    try {
      const s = slot(1);
      await loaded.slots.truncate(s, () => 0);
      // Small batches: text chunks are split across several decodes.
      const r = await projector.evalChunks(loaded.context, prompt, {
        sequenceId: s.id,
        position: 0,
        batchSize: 4,
        encoded,
      });
      assert.equal(r.position, prompt.nPos);
      // The same image twice is encoded once.
      assert.equal(r.encodes, 1);
      assert.equal(encoded.size, 1);
      // Greedy generation from the evaluated prompt, as the step batcher would continue it.
      const sampler = new TokenSampler(loaded.slots.native, GREEDY, 1, 0, undefined);
      const history: Token[] = [];
      try {
        const first = (await sampler.sample(loaded.slots.sampleToken, r.logitIndex, history)) as Token;
        s.tokens.push(...new Array<Token>(r.position).fill(IMAGE_CELL));
        assert.deepEqual(await continueGreedy(engine, s, first, 24, sampler, history), viaBatcher);
      } finally {
        sampler.dispose();
      }
      await loaded.slots.truncate(s, () => 0);
      const again = await projector.evalChunks(loaded.context, prompt, { sequenceId: s.id, position: 0, encoded });
      assert.equal(again.encodes, 0);
      // What the sequence now holds, for the slot's bookkeeping (evalChunks decodes outside the step batcher).
      s.tokens.push(...new Array<Token>(again.position).fill(IMAGE_CELL));
    } finally {
      for (const m of encoded.values()) await m.dispose();
      await prompt.dispose();
    }
  });

  test("a follow-up turn keeps the image's KV cells: only the new chunks are evaluated, with the same answer", async () => {
    const img = await image(encodePng(patternImage(90, 90, 11)));
    const first = `<|im_start|>user\n${projector.info.marker}\nwhat is it<|im_end|>\n<|im_start|>assistant\n`;
    const turn1 = await projector.tokenize(first, [img]);
    const s = slot(0);
    await loaded.slots.truncate(s, () => 0);
    const reply = await generate(s, turn1, 8);
    await turn1.dispose();
    const replyText = loaded.model.detokenize(reply, true);
    const followUp = `${first}${replyText}<|im_end|>\n<|im_start|>user\nand the colors<|im_end|>\n<|im_start|>assistant\n`;
    const turn2 = await projector.tokenize(followUp, [img]);
    try {
      // The held prefix: the first turn's text and image chunks (by image id), then the part of the last text chunk
      // that matches what the slot holds after them.
      const [t0, pic, t2] = turn2.chunks;
      assert.ok(t0?.type === "text" && pic?.type === "image" && t2?.type === "text");
      assert.equal(pic.id, img.id);
      assert.deepEqual(s.tokens.slice(0, t0.nPos), t0.tokens);
      const imageEnd = t0.nPos + pic.nPos;
      let keep = imageEnd;
      while (keep < s.tokens.length && s.tokens[keep] === t2.tokens[keep - imageEnd]) keep++;
      assert.ok(keep > imageEnd, "the text after the image is reused too");
      await loaded.slots.truncate(s, () => Math.min(keep, imageEnd + t2.tokens.length - 1));
      const reusedTail = t2.tokens.slice(s.tokens.length - imageEnd);
      const reused = await generateFromText(s, reusedTail, 12);
      // From scratch on another sequence: the same answer.
      await loaded.slots.truncate(slot(1), () => 0);
      const fresh = await generate(slot(1), turn2, 12);
      assert.deepEqual(reused, fresh);
    } finally {
      await turn2.dispose();
    }
  });

  test("bad image data fails with a clear error and breaks nothing", async () => {
    const pic = patternImage(64, 64, 3);
    const png = encodePng(pic);
    const llama = loaded.context.model.llama;
    // stb_image alone would decode a truncated JPEG, GIF or BMP, filling the missing part with gray or black.
    const cut = (bytes: Uint8Array, keep = 0.9) => bytes.subarray(0, Math.floor(bytes.length * keep));
    const cases: Array<[string, Uint8Array, RegExp]> = [
      ["text", Buffer.from("hello, this is not an image"), /not a supported image/],
      ["empty", new Uint8Array(0), /not a supported image/],
      ["truncated PNG", cut(png, 0.5), /the PNG image is truncated/],
      ["truncated JPEG", cut(encodeJpeg(pic)), /the JPEG image is truncated/],
      ["JPEG without its end marker", cut(encodeJpeg(pic), 0.999), /the JPEG image is truncated/],
      ["truncated GIF", cut(encodeGif([pic])), /the GIF image is truncated/],
      ["truncated BMP", cut(encodeBmp(pic)), /the BMP image is truncated/],
      ["PNG header only", png.subarray(0, 40), /PNG image/],
      ["WebP", Buffer.concat([Buffer.from("RIFF\x10\x00\x00\x00WEBPVP8 "), Buffer.alloc(16)]), /WebP/],
      ["corrupt JPEG", Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 16, 1, 2, 3]), /JPEG image/],
      ["PSD", Buffer.concat([Buffer.from("8BPS"), Buffer.alloc(40)]), /not a supported image/],
    ];
    for (const [what, bytes, message] of cases)
      await assert.rejects(decodeImage(llama, bytes), message, `${what} should be refused with ${message}`);
    await assert.rejects(decodeImage(llama, png, { maxPixels: 64 * 63 }), /too large: 64x64 pixels/);
    // Pixels of the wrong length are refused before any native call.
    assert.throws(() => imageFromPixels(4, 4, new Uint8Array(10)), /needs 48 bytes/);
    // One image per marker.
    const img = await image(png);
    await assert.rejects(
      projector.tokenize(chatPrompt(projector.info.marker, "two markers", 2), [img]),
      /the prompt has 2 image markers for 1 image/,
    );
    // Encoding a text chunk is refused.
    const prompt = await projector.tokenize(chatPrompt(projector.info.marker, "x", 1), [img]);
    await assert.rejects(projector.encode(prompt, 0), /not an image/);
    await prompt.dispose();
    // Still serving.
    assert.ok((await answer(slot(0), "fine?", [img], 4)).length > 0);
  });

  test("a projector that does not fit the model, or a file that is no projector, is refused with llama.cpp's reason", async () => {
    const narrow = path.join(tmp, "narrow-mmproj.gguf");
    await writeTinyProjector(narrow, { shape: { ...TINY_PROJECTOR, nEmbdText: 32 } });
    await assert.rejects(
      loadProjector(loaded.model, narrow, { threads: 2 }),
      /mismatch between text model \(n_embd = 64\) and mmproj \(n_embd = 32\)/,
    );
    await assert.rejects(
      loadProjector(loaded.model, loaded.spec.modelPath, { threads: 2 }),
      /cannot load the projector/,
    );
    await assert.rejects(
      loadProjector(loaded.model, path.join(tmp, "missing.gguf"), { threads: 2 }),
      /cannot load the projector/,
    );
  });

  test("image encoding runs on a worker: the event loop keeps turning during a long encode", async () => {
    // A projector with a heavier encoder (1024 patches, 256 wide): one encode takes a noticeable time on CPU.
    const heavy = path.join(tmp, "heavy-mmproj.gguf");
    await writeTinyProjector(heavy, {
      shape: { imageSize: 448, patchSize: 14, nEmbd: 256, nHead: 4, nFf: 512, nLayer: 3, nEmbdText: 64 },
    });
    const big = await loadProjector(loaded.model, heavy, { threads: 2, warmup: false });
    try {
      const prompt = await big.tokenize(chatPrompt(big.info.marker, "x", 1), [
        await image(encodePng(patternImage(448, 448, 2))),
      ]);
      try {
        let ticks = 0;
        const timer = setInterval(() => ticks++, 1);
        const started = performance.now();
        const media = await big.encode(prompt, 1);
        const ms = performance.now() - started;
        clearInterval(timer);
        assert.equal(media.nTokens, 1024);
        assert.equal(media.bytes, 1024 * 64 * 4);
        await media.dispose();
        // A blocked event loop runs no timer until the encode returns.
        assert.ok(ticks >= Math.min(5, ms / 20), `${ticks} timer ticks during a ${ms.toFixed(0)} ms encode`);
      } finally {
        await prompt.dispose();
      }
    } finally {
      await big.dispose();
    }
  });
});
