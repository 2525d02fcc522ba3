import assert from "node:assert/strict";
import { test } from "node:test";
import type { Token } from "node-llama-cpp";
import {
  imageCell,
  isImageCell,
  keepWholeImages,
  partsFrom,
  type ImagePrompt,
  type PromptPart,
} from "../../../server/engine/image-prompt.ts";
import type { TokenizedPrompt } from "../../../server/engine/native/mtmd.ts";

const t = (...ids: number[]) => ids as Token[];
const image = (id: string, nPos: number): PromptPart => ({
  kind: "image",
  id,
  nPos,
  source: {} as TokenizedPrompt,
  index: 0,
  param: "images.0",
});
// text 3, image of 4, text 2, image of 4, text 1: positions 0-2, 3-6, 7-8, 9-12, 13
const prompt: ImagePrompt = {
  parts: [
    { kind: "text", tokens: t(1, 2, 3) },
    image("aa", 4),
    { kind: "text", tokens: t(4, 5) },
    image("bb", 4),
    { kind: "text", tokens: t(6) },
  ],
  tokens: [],
  dispose: async () => undefined,
};

test("an image's positions hold a negative stand-in token of its id, the same for the same id", () => {
  assert.equal(imageCell("ab12"), imageCell("ab12"));
  assert.notEqual(imageCell("ab12"), imageCell("ab13"));
  assert.ok(isImageCell(imageCell("0000")) && isImageCell(imageCell("ffffffffffff")));
  assert.ok(!isImageCell(0 as Token));
});

test("a kept prefix never ends inside an image: it goes back to the image's start", () => {
  assert.deepEqual(
    [0, 2, 3, 4, 6, 7, 8, 9, 12, 13, 14].map((n) => keepWholeImages(prompt, n)),
    [0, 2, 3, 3, 3, 7, 8, 9, 9, 13, 14],
  );
});

test("the parts still to evaluate after a kept prefix", () => {
  assert.deepEqual(
    partsFrom(prompt, 2).map((p) => (p.kind === "text" ? p.tokens : p.id)),
    [t(3), "aa", t(4, 5), "bb", t(6)],
  );
  assert.deepEqual(
    partsFrom(prompt, 8).map((p) => (p.kind === "text" ? p.tokens : p.id)),
    [t(5), "bb", t(6)],
  );
  assert.deepEqual(
    partsFrom(prompt, 13).map((p) => (p.kind === "text" ? p.tokens : p.id)),
    [t(6)],
  );
});
