import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { AppError } from "../../../server/common/errors.ts";
import { hubModelName, isHubRef, parseHubRef } from "../../../server/common/hub-ref.ts";
import { quantOf, selectGgufFiles, splitPart, type HubFile } from "../../../server/hub/ref.ts";

describe("parseHubRef", () => {
  const ok: Array<[string, object]> = [
    [
      "hf.co/bartowski/SmolLM2-135M-Instruct-GGUF",
      { org: "bartowski", repo: "SmolLM2-135M-Instruct-GGUF", revision: "main" },
    ],
    ["hf.co/org/repo:q4_k_m", { org: "org", repo: "repo", quant: "Q4_K_M", revision: "main" }],
    ["hf.co/org/repo:Q8_0", { org: "org", repo: "repo", quant: "Q8_0", revision: "main" }],
    ["huggingface.co/org/repo:iq3_xxs", { org: "org", repo: "repo", quant: "IQ3_XXS", revision: "main" }],
    ["https://huggingface.co/org/repo", { org: "org", repo: "repo", revision: "main" }],
    ["https://hf.co/org/repo:f16", { org: "org", repo: "repo", quant: "F16", revision: "main" }],
    ["HF.CO/Org/Repo.v2:latest", { org: "Org", repo: "Repo.v2", revision: "main" }],
    [
      "hf.co/org/repo:Llama-3.2-3B-Instruct-IQ3_M.gguf",
      { org: "org", repo: "repo", file: "Llama-3.2-3B-Instruct-IQ3_M.gguf", revision: "main" },
    ],
    ["  hf.co/org/repo/  ", { org: "org", repo: "repo", revision: "main" }],
  ];
  for (const [input, want] of ok)
    it(`parses ${JSON.stringify(input)}`, () => assert.deepEqual(parseHubRef(input), want));

  const bad: Array<[string, RegExp]> = [
    ["hf.co/org", /exactly <org>\/<repo>/],
    ["hf.co/", /exactly <org>\/<repo>/],
    ["hf.co/a/b/c", /exactly <org>\/<repo>/],
    ["hf.co/org/repo:", /empty tag/],
    ["hf.co/org/re po", /repo "re po" has invalid characters/],
    ["hf.co/../repo", /org "\.\." has invalid characters/],
    ["hf.co/org/repo:q4/../x", /exactly <org>\/<repo>|invalid characters/],
    ["hf.co/org/repo:a$b", /tag "a\$b" has invalid characters/],
    ["example.com/org/repo", /host must be hf.co or huggingface.co/],
    [`hf.co/${"a".repeat(97)}/repo`, /org longer than 96/],
  ];
  for (const [input, want] of bad) {
    it(`rejects ${JSON.stringify(input.slice(0, 40))}`, () => {
      assert.throws(
        () => parseHubRef(input),
        (e: unknown) => e instanceof AppError && e.code === "MODEL_INVALID_NAME" && want.test(e.message),
      );
    });
  }

  it("tells hub references from other names", () => {
    assert.equal(isHubRef("hf.co/a/b"), true);
    assert.equal(isHubRef("https://huggingface.co/a/b:q8_0"), true);
    assert.equal(isHubRef("smollm2:135m"), false);
    assert.equal(isHubRef("./hf.co/x.gguf"), false);
  });

  it("names the stored model after the requested tag", () => {
    assert.equal(hubModelName(parseHubRef("hf.co/o/r:q4_k_m")), "hf.co/o/r:Q4_K_M");
    assert.equal(hubModelName(parseHubRef("hf.co/o/r")), "hf.co/o/r:latest");
    assert.equal(hubModelName(parseHubRef("hf.co/o/r:m-Q8_0.gguf")), "hf.co/o/r:m-Q8_0.gguf");
  });
});

describe("quantOf / splitPart", () => {
  const table: Array<[string, string | null]> = [
    ["SmolLM2-135M-Instruct-Q4_K_M.gguf", "Q4_K_M"],
    ["smollm2.q8_0.gguf", "Q8_0"],
    ["Model-UD-Q4_K_XL.gguf", "Q4_K_XL"],
    ["sub/dir/Model-IQ2_XXS-00001-of-00003.gguf", "IQ2_XXS"],
    ["model-f16.gguf", "F16"],
    ["model-bf16.gguf", "BF16"],
    ["model.gguf", null],
  ];
  for (const [name, want] of table) it(`${name} → ${want}`, () => assert.equal(quantOf(name), want));

  it("reads split positions", () => {
    assert.deepEqual(splitPart("m-Q4_K_M-00002-of-00003.gguf"), { part: 2, count: 3, prefix: "m-Q4_K_M" });
    assert.equal(splitPart("m-Q4_K_M.gguf"), null);
    assert.equal(splitPart("m-00004-of-00003.gguf"), null);
  });
});

describe("selectGgufFiles", () => {
  const f = (p: string, size: number): HubFile => ({ path: p, size, sha256: "a".repeat(64) });
  const repo = [
    f("README.md", 10),
    f(".gitattributes", 5),
    f("m-Q8_0.gguf", 800),
    f("m-Q4_K_M.gguf", 500),
    f("m-Q2_K.gguf", 300),
    f("m-F16.gguf", 1600),
    f("mmproj-m-F16.gguf", 90),
    f("mmproj-m-Q8_0.gguf", 50),
    f("mmproj-m-F32.gguf", 180),
    f("template", 40),
    f("params", 20),
  ];
  const paths = (files: HubFile[]) => files.map((x) => x.path);

  it("defaults to Q4_K_M with the F16 projector and the optional files", () => {
    const s = selectGgufFiles(repo, {});
    assert.deepEqual(paths(s.model), ["m-Q4_K_M.gguf"]);
    assert.equal(s.quant, "Q4_K_M");
    assert.equal(s.projector?.path, "mmproj-m-F16.gguf");
    assert.equal(s.template?.path, "template");
    assert.equal(s.params?.path, "params");
    assert.equal(s.system, undefined);
  });

  it("matches quants case-insensitively and prefers the projector of the same precision", () => {
    const s = selectGgufFiles(repo, { quant: "q8_0" });
    assert.deepEqual(paths(s.model), ["m-Q8_0.gguf"]);
    assert.equal(s.projector?.path, "mmproj-m-Q8_0.gguf");
  });

  it("takes an exact file name", () => {
    assert.deepEqual(paths(selectGgufFiles(repo, { file: "m-Q2_K.gguf" }).model), ["m-Q2_K.gguf"]);
    assert.deepEqual(paths(selectGgufFiles(repo, { file: "M-F16.GGUF" }).model), ["m-F16.gguf"]);
  });

  it("without a projector of the model's precision or F16, takes the Q8_0 one over smaller ones", () => {
    const s = selectGgufFiles(
      [f("m.Q4_K_M.gguf", 400), f("mmproj-m-Q4_0.gguf", 30), f("mmproj-m-Q8_0.gguf", 50), f("mmproj-m-F32.gguf", 180)],
      {},
    );
    assert.equal(s.projector?.path, "mmproj-m-Q8_0.gguf");
  });

  it("falls back to the smallest non-projector GGUF when there is no Q4_K_M", () => {
    const s = selectGgufFiles([f("big.Q8_0.gguf", 900), f("small.Q5_K_S.gguf", 400), f("mmproj-tiny.gguf", 10)], {});
    assert.deepEqual(paths(s.model), ["small.Q5_K_S.gguf"]);
    assert.equal(s.projector?.path, "mmproj-tiny.gguf");
  });

  it("treats a complete split set as one choice with its parts in order", () => {
    const files = [
      f("Q4_K_M/m-Q4_K_M-00003-of-00003.gguf", 100),
      f("Q4_K_M/m-Q4_K_M-00001-of-00003.gguf", 100),
      f("Q4_K_M/m-Q4_K_M-00002-of-00003.gguf", 100),
      f("m-Q8_0-00001-of-00002.gguf", 100), // incomplete: part 2 missing
      f("m-Q2_K.gguf", 250),
    ];
    assert.deepEqual(paths(selectGgufFiles(files, { quant: "Q4_K_M" }).model), [
      "Q4_K_M/m-Q4_K_M-00001-of-00003.gguf",
      "Q4_K_M/m-Q4_K_M-00002-of-00003.gguf",
      "Q4_K_M/m-Q4_K_M-00003-of-00003.gguf",
    ]);
    assert.deepEqual(paths(selectGgufFiles(files, { file: "m-Q4_K_M-00002-of-00003.gguf" }).model).length, 3);
    // Without Q4_K_M the smallest choice wins, counting a split set's total size (300 bytes > 250).
    const noDefault = files.map((x) => ({ ...x, path: x.path.replaceAll("Q4_K_M", "Q3_K_S") }));
    assert.deepEqual(paths(selectGgufFiles(noDefault, {}).model), ["m-Q2_K.gguf"]);
  });

  const notFound = (fn: () => unknown, re: RegExp) =>
    assert.throws(fn, (e: unknown) => e instanceof AppError && e.code === "MODEL_NOT_FOUND" && re.test(e.message));

  it("lists the available quants when the wanted one is missing", () => {
    notFound(
      () => selectGgufFiles(repo, { quant: "Q5_K_S" }, "hf.co/o/r"),
      /quant Q5_K_S not found in hf\.co\/o\/r; available quants: Q2_K, Q4_K_M, Q8_0, F16/,
    );
    notFound(
      () => selectGgufFiles(repo, { file: "nope.gguf" }, "hf.co/o/r"),
      /file nope\.gguf not found in hf\.co\/o\/r; available quants: Q2_K/,
    );
    notFound(
      () => selectGgufFiles([f("README.md", 1), f("mmproj-x-F16.gguf", 5)], {}, "hf.co/o/r"),
      /hf\.co\/o\/r has no GGUF model files/,
    );
  });

  it("refuses a projector as the model", () => {
    assert.throws(() => selectGgufFiles(repo, { file: "mmproj-m-F16.gguf" }), /is a projector/);
  });
});
