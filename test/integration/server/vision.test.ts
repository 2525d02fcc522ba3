// Images in chat, through a `gantry serve` process with the generated vision pair (test/support/gguf/vision.ts: a tiny
// llama and a LLaVA-style projector, created from uploaded files as a client would) and the real `openai` and
// `ollama` npm clients: data URLs and base64 images, several per message and across turns, greedy answers that the
// image steers, the cached prefix reused by a follow-up turn (no second encode, by the server's own metric), 4 image
// and 4 text requests at once, and every kind of bad image answered with a 400 in each API's own error shape.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import Anthropic from "@anthropic-ai/sdk";
import { Ollama } from "ollama";
import OpenAI from "openai";
import { imageTokens } from "../../support/gguf/vision.ts";
import {
  encodeBmp,
  encodeGif,
  dataUrl,
  encodeJpeg,
  encodePng,
  imageMessage,
  patternImage,
  solidImage,
  type RgbImage,
} from "../../support/images.ts";
import { tinyModelPath, visionPairPaths } from "../../support/models.ts";
import { startHubServer, type HubServer } from "../../support/hub-server.ts";
import { requirePatchedBuild } from "../../support/patched-engine.ts";
import { createModel, startTestServer, type TestServer } from "../../support/server.ts";

let srv: TestServer;
let ollama: Ollama;
let openai: OpenAI;
let anthropic: Anthropic;
let remote: http.Server;
let hub: HubServer;
let remoteUrl: string;

const IMAGE_A = encodePng(patternImage(120, 90, 1));
const IMAGE_B = encodePng(patternImage(120, 90, 2));
const GREEDY = { temperature: 0, num_predict: 12, repeat_penalty: 1 };

async function upload(file: string): Promise<string> {
  const bytes = fs.readFileSync(file);
  const digest = `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
  const r = await fetch(`${srv.url}/api/blobs/${digest}`, { method: "POST", body: bytes });
  assert.equal(r.status, 201, await r.text());
  return digest;
}

/** One image and a question through the openai client (greedy); the answer text and prompt tokens. */
async function askOpenAI(images: Buffer[], text = "Describe this picture.") {
  const r = await openai.chat.completions.create({
    model: "vis",
    temperature: 0,
    max_tokens: 12,
    messages: [
      imageMessage(
        text,
        images.map((b) => dataUrl(b)),
      ),
    ],
  });
  return { text: r.choices[0]!.message.content ?? "", promptTokens: r.usage!.prompt_tokens };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- either API's error shape, read by the assertions
async function post(path: string, body: unknown): Promise<{ status: number; body: any }> {
  const r = await fetch(`${srv.url}${path}`, { method: "POST", body: JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
}

/** The server's image encodes so far (gantry_image_encode_seconds_count for the model). */
async function encodes(model = "vis:latest"): Promise<number> {
  const text = await (await fetch(`${srv.url}/metrics`)).text();
  const m = new RegExp(`^gantry_image_encode_seconds_count\\{model="${model}"\\} (\\d+)`, "m").exec(text);
  return m ? Number(m[1]) : 0;
}

before(async () => {
  requirePatchedBuild();
  // A loopback server standing in for remote image hosts: an image, a 404, a large file, and one that never answers.
  remote = http.createServer((req, res) => {
    if (req.url === "/a.png") res.end(IMAGE_A);
    else if (req.url === "/big.bmp") res.end(encodeBmp(patternImage(200, 200, 3)));
    else if (req.url === "/hang.png") res.writeHead(200).write(IMAGE_A.subarray(0, 10));
    else res.writeHead(404).end("no such image");
  });
  await new Promise<void>((r) => remote.listen(0, "127.0.0.1", r));
  remoteUrl = `http://127.0.0.1:${(remote.address() as AddressInfo).port}`;
  // A hub repo as vision models are published: the model, its projector in F16, and a decoy "Q4_0 projector" that is
  // really a text model (pulling it would break image input).
  hub = await startHubServer();
  const pairFiles = await visionPairPaths();
  await hub.register({
    org: "acme",
    repo: "TinyVision-GGUF",
    files: {
      "TinyVision-Q4_K_M.gguf": pairFiles.model,
      "mmproj-TinyVision-F16.gguf": pairFiles.mmproj,
      "mmproj-TinyVision-Q4_0.gguf": await tinyModelPath({ seed: 5 }),
    },
  });
  srv = await startTestServer({
    env: {
      GANTRY_MAX_IMAGE_SIZE: "64kb",
      GANTRY_REMOTE_IMAGE_TIMEOUT: "2s",
      GANTRY_KEEP_ALIVE: "1h",
      GANTRY_HUB_URL: hub.url,
    },
  });
  ollama = new Ollama({ host: srv.url });
  openai = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: "placeholder" });
  anthropic = new Anthropic({ baseURL: srv.url, apiKey: "placeholder", maxRetries: 0 });
  const pair = await visionPairPaths();
  // As `gantry create` with two FROM lines sends it: both files uploaded as blobs; the server tells the projector by
  // its GGUF architecture ("clip"), whatever the file is called.
  const r = await post("/api/create", {
    model: "vis",
    files: { "weights.gguf": await upload(pair.model), "extra.gguf": await upload(pair.mmproj) },
    stream: false,
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  await createModel(srv.url, "tiny", await tinyModelPath());
});
after(async () => {
  await srv?.stop();
  await hub?.close();
  remote?.closeAllConnections();
  remote?.close();
});

describe("a vision model", () => {
  test("/api/show lists the vision capability and the projector; tags, /v1/models and the Modelfile show it", async () => {
    const show = await ollama.show({ model: "vis" });
    assert.deepEqual(show.capabilities, ["completion", "vision"]);
    const info = (show as unknown as { projector_info: Record<string, unknown> }).projector_info;
    assert.equal(info["general.architecture"], "clip");
    assert.equal(info["clip.projector_type"], "mlp");
    assert.deepEqual(show.details.families, ["llama", "clip"]);
    assert.equal((show.modelfile.match(/^FROM /gm) ?? []).length, 2, show.modelfile);
    const tags = await ollama.list();
    assert.deepEqual(tags.models.find((m) => m.name === "vis:latest")?.details.families, ["llama", "clip"]);
    const models = (await (await fetch(`${srv.url}/v1/models`)).json()) as {
      data: Array<{ id: string; capabilities?: string[] }>;
    };
    assert.deepEqual(models.data.find((m) => m.id === "vis:latest")?.capabilities, ["completion", "vision"]);
    assert.deepEqual(models.data.find((m) => m.id === "tiny:latest")?.capabilities, ["completion"]);
  });

  test("openai client, data URL: the image steers the greedy answer (same image same answer, another image another)", async () => {
    const a = await askOpenAI([IMAGE_A]);
    const a2 = await askOpenAI([IMAGE_A]);
    const b = await askOpenAI([IMAGE_B]);
    assert.ok(a.text.length > 0);
    assert.equal(a2.text, a.text);
    assert.notEqual(b.text, a.text);
    // The image's positions count as prompt tokens.
    const textOnly = await openai.chat.completions.create({
      model: "vis",
      max_tokens: 1,
      messages: [{ role: "user", content: [{ type: "text", text: "Describe this picture." }] }],
    });
    assert.ok(a.promptTokens >= textOnly.usage!.prompt_tokens + imageTokens());
  });

  test("every format: JPEG, PNG, WebP, GIF (first frame) and BMP data URLs of one picture give one answer", async () => {
    // A color of the GIF encoder's 3-3-2 palette, so every lossless format holds exactly these pixels.
    const img = solidImage(64, 64, [219, 36, 85]);
    const png = await askOpenAI([encodePng(img)]);
    const { default: encodeWebp, init } = await import("@jsquash/webp/encode.js");
    const wasm = await (
      globalThis as unknown as { WebAssembly: { compile(b: Buffer): Promise<unknown> } }
    ).WebAssembly.compile(fs.readFileSync(new URL(import.meta.resolve("@jsquash/webp/codec/enc/webp_enc.wasm"))));
    await (init as unknown as (m: unknown) => Promise<unknown>)(wasm);
    const webp = Buffer.from(
      await encodeWebp(
        { data: rgba(img), width: 64, height: 64, colorSpace: "srgb" } as Parameters<typeof encodeWebp>[0],
        {
          lossless: 1,
        },
      ),
    );
    assert.equal(webp.subarray(8, 12).toString(), "WEBP");
    // Lossless formats decode to the same pixels, so the same answer; JPEG is close to them.
    const lossless: Array<[string, Buffer]> = [
      ["BMP", encodeBmp(img)],
      ["GIF", encodeGif([img, solidImage(64, 64, [0, 0, 255])])],
      ["WebP", webp],
    ];
    for (const [format, bytes] of lossless) assert.equal((await askOpenAI([bytes])).text, png.text, format);
    assert.ok((await askOpenAI([encodeJpeg(img)])).text.length > 0);
  });

  test("ollama client: /api/chat messages[].images and /api/generate images", async () => {
    const chat = await ollama.chat({
      model: "vis",
      messages: [{ role: "user", content: "Describe this picture.", images: [IMAGE_A.toString("base64")] }],
      options: GREEDY,
    });
    assert.ok(chat.message.content.length > 0);
    assert.equal(chat.prompt_eval_count > imageTokens(), true);
    assert.ok(chat.eval_count > 0 && chat.eval_duration > 0 && chat.prompt_eval_duration > 0);
    const gen = await ollama.generate({
      model: "vis",
      prompt: "Describe this picture.",
      images: [IMAGE_A],
      options: GREEDY,
    });
    assert.ok(gen.response!.length > 0);
    const genB = await ollama.generate({
      model: "vis",
      prompt: "Describe this picture.",
      images: [IMAGE_B],
      options: GREEDY,
    });
    assert.notEqual(genB.response, gen.response);
  });

  test("several images in one message and across turns: each takes its place in the prompt", async () => {
    const one = await askOpenAI([IMAGE_A]);
    const two = await askOpenAI([IMAGE_A, IMAGE_B]);
    const swapped = await askOpenAI([IMAGE_B, IMAGE_A]);
    assert.equal(two.promptTokens, one.promptTokens + imageTokens());
    assert.notEqual(swapped.text, two.text, "the images' order matters");
    const turns = await ollama.chat({
      model: "vis",
      options: GREEDY,
      messages: [
        { role: "user", content: "What is this?", images: [IMAGE_A.toString("base64")] },
        { role: "assistant", content: "A pattern." },
        { role: "user", content: "And this one?", images: [IMAGE_B.toString("base64"), IMAGE_A.toString("base64")] },
      ],
    });
    assert.ok(turns.message.content.length > 0);
    const twoImages = await ollama.chat({
      model: "vis",
      options: { ...GREEDY, num_predict: 1 },
      messages: [
        { role: "user", content: "What is this?", images: [IMAGE_A.toString("base64")] },
        { role: "assistant", content: "A pattern." },
        { role: "user", content: "And this one?", images: [IMAGE_B.toString("base64")] },
      ],
    });
    assert.equal(turns.prompt_eval_count, twoImages.prompt_eval_count + imageTokens());
  });

  test("a follow-up turn about the same image reuses the cached prefix: the image is not encoded again", async () => {
    const image = encodePng(patternImage(64, 64, 9)).toString("base64");
    const first = [{ role: "user", content: "Describe this picture.", images: [image] }];
    const before = await encodes();
    const answer = await ollama.chat({ model: "vis", messages: first, options: GREEDY });
    assert.equal(await encodes(), before + 1);
    const followUp = await ollama.chat({
      model: "vis",
      options: GREEDY,
      messages: [...first, { role: "assistant", content: answer.message.content }, { role: "user", content: "More?" }],
    });
    assert.ok(followUp.message.content.length > 0);
    assert.equal(await encodes(), before + 1, "the follow-up turn encoded the image again");
    // The same conversation with another image in its place is encoded, and answers otherwise.
    const other = encodePng(patternImage(64, 64, 10)).toString("base64");
    await ollama.chat({ model: "vis", messages: [{ ...first[0]!, images: [other] }], options: GREEDY });
    assert.equal(await encodes(), before + 2);
  });

  test("4 image requests and 4 text requests at once all complete", async () => {
    const results = await Promise.all([
      ...[1, 2, 3, 4].map((i) => askOpenAI([encodePng(patternImage(64, 64, 20 + i))])),
      ...[1, 2, 3, 4].map((i) =>
        ollama
          .chat({ model: "vis", messages: [{ role: "user", content: `Count to ${i}.` }], options: GREEDY })
          .then((r) => ({ text: r.message.content, promptTokens: r.prompt_eval_count })),
      ),
    ]);
    assert.equal(results.length, 8);
    for (const r of results) assert.ok(r.text.length > 0);
  });

  test("a pull from the hub takes the repo's mmproj (F16) and the pulled model answers about images", async () => {
    const pulled = await ollama.pull({ model: "hf.co/acme/TinyVision-GGUF", stream: false });
    assert.equal(pulled.status, "success");
    const show = await ollama.show({ model: "hf.co/acme/TinyVision-GGUF" });
    assert.deepEqual(show.capabilities, ["completion", "vision"]);
    const r = await openai.chat.completions.create({
      model: "hf.co/acme/TinyVision-GGUF",
      temperature: 0,
      max_tokens: 12,
      messages: [imageMessage("Describe this picture.", [dataUrl(IMAGE_A)])],
    });
    // The same files as "vis": the same answer.
    assert.equal(r.choices[0]!.message.content, (await askOpenAI([IMAGE_A])).text);
  });

  test("a remote image URL is fetched (loopback test host)", async () => {
    const r = await openai.chat.completions.create({
      model: "vis",
      temperature: 0,
      max_tokens: 12,
      messages: [imageMessage("Describe this picture.", [`${remoteUrl}/a.png`])],
    });
    assert.equal(r.choices[0]!.message.content, (await askOpenAI([IMAGE_A])).text);
  });
});

const rgba = (img: RgbImage): Uint8ClampedArray => {
  const out = new Uint8ClampedArray(img.width * img.height * 4);
  for (let p = 0, q = 0; q < out.length; p += 3, q += 4) {
    out[q] = img.rgb[p]!;
    out[q + 1] = img.rgb[p + 1]!;
    out[q + 2] = img.rgb[p + 2]!;
    out[q + 3] = 255;
  }
  return out;
};

describe("bad images answer 400 in each API's shape, and the server goes on", () => {
  const openaiImage = (url: string, model = "vis") => ({
    model,
    max_tokens: 4,
    messages: [
      {
        role: "user",
        content: [
          { type: "text", text: "What is this?" },
          { type: "image_url", image_url: { url } },
        ],
      },
    ],
  });
  const png = encodePng(patternImage(32, 32, 4));
  const inputImage = (bytes: Buffer) => ({
    type: "input_image" as const,
    image_url: dataUrl(bytes),
    detail: "auto" as const,
  });
  /** The message of an Anthropic error body, as the SDK holds it. */
  const anthropicMessage = (e: InstanceType<typeof Anthropic.APIError>) =>
    (e.error as { error: { message: string } }).error.message;
  const textBlock = { type: "text" as const, text: "What is this?" };
  const imageBlock = (bytes: Buffer) => ({
    type: "image" as const,
    source: { type: "base64" as const, media_type: "image/png" as const, data: bytes.toString("base64") },
  });
  const cases: Array<[string, string, RegExp]> = [
    ["not an image", dataUrl(Buffer.from("hello, this is text")), /content\.1\.image_url: not an image/],
    [
      "a truncated image",
      dataUrl(png.subarray(0, png.length - 40)),
      /invalid image in messages\.0\.content\.1\.image_url: .*(truncated|corrupt)/i,
    ],
    [
      "over the size limit",
      dataUrl(encodeBmp(patternImage(200, 200, 5)), "image/bmp"),
      /content\.1\.image_url: the image is .* over the limit of 64\.0 KiB \(GANTRY_MAX_IMAGE_SIZE\)/,
    ],
    [
      "an unsupported format",
      dataUrl(Buffer.from([0x49, 0x49, 0x2a, 0x00, 8, 0, 0, 0, 0, 0]), "image/tiff"),
      /unsupported image format TIFF \(supported: JPEG, PNG, WebP, GIF, BMP\)/,
    ],
    ["a malformed data URL (no comma)", "data:image/png;base64", /content\.1\.image_url: malformed data URL/],
    ["a data URL that is not base64", "data:image/png,abc", /not base64-encoded/],
    ["a data URL with broken base64", "data:image/png;base64,***", /malformed data URL: its data is not base64/],
    ["a remote URL that fails", `${"REMOTE"}/missing.png`, /fetching the image at .* failed: HTTP 404/],
    ["a remote URL that is too large", `${"REMOTE"}/big.bmp`, /image at .* is over the limit of 64\.0 KiB/],
    ["a remote URL that never finishes", `${"REMOTE"}/hang.png`, /did not arrive within 2 s/],
    ["a URL of another scheme", "file:///etc/passwd", /file: URLs are not supported/],
  ];
  for (const [what, url, message] of cases) {
    test(`OpenAI: ${what}`, async () => {
      const r = await post("/v1/chat/completions", openaiImage(url.replace("REMOTE", remoteUrl)));
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.match(r.body.error.message, message);
      assert.equal(r.body.error.type, "invalid_request_error");
      assert.equal(r.body.error.param, "messages.0.content.1.image_url");
    });
  }

  test("Ollama: not base64, not an image, truncated JPEG; /api/generate too", async () => {
    const jpeg = encodeJpeg(patternImage(64, 64, 6));
    const chat = (images: string[]) =>
      post("/api/chat", { model: "vis", stream: false, messages: [{ role: "user", content: "hi", images }] });
    let r = await chat(["not base64!!"]);
    assert.deepEqual([r.status, r.body], [400, { error: "invalid messages.0.images.0: not base64 image data" }]);
    r = await chat([Buffer.from("plain text").toString("base64")]);
    assert.equal(r.status, 400);
    assert.match(r.body.error, /^invalid messages\.0\.images\.0: not an image/);
    r = await chat([jpeg.subarray(0, jpeg.length / 2).toString("base64")]);
    assert.equal(r.status, 400);
    assert.match(r.body.error, /^invalid image in messages\.0\.images\.0: .*truncated/i);
    r = await post("/api/generate", { model: "vis", prompt: "hi", stream: false, images: ["AAAA"] });
    assert.equal(r.status, 400);
    assert.match(r.body.error, /^invalid images\.0: not an image/);
  });

  test("images to a model without a projector: 400 naming the model and the caller's field, in each API's shape", async () => {
    const refused = /model "tiny:latest" does not support images: it has no vision projector/;
    const chat = await openai.chat.completions
      .create({ model: "tiny", max_tokens: 4, messages: [imageMessage("What is this?", [dataUrl(png)])] })
      .catch((e: unknown) => e);
    assert.ok(chat instanceof OpenAI.BadRequestError, String(chat));
    assert.match(chat.message, refused);
    // The OpenAI APIs name the content part that holds the image, not Ollama's `messages.0.images`.
    assert.equal(chat.param, "messages.0.content.1.image_url");
    const input = [
      { role: "user" as const, content: [{ type: "input_text" as const, text: "What is this?" }, inputImage(png)] },
    ];
    const resp = await openai.responses.create({ model: "tiny", input }).catch((e: unknown) => e);
    assert.ok(resp instanceof OpenAI.BadRequestError, String(resp));
    assert.match(resp.message, refused);
    assert.equal(resp.param, "input.0.content.1.image_url");
    const msg = await anthropic.messages
      .create({ model: "tiny", max_tokens: 4, messages: [{ role: "user", content: [textBlock, imageBlock(png)] }] })
      .catch((e: unknown) => e);
    assert.ok(msg instanceof Anthropic.BadRequestError, String(msg));
    assert.match(anthropicMessage(msg), refused);
    const images = [png.toString("base64")];
    await assert.rejects(
      ollama.chat({ model: "tiny", messages: [{ role: "user", content: "hi", images }] }),
      (e: Error & { status_code?: number }) => e.status_code === 400 && refused.test(e.message),
    );
  });

  test("an image the engine cannot decode is named in the caller's field on /v1/responses and /v1/messages", async () => {
    const truncated = png.subarray(0, png.length - 40);
    const input = [
      { role: "user" as const, content: [{ type: "input_text" as const, text: "hi" }, inputImage(truncated)] },
    ];
    const resp = await openai.responses.create({ model: "vis", input }).catch((e: unknown) => e);
    assert.ok(resp instanceof OpenAI.BadRequestError, String(resp));
    assert.match(resp.message, /invalid image in input\.0\.content\.1\.image_url: .*(truncated|corrupt)/i);
    assert.equal(resp.param, "input.0.content.1.image_url");
    const msg = await anthropic.messages
      .create({
        model: "vis",
        max_tokens: 4,
        messages: [{ role: "user", content: [textBlock, imageBlock(truncated)] }],
      })
      .catch((e: unknown) => e);
    assert.ok(msg instanceof Anthropic.BadRequestError, String(msg));
    assert.match(anthropicMessage(msg), /invalid image in messages\.0\.content\.1\.source: .*(truncated|corrupt)/i);
  });

  test("after all of them, the same image gets the same answer as before", async () => {
    const a = await askOpenAI([IMAGE_A]);
    const b = await askOpenAI([IMAGE_A]);
    assert.equal(a.text, b.text);
    assert.ok(a.text.length > 0);
  });
});
