// The wire rule: a null on any field of a request object is the same as leaving the field out.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { z } from "zod";
import { dropNulls } from "../../../server/api/wire.ts";
import {
  ChatRequestSchema,
  EmbedRequestSchema,
  GenerateRequestSchema,
  LegacyEmbeddingsRequestSchema,
} from "../../../server/api/schemas.ts";
import { CopyRequestSchema, CreateRequestSchema, ShowRequestSchema } from "../../../server/api/store-schemas.ts";
import { PullRequestSchema } from "../../../server/hub/pull-schema.ts";
import {
  ChatCompletionRequestSchema,
  CompletionRequestSchema,
  EmbeddingsRequestSchema,
} from "../../../server/http/openai/schemas.ts";

test("dropNulls removes only an object's own null-valued keys", () => {
  assert.deepEqual(dropNulls({ a: null, b: 1, c: { d: null } }), { b: 1, c: { d: null } });
  const untouched = { a: 1 };
  assert.equal(dropNulls(untouched), untouched);
  for (const v of [null, 3, "x", [null]]) assert.deepEqual(dropNulls(v), v);
});

const user = [{ role: "user", content: "hi" }];

// [schema, a valid request, the same request with nulls where clients send them]: both parse to the same value.
const cases: Array<[string, z.ZodType, object, object]> = [
  [
    "/api/embed options (langchain OllamaEmbeddings)",
    EmbedRequestSchema,
    { model: "m", input: "hi", options: {} },
    { model: "m", input: "hi", options: { temperature: null, mirostat: null, stop: null }, keep_alive: null },
  ],
  [
    "/api/generate",
    GenerateRequestSchema,
    { model: "m", prompt: "hi" },
    { model: "m", prompt: "hi", format: null, images: null, system: null, context: null, think: null, stream: null },
  ],
  [
    "/api/chat",
    ChatRequestSchema,
    { model: "m", messages: [{ role: "user", content: "" }] },
    { model: "m", messages: [{ role: "user", content: null, images: null }], tools: null, options: null },
  ],
  [
    "/api/embeddings",
    LegacyEmbeddingsRequestSchema,
    { model: "m", prompt: "x" },
    { model: "m", prompt: "x", options: null },
  ],
  ["/api/show", ShowRequestSchema, { model: "m" }, { model: "m", verbose: null }],
  ["/api/copy", CopyRequestSchema, { source: "a", destination: "b" }, { source: "a", destination: "b", extra: null }],
  ["/api/pull", PullRequestSchema, { model: "m" }, { model: "m", insecure: null, stream: null }],
  [
    "/api/create",
    CreateRequestSchema,
    { model: "m", from: "b", parameters: {} },
    { model: "m", from: "b", template: null, parameters: { temperature: null } },
  ],
  [
    "/v1/chat/completions",
    ChatCompletionRequestSchema,
    { model: "m", messages: user },
    {
      model: "m",
      messages: [{ role: "user", content: "hi", name: null, tool_calls: null }],
      user: null,
      response_format: null,
      tools: null,
      tool_choice: null,
      stream_options: null,
      temperature: null,
      stop: null,
      logprobs: null,
      top_logprobs: null,
      max_tokens: null,
      seed: null,
      n: null,
      logit_bias: null,
    },
  ],
  [
    "/v1/completions",
    CompletionRequestSchema,
    { model: "m", prompt: "x" },
    { model: "m", prompt: "x", suffix: null, logprobs: null, echo: null, best_of: null },
  ],
  [
    "/v1/embeddings",
    EmbeddingsRequestSchema,
    { model: "m", input: "x" },
    { model: "m", input: "x", encoding_format: null, dimensions: null, user: null },
  ],
];

for (const [name, schema, plain, withNulls] of cases) {
  test(`${name}: null fields are absent fields`, () => {
    const r = schema.safeParse(withNulls);
    assert.ok(r.success, JSON.stringify(r.error?.issues));
    assert.deepEqual(r.data, schema.parse(plain));
  });
}

test("a required field sent as null is reported as missing", () => {
  const r = GenerateRequestSchema.safeParse({ model: null, prompt: "x" });
  assert.equal(r.success, false);
  assert.equal(r.error!.issues[0]!.path.join("."), "model");
});
