import { test } from "node:test";
import assert from "node:assert/strict";
import type { AppError } from "../../../server/common/errors.ts";
import {
  finishReason,
  formatFromOpenAI,
  samplingFromOpenAI,
  toChatMessages,
} from "../../../server/http/openai/translate.ts";
import { DEFAULT_IMAGE_INPUT } from "../../../server/http/images.ts";
import { encodePng, solidImage } from "../../support/images.ts";
import { ChatCompletionRequestSchema } from "../../../server/http/openai/schemas.ts";

const req = (extra: object) =>
  ChatCompletionRequestSchema.parse({ model: "m", messages: [{ role: "user", content: "hi" }], ...extra });

test("sampling options map onto Ollama options; max_completion_tokens wins over max_tokens", () => {
  assert.deepEqual(
    samplingFromOpenAI(
      req({
        temperature: 0.2,
        top_p: 0.5,
        seed: 7,
        stop: "END",
        max_tokens: 10,
        presence_penalty: 1,
        frequency_penalty: -1,
      }),
    ),
    {
      temperature: 0.2,
      top_p: 0.5,
      seed: 7,
      stop: ["END"],
      num_predict: 10,
      presence_penalty: 1,
      frequency_penalty: -1,
    },
  );
  assert.equal(samplingFromOpenAI(req({ max_tokens: 10, max_completion_tokens: 20 })).num_predict, 20);
  assert.deepEqual(samplingFromOpenAI(req({ temperature: null, stop: null })), {});
});

test("response_format", () => {
  assert.equal(formatFromOpenAI(req({})), undefined);
  assert.equal(formatFromOpenAI(req({ response_format: { type: "text" } })), undefined);
  assert.equal(formatFromOpenAI(req({ response_format: { type: "json_object" } })), "json");
  assert.deepEqual(
    formatFromOpenAI(
      req({ response_format: { type: "json_schema", json_schema: { name: "x", schema: { type: "object" } } } }),
    ),
    { schema: { type: "object" } },
  );
});

test("messages: developer becomes system, parts become text and images", async () => {
  const png = encodePng(solidImage(2, 2, [1, 2, 3]));
  const msgs = await toChatMessages(
    [
      { role: "developer", content: "be brief" },
      {
        role: "user",
        content: [
          { type: "text", text: "what is" },
          { type: "text", text: "this?" },
          { type: "image_url", image_url: { url: `data:image/png;base64,${png.toString("base64")}` } },
        ],
      },
      { role: "assistant" },
    ],
    DEFAULT_IMAGE_INPUT,
  );
  assert.deepEqual(msgs[0], { role: "system", content: "be brief" });
  assert.equal(msgs[1]!.content, "what is\nthis?");
  assert.deepEqual(Buffer.from(msgs[1]!.images![0]!), png);
  assert.deepEqual(msgs[2], { role: "assistant", content: "" });
});

test("remote image URLs are refused when the server does not fetch them", async () => {
  await assert.rejects(
    toChatMessages([{ role: "user", content: [{ type: "image_url", image_url: "https://example.invalid/a.png" }] }], {
      ...DEFAULT_IMAGE_INPUT,
      allowRemote: false,
    }),
    (e: AppError) =>
      e.status === 400 &&
      e.message ===
        "invalid messages.0.content.0.image_url: this server does not fetch remote images (GANTRY_ALLOW_REMOTE_IMAGES=false); send the image as a data URL",
  );
});

test("finish reasons", () => {
  assert.equal(finishReason("length"), "length");
  assert.equal(finishReason("stop"), "stop");
  assert.equal(finishReason("abort"), "stop");
});

test("unsupported fields are 400s, not silently ignored", () => {
  for (const extra of [{ n: 2 }, { logit_bias: { "1": 2 } }, { top_logprobs: 21 }]) {
    assert.equal(
      ChatCompletionRequestSchema.safeParse({ model: "m", messages: [{ role: "user", content: "x" }], ...extra })
        .success,
      false,
      JSON.stringify(extra),
    );
  }
});
