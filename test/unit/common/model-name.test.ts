import assert from "node:assert/strict";
import { test } from "node:test";
import { AppError } from "../../../server/common/errors.ts";
import {
  displayName,
  formatModelName,
  fromManifestPath,
  parseModelName,
  qualifiedModelName,
  sameModelName,
  toManifestPath,
} from "../../../server/common/model-name.ts";

test("valid names parse with defaults and display in short form", () => {
  // input → [host, namespace, model, tag, display]
  const cases: [string, [string, string, string, string, string]][] = [
    ["smollm2", ["gantry.local", "library", "smollm2", "latest", "smollm2:latest"]],
    ["smollm2:135m", ["gantry.local", "library", "smollm2", "135m", "smollm2:135m"]],
    ["  smollm2:135m ", ["gantry.local", "library", "smollm2", "135m", "smollm2:135m"]],
    ["library/smollm2:135m", ["gantry.local", "library", "smollm2", "135m", "smollm2:135m"]],
    ["gantry.local/library/smollm2:135m", ["gantry.local", "library", "smollm2", "135m", "smollm2:135m"]],
    ["alice/my-model", ["gantry.local", "alice", "my-model", "latest", "alice/my-model:latest"]],
    ["alice/my_model.v2:q4_0", ["gantry.local", "alice", "my_model.v2", "q4_0", "alice/my_model.v2:q4_0"]],
    [
      "hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M",
      [
        "hf.co",
        "bartowski",
        "Llama-3.2-1B-Instruct-GGUF",
        "Q4_K_M",
        "hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M",
      ],
    ],
    ["hf.co/org/repo", ["hf.co", "org", "repo", "latest", "hf.co/org/repo:latest"]],
    ["huggingface.co/org/repo:q8_0", ["hf.co", "org", "repo", "q8_0", "hf.co/org/repo:q8_0"]],
    ["registry.ollama.ai/library/smollm2:135m", ["gantry.local", "library", "smollm2", "135m", "smollm2:135m"]],
    [`${"h".repeat(251)}.io/ns/m`, [`${"h".repeat(251)}.io`, "ns", "m", "latest", `${"h".repeat(251)}.io/ns/m:latest`]],
    ["localhost:5000/team/model:v1", ["localhost:5000", "team", "model", "v1", "localhost:5000/team/model:v1"]],
    [
      "registry.example.com/team/model",
      ["registry.example.com", "team", "model", "latest", "registry.example.com/team/model:latest"],
    ],
    ["SmolLM2:135M", ["gantry.local", "library", "SmolLM2", "135M", "SmolLM2:135M"]],
    ["_private:x", ["gantry.local", "library", "_private", "x", "_private:x"]],
    ["m:" + "t".repeat(80), ["gantry.local", "library", "m", "t".repeat(80), "m:" + "t".repeat(80)]],
  ];
  for (const [input, [host, namespace, model, tag, display]] of cases) {
    const n = parseModelName(input);
    assert.deepEqual(n, { host, namespace, model, tag }, input);
    assert.equal(formatModelName(n), display, input);
    assert.equal(displayName(input), display, input);
  }
});

test("invalid names are rejected with MODEL_INVALID_NAME and a reason", () => {
  const cases: [string, RegExp][] = [
    ["", /empty name/],
    ["   ", /empty name/],
    [":latest", /empty model/],
    ["model:", /empty tag/],
    ["/model", /empty namespace/],
    ["ns//model", /empty namespace|empty model/],
    ["a/b/c/d", /too many/],
    ["..", /model/],
    ["../etc/passwd", /host must not contain/],
    ["../model", /namespace must not contain/],
    ["ns/..:x", /model/],
    ["model:..", /tag/],
    ["model:a..b", /tag must not contain/],
    [`${"h".repeat(253)}.io/ns/m`, /host longer than 255 bytes \(the file system's limit for a path segment\)/],
    ["model name", /invalid characters/],
    ["model!:x", /invalid characters/],
    ["model:t@g", /invalid characters/],
    [".hidden", /invalid characters/],
    ["-dash", /invalid characters/],
    ["ns/model:tag:extra", /invalid characters/],
    ["m".repeat(81), /longer than 80/],
    ["m:" + "t".repeat(81), /longer than 80/],
    ["bad_host!/ns/model", /host/],
    ["hf.co/org/repo\\x:q", /invalid characters/],
    ["modèle", /invalid characters/],
  ];
  for (const [input, reason] of cases) {
    assert.throws(
      () => parseModelName(input),
      (e: unknown) => {
        assert.ok(e instanceof AppError, input);
        assert.equal(e.code, "MODEL_INVALID_NAME", input);
        assert.match(e.message, reason, input);
        return true;
      },
      input,
    );
  }
});

test("names compare case-insensitively but keep their spelling", () => {
  assert.ok(sameModelName(parseModelName("SmolLM2:135M"), parseModelName("smollm2:135m")));
  assert.ok(sameModelName(parseModelName("smollm2"), parseModelName("gantry.local/library/smollm2:latest")));
  assert.ok(!sameModelName(parseModelName("smollm2:135m"), parseModelName("smollm2:360m")));
  assert.equal(parseModelName("SmolLM2").model, "SmolLM2");
});

test("manifest paths round-trip through the name", () => {
  for (const input of ["smollm2:135m", "alice/x", "hf.co/org/Repo:Q4_K_M", "localhost:5000/a/b:c"]) {
    const n = parseModelName(input);
    const segments = toManifestPath(n);
    assert.equal(segments.length, 4);
    assert.deepEqual(fromManifestPath(segments), n, input);
  }
  assert.deepEqual(toManifestPath(parseModelName("smollm2:135m")), ["gantry.local", "library", "smollm2", "135m"]);
  assert.equal(qualifiedModelName(parseModelName("x")), "gantry.local/library/x:latest");
  assert.throws(() => fromManifestPath(["gantry.local", "library", "x"]), /manifest path/);
  assert.throws(() => fromManifestPath(["huggingface.co", "org", "repo", "latest"]), /alias/);
  assert.throws(() => fromManifestPath(["gantry.local", "library", "x", "tag.tmp..1"]), /tag/);
});
