import { test } from "node:test";
import assert from "node:assert/strict";
import { decodeImages, formatFrom, keepAliveFrom, samplingFrom } from "../../../server/http/generation.ts";
import type { AppError } from "../../../server/common/errors.ts";
import { encodePng, solidImage } from "../../support/images.ts";

test("Ollama options map onto engine options; stop becomes a list; inert options are dropped", () => {
  assert.deepEqual(samplingFrom({ temperature: 0, stop: "x", num_gpu: 1, use_mmap: true }), {
    temperature: 0,
    stop: ["x"],
    use_mmap: true,
  });
  assert.deepEqual(samplingFrom({ stop: ["a", "", "b"], num_ctx: 512, seed: 1 }), {
    stop: ["a", "b"],
    num_ctx: 512,
    seed: 1,
  });
  assert.deepEqual(samplingFrom(undefined), {});
});

test("keep_alive", () => {
  assert.equal(keepAliveFrom(undefined), undefined);
  assert.equal(keepAliveFrom(0), 0);
  assert.equal(keepAliveFrom("-1"), null);
  assert.equal(keepAliveFrom("10m"), 600_000);
  assert.throws(
    () => keepAliveFrom("later"),
    (e: AppError) => e.status === 400 && e.param === "keep_alive",
  );
});

test("format", () => {
  assert.equal(formatFrom(undefined), undefined);
  assert.equal(formatFrom(""), undefined);
  assert.equal(formatFrom("json"), "json");
  assert.deepEqual(formatFrom({ type: "object" }), { schema: { type: "object" } });
});

test("images are base64 image data; data URL prefixes are accepted; garbage is a 400 naming the field", () => {
  const deps = { config: { bodyLimit: "1mb", origins: "" } };
  const png = encodePng(solidImage(2, 2, [1, 2, 3]));
  const [img] = decodeImages(deps, [png.toString("base64")], "images")!;
  assert.deepEqual(Buffer.from(img!), png);
  assert.deepEqual(
    Buffer.from(decodeImages(deps, [`data:image/png;base64,${png.toString("base64")}`], "images")![0]!),
    png,
  );
  assert.throws(
    () => decodeImages(deps, ["not base64!!"], "messages.0.images"),
    (e: AppError) => e.status === 400 && e.message === "invalid messages.0.images.0: not base64 image data",
  );
  assert.equal(decodeImages(deps, [], "images"), undefined);
});
