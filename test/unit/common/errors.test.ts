import { test } from "node:test";
import assert from "node:assert/strict";
import { AppError, ERROR_CODES, ollamaErrorBody, openaiErrorBody, toAppError } from "../../../server/common/errors.ts";

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
