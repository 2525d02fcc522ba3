import assert from "node:assert/strict";
import { test } from "node:test";
import { isAppRef, parseAppRef } from "../../../server/platform/app-ref.ts";

test("<file>::<export> splits at the last '::'; model references are not app references", () => {
  assert.deepEqual(parseAppRef("examples/chat.ts::chat"), { file: "examples/chat.ts", exportName: "chat" });
  assert.deepEqual(parseAppRef("C::/x/app.mjs::default"), { file: "C::/x/app.mjs", exportName: "default" });
  assert.equal(isAppRef("examples/chat.ts::chat"), true);
  for (const model of ["hf.co/org/repo:Q4_K_M", "smollm2:135m", "./model.gguf"]) assert.equal(isAppRef(model), false);
});

test("a reference without a file, an export or a valid export name says which part is wrong", () => {
  assert.throws(() => parseAppRef("app.ts"), /"app.ts" is not <file>::<function>/);
  assert.throws(() => parseAppRef("::chat"), /names no file/);
  assert.throws(() => parseAppRef("app.ts::"), /names no export after "::"/);
  assert.throws(() => parseAppRef("app.ts::my-app"), /"my-app" in "app.ts::my-app" is not a JavaScript export name/);
});
