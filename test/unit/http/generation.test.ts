import { test } from "node:test";
import assert from "node:assert/strict";
import { decodeImages, formatFrom, keepAliveFrom, samplingFrom } from "../../../server/http/generation.ts";
import type { AppError } from "../../../server/common/errors.ts";

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

test("images are base64; data URL prefixes are accepted; garbage is a 400", () => {
  const [img] = decodeImages([Buffer.from("abc").toString("base64")], "images")!;
  assert.equal(Buffer.from(img!).toString(), "abc");
  assert.equal(Buffer.from(decodeImages(["data:image/png;base64,YWJj"], "images")![0]!).toString(), "abc");
  assert.throws(
    () => decodeImages(["not base64!!"], "images"),
    (e: AppError) => e.status === 400,
  );
  assert.equal(decodeImages([], "images"), undefined);
});
