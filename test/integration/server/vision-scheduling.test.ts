// Image requests get the scheduler's guarantees, as text requests do, through a `gantry serve` process, the real
// `openai` and `ollama` clients and fetch, with the generated vision pair: a client that disconnects mid-stream or
// while its images are still being encoded frees its sequence (the queued request gets it; the loop goes on and answers
// as before), a full queue answers 503, keep_alive 0 unloads the model with its projector and the next request loads
// it again with the same greedy answer, responses and /metrics count the images' positions with real durations, and
// an image is encoded once for every sequence that uses it (the engine's encode cache, by the encode metric).
// Streams a test holds open come from a pair that practically never stops, with a 131,072-token context (never "long
// enough on this machine").
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { Ollama } from "ollama";
import OpenAI from "openai";
import { imageTokens } from "../../support/gguf/vision.ts";
import { dataUrl, encodeBmp, encodePng, imageMessage, patternImage } from "../../support/images.ts";
import { visionPairPaths } from "../../support/models.ts";
import { requirePatchedBuild } from "../../support/patched-engine.ts";
import { createVisionModel, startTestServer, type TestServer } from "../../support/server.ts";

let srv: TestServer;
let ollama: Ollama;
let openai: OpenAI;

const png = (seed: number, side = 64) => encodePng(patternImage(side, side, seed));
const b64 = (bytes: Buffer) => bytes.toString("base64");
const GREEDY = { temperature: 0, num_predict: 12, repeat_penalty: 1 };

/** A model's value of a metric (gauge, counter, or a histogram's _count), 0 when absent. */
/** A counter of the model, summed over its other labels (gantry_prompt_tokens_total: cached and not). */
async function metric(name: string, model: string): Promise<number> {
  const text = await (await fetch(`${srv.url}/metrics`)).text();
  const lines = text.split("\n").filter((l) => l.startsWith(`${name}{`) && l.includes(`model="${model}:latest"`));
  return lines.reduce((sum, l) => sum + Number(l.split(" ").pop()), 0);
}

/** Generation requests being served or queued (gantry_in_flight_requests). */
async function inFlight(): Promise<number> {
  const text = await (await fetch(`${srv.url}/metrics`)).text();
  return Number(/^gantry_in_flight_requests (\S+)/m.exec(text)?.[1] ?? NaN);
}

const encodes = (model: string) => metric("gantry_image_encode_seconds_count", model);

/** Polls until `check` holds; fails naming `what` after `ms` (a bound far above any machine's need, not a timing). */
async function until(what: string, check: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    assert.ok(Date.now() < deadline, `${what}: not after ${ms / 1000} s`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/**
 * Starts an endless image stream on `model` through the openai client and resolves once its first chunk arrived; the
 * returned controller disconnects it.
 */
async function holdImageStream(image: Buffer, model = "endless"): Promise<AbortController> {
  const ac = new AbortController();
  const stream = await openai.chat.completions.create(
    {
      model,
      stream: true,
      max_tokens: 100_000,
      messages: [imageMessage("Tell me everything about this picture.", [dataUrl(image)])],
    },
    { signal: ac.signal },
  );
  const it = stream[Symbol.asyncIterator]();
  const first = await it.next();
  assert.equal(first.done, false);
  // Keep reading in the background until the disconnect (the stream never ends by itself).
  void (async () => {
    try {
      for (let r = await it.next(); !r.done; r = await it.next());
    } catch {
      // the disconnect
    }
  })();
  return ac;
}

/** The greedy answer to a question about `image` (Ollama /api/chat). */
async function ask(image: Buffer, model = "vis", extra: Record<string, unknown> = {}) {
  return ollama.chat({
    model,
    messages: [{ role: "user", content: "What is in this picture?", images: [b64(image)] }],
    options: GREEDY,
    ...extra,
  });
}

before(async () => {
  requirePatchedBuild();
  srv = await startTestServer({
    env: {
      GANTRY_NUM_PARALLEL: "2",
      GANTRY_MAX_QUEUE: "1",
      GANTRY_CONTEXT_LENGTH: "131072",
      GANTRY_KEEP_ALIVE: "1h",
    },
  });
  ollama = new Ollama({ host: srv.url });
  // No retries: a 503 must reach the test.
  openai = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: "placeholder", maxRetries: 0 });
  await createVisionModel(srv.url, "vis", await visionPairPaths());
  await createVisionModel(srv.url, "endless", await visionPairPaths({ controlLogit: -8, contextLength: 131_072 }));
});
after(async () => {
  await srv?.stop();
});

describe("image requests in the scheduler", () => {
  test("a full queue answers an image request 503 (both APIs); a disconnect mid-stream frees the sequence for the queued one", async () => {
    const held = [await holdImageStream(png(1)), await holdImageStream(png(2))];
    assert.equal(await metric("gantry_busy_sequences", "endless"), 2);
    // A third image request waits for a sequence ...
    const queued = ask(png(3), "endless", { options: { ...GREEDY, num_predict: 4 } });
    await until("the third request queued", async () => (await metric("gantry_queue_depth", "endless")) === 1);
    // ... and a fourth finds the queue full.
    const native = await fetch(`${srv.url}/api/chat`, {
      method: "POST",
      body: JSON.stringify({
        model: "endless",
        stream: false,
        messages: [{ role: "user", content: "And this?", images: [b64(png(4))] }],
      }),
    });
    assert.equal(native.status, 503);
    assert.ok(Number(native.headers.get("retry-after")) > 0);
    assert.match(((await native.json()) as { error: string }).error, /busy/);
    await assert.rejects(
      openai.chat.completions.create({
        model: "endless",
        messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: dataUrl(png(4)) } }] }],
      }),
      (e: InstanceType<typeof OpenAI.APIError>) => {
        assert.equal(e.status, 503);
        assert.equal(typeof e.message, "string");
        return true;
      },
    );
    // One client disconnects: its sequence goes to the queued request, which answers in full.
    held[0]!.abort();
    const answer = await queued;
    assert.equal(answer.eval_count, 4);
    assert.equal(answer.done_reason, "length");
    await until("one busy sequence after the queued request", async () => {
      return (await metric("gantry_busy_sequences", "endless")) === 1;
    });
    held[1]!.abort();
    await until("no busy sequence after both disconnects", async () => {
      return (await metric("gantry_busy_sequences", "endless")) === 0;
    });
    assert.match(srv.logs(), /"path":"\/v1\/chat\/completions","status":499/, "the disconnects are logged as 499");
  });

  test("a disconnect while the request's images are still being encoded frees the sequence; the loop goes on", async () => {
    const baseline = await ask(png(5), "endless");
    // 2,000 distinct images in one request (16 positions each): its prefill encodes and decodes them one by one,
    // thousands of worker calls, while the client disconnects as soon as the request holds its sequence.
    const images = Array.from({ length: 2000 }, (_, i) => b64(encodeBmp(patternImage(4, 4, 1000 + i))));
    const before = await encodes("endless");
    const ac = new AbortController();
    const response = fetch(`${srv.url}/api/chat`, {
      method: "POST",
      signal: ac.signal,
      body: JSON.stringify({
        model: "endless",
        messages: [{ role: "user", content: "Compare all of these.", images }],
        options: { num_predict: 1 },
      }),
    }).then(
      async (r) => ({ status: r.status, body: await r.text() }),
      (e: unknown) => e,
    );
    await until("the request holds a sequence", async () => (await metric("gantry_busy_sequences", "endless")) === 1);
    ac.abort();
    assert.ok((await response) instanceof Error, "the request had answered before its 2,000 images were encoded");
    await until("the sequence is free after the disconnect", async () => {
      return (await metric("gantry_busy_sequences", "endless")) === 0;
    });
    // The prefill stopped at the disconnect instead of encoding every image.
    const encoded = (await encodes("endless")) - before;
    assert.ok(encoded < images.length, `${encoded} images were encoded for a request that had gone`);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal((await encodes("endless")) - before, encoded, "encodes went on after the disconnect");
    // The loop is not wedged: both models answer, the same as before.
    assert.equal((await ask(png(5), "endless")).message.content, baseline.message.content);
    const text = await ollama.chat({
      model: "endless",
      messages: [{ role: "user", content: "hi" }],
      options: { ...GREEDY, num_predict: 3 },
    });
    assert.equal(text.eval_count, 3);
  });

  test("a client gone right after sending an image request (images not yet decoded) leaves no work behind", async () => {
    const baseline = await ask(png(6), "endless");
    // An endless model and no token limit: a request whose disconnect went unnoticed would never end.
    const body = JSON.stringify({
      model: "endless",
      messages: [
        {
          role: "user",
          content: "Look.",
          images: Array.from({ length: 500 }, (_, i) => b64(encodePng(patternImage(32, 32, 5000 + i)))),
        },
      ],
    });
    // Gone at several points: while the body is sent, right after its last byte, and a moment later.
    for (const delayMs of [-1, 0, 10, 50]) {
      await new Promise<void>((resolve) => {
        const req = http.request(`${srv.url}/api/chat`, { method: "POST" });
        req.on("error", () => undefined);
        req.on("response", (res) => res.resume());
        const gone = () => {
          req.destroy();
          resolve();
        };
        if (delayMs < 0) setImmediate(gone);
        req.end(body, () => {
          if (delayMs >= 0) setTimeout(gone, delayMs);
        });
      });
    }
    await until("no request in flight after the disconnects", async () => (await inFlight()) === 0);
    assert.equal(await metric("gantry_busy_sequences", "endless"), 0);
    assert.equal((await ask(png(6), "endless")).message.content, baseline.message.content);
  });

  test("keep_alive 0 unloads the vision model and its projector; the next image request loads both, same answer", async () => {
    const image = png(7);
    const first = await ask(image);
    const encodedBefore = await encodes("vis");
    const unloading = await ask(image, "vis", { keep_alive: 0 });
    assert.equal(unloading.message.content, first.message.content);
    await until("vis unloaded after keep_alive 0", async () => {
      const ps = await ollama.ps();
      return !ps.models.some((m) => m.name === "vis:latest");
    });
    const again = await ask(image);
    assert.equal(again.message.content, first.message.content, "the reloaded model answers otherwise");
    assert.ok(again.load_duration > 0, "the next request did not load the model");
    // The image was encoded again: the projector and its encodings went with the model.
    assert.equal(await encodes("vis"), encodedBefore + 1);
    assert.ok((await ollama.ps()).models.some((m) => m.name === "vis:latest"));
  });

  test("responses and /metrics count an image's positions as prompt tokens, with real durations", async () => {
    const chat = (images: Buffer[]) =>
      ollama.chat({
        model: "vis",
        messages: [{ role: "user", content: "What is in this picture?", images: images.map(b64) }],
        options: GREEDY,
      });
    const textOnly = await chat([]);
    const promptBefore = await metric("gantry_prompt_tokens_total", "vis");
    const generatedBefore = await metric("gantry_generated_tokens_total", "vis");
    const withImage = await chat([png(8)]);
    assert.equal(await metric("gantry_prompt_tokens_total", "vis"), promptBefore + withImage.prompt_eval_count);
    assert.equal(await metric("gantry_generated_tokens_total", "vis"), generatedBefore + withImage.eval_count);
    // The image's positions, and the line its marker takes in the message; a second image adds its positions alone.
    assert.ok(withImage.prompt_eval_count > textOnly.prompt_eval_count + imageTokens());
    const twoImages = await chat([png(8), png(9)]);
    assert.equal(twoImages.prompt_eval_count, withImage.prompt_eval_count + imageTokens());
    for (const r of [withImage, twoImages]) {
      assert.ok(r.prompt_eval_duration > 0);
      assert.ok(r.eval_count > 0 && r.eval_duration > 0);
      assert.ok(r.total_duration >= r.prompt_eval_duration + r.eval_duration);
    }
    // The OpenAI API's usage counts the same prompt the same way (another image: not a cached prefix).
    const r = await openai.chat.completions.create({
      model: "vis",
      temperature: 0,
      max_tokens: 12,
      messages: [imageMessage("What is in this picture?", [dataUrl(png(9))])],
    });
    assert.equal(r.usage!.prompt_tokens, withImage.prompt_eval_count);
    assert.equal(r.usage!.total_tokens, r.usage!.prompt_tokens + r.usage!.completion_tokens);
    assert.ok(r.usage!.completion_tokens > 0);
  });

  test("an image is encoded once for every sequence: another client's request and concurrent ones reuse it", async () => {
    const image = png(10);
    const before = await encodes("endless");
    // One client holds a sequence with the image ...
    const held = await holdImageStream(image);
    assert.equal(await encodes("endless"), before + 1);
    // ... and another client asks about the same image on the other sequence: decoded there, not encoded again.
    const other = await ollama.chat({
      model: "endless",
      messages: [{ role: "user", content: "Which colours are here?", images: [b64(image)] }],
      options: { ...GREEDY, num_predict: 4 },
    });
    assert.equal(other.eval_count, 4);
    assert.equal(await encodes("endless"), before + 1, "the same image was encoded again for another sequence");
    held.abort();
    await until("the held sequence is free", async () => (await metric("gantry_busy_sequences", "endless")) === 0);
    // Two clients at once with a new image: one encode between them.
    const fresh = png(11);
    const both = await Promise.all(
      ["First look.", "Second look."].map((content) =>
        ollama.chat({
          model: "endless",
          messages: [{ role: "user", content, images: [b64(fresh)] }],
          options: { ...GREEDY, num_predict: 4 },
        }),
      ),
    );
    for (const r of both) assert.equal(r.eval_count, 4);
    assert.equal(await encodes("endless"), before + 2);
  });
});
