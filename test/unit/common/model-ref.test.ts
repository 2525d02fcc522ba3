import assert from "node:assert/strict";
import { test } from "node:test";
import { AppError } from "../../../server/common/errors.ts";
import { isLocalPath, parseModelRef } from "../../../server/common/model-ref.ts";

test("parseModelRef classifies hub references, GGUF paths and names", () => {
  const cases: Array<[string, string, unknown]> = [
    ["hf.co/org/repo", "hub", { org: "org", repo: "repo", revision: "main" }],
    ["huggingface.co/org/repo:q8_0", "hub", { org: "org", repo: "repo", quant: "Q8_0", revision: "main" }],
    ["hf.co/org/repo:Model-Q8_0.gguf", "hub", { org: "org", repo: "repo", file: "Model-Q8_0.gguf", revision: "main" }],
    ["./model.gguf", "file", "./model.gguf"],
    ["/models/x.GGUF", "file", "/models/x.GGUF"],
    ["~/m.gguf", "file", "~/m.gguf"],
    ["plain.gguf", "file", "plain.gguf"],
    ["smollm2:135m", "name", { host: "gantry.local", namespace: "library", model: "smollm2", tag: "135m" }],
    ["team/chat", "name", { host: "gantry.local", namespace: "team", model: "chat", tag: "latest" }],
  ];
  for (const [input, kind, want] of cases) {
    const ref = parseModelRef(input);
    assert.equal(ref.kind, kind, input);
    const got = ref.kind === "hub" ? ref.hub : ref.kind === "file" ? ref.path : ref.name;
    assert.deepEqual(got, want, input);
  }
});

test("parseModelRef refuses what no grammar accepts, naming the problem", () => {
  for (const [input, why] of [
    ["", /empty/],
    ["hf.co/only-org", /org>\/<repo/],
    ["a/b/c/d", /too many/],
    ["bad name", /invalid characters/],
    ["x:../y", /invalid|\.\./],
  ] as const) {
    assert.throws(
      () => parseModelRef(input),
      (e: unknown) => e instanceof AppError && e.code === "MODEL_INVALID_NAME" && why.test(e.message),
      input,
    );
  }
});

test("isLocalPath: hub references ending in .gguf are not paths", () => {
  assert.equal(isLocalPath("hf.co/o/r:x.gguf"), false);
  assert.equal(isLocalPath("../x"), true);
  assert.equal(isLocalPath("tiny"), false);
});
