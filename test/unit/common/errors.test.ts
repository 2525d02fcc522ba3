import { test } from "node:test";
import assert from "node:assert/strict";
import {
  AppError,
  ERROR_CODES,
  isServerFault,
  type ErrorCode,
  fromBodyParserError,
  ollamaErrorBody,
  openaiErrorBody,
  toAppError,
} from "../../../server/common/errors.ts";

test("every error code has a 4xx/5xx status and an OpenAI type", () => {
  for (const [code, { status, type }] of Object.entries(ERROR_CODES)) {
    assert.ok(status >= 400 && status < 600, code);
    assert.ok(type.length > 0, code);
  }
});

test("AppError carries status, param and headers", () => {
  const e = new AppError("SERVER_BUSY", "busy", { headers: { "Retry-After": "1" } });
  assert.equal(e.status, 503);
  assert.equal(e.headers["Retry-After"], "1");
  assert.equal(new AppError("BAD_REQUEST", "x", { param: "model" }).param, "model");
});

test("unknown errors become INTERNAL and never leak their message", () => {
  const e = toAppError(new Error("secret path /home/x"));
  assert.equal(e.status, 500);
  assert.deepEqual(ollamaErrorBody(e), { error: "internal server error" });
  assert.equal(openaiErrorBody(e).error.message, "internal server error");
});

test("wire shapes", () => {
  const e = new AppError("MODEL_NOT_FOUND", 'model "x" not found', { param: "model" });
  assert.deepEqual(ollamaErrorBody(e), { error: 'model "x" not found' });
  assert.deepEqual(openaiErrorBody(e), {
    error: { message: 'model "x" not found', type: "not_found_error", param: "model", code: "model_not_found" },
  });
});

test("a prompt over the context has OpenAI's own code on /v1", () => {
  const e = new AppError("CONTEXT_OVERFLOW", "prompt is too long: 5031 tokens, context length is 4096");
  assert.equal(e.status, 400);
  assert.equal(openaiErrorBody(e).error.code, "context_length_exceeded");
  assert.equal(openaiErrorBody(e).error.type, "invalid_request_error");
});

test("a body that does not decompress is a 400 (zlib, brotli and zstd errors as body-parser passes them on)", async () => {
  const zlib = await import("node:zlib");
  const failures: Array<() => unknown> = [
    () => zlib.gunzipSync(Buffer.from("not gzip")),
    () => zlib.gunzipSync(zlib.gzipSync("hello").subarray(0, 12)),
    () => zlib.inflateSync(Buffer.from("xx")),
    () => zlib.brotliDecompressSync(Buffer.from("not brotli at all")),
  ];
  for (const fail of failures) {
    let err: Error & { status?: number; expose?: boolean };
    try {
      fail();
      assert.fail("decompressed");
    } catch (e) {
      err = e as Error;
    }
    Object.assign(err!, { status: 400, expose: true }); // what http-errors' createError(400, err) does
    const app = fromBodyParserError(err!);
    assert.equal(app?.status, 400, err!.message);
    assert.match(app!.message, /could not decompress the request body/);
  }
  assert.equal(fromBodyParserError(Object.assign(new Error("x"), { status: 400 })), undefined, "others untouched");
});

test("the catalogue says which codes are server faults: only 5xx, and never the server working as designed", () => {
  for (const [code, def] of Object.entries(ERROR_CODES) as [ErrorCode, (typeof ERROR_CODES)[ErrorCode]][]) {
    if (isServerFault(code)) assert.ok(def.status >= 500, `${code}: a fault is a 5xx`);
    else if (def.status >= 500)
      assert.ok(
        ["SERVER_BUSY", "MODEL_LOADING", "SHUTTING_DOWN", "NOT_IMPLEMENTED"].includes(code),
        `${code}: a 5xx that is not a fault is busy, loading, shutting down or not implemented`,
      );
  }
  assert.equal(isServerFault("INTERNAL"), true);
  assert.equal(isServerFault("MODEL_NOT_FOUND"), false);
});
