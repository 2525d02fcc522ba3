import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { posix } from "node:path";
import { formatModelfile } from "../../../../server/common/modelfile/format.ts";
import { parseModelfile } from "../../../../server/common/modelfile/parse.ts";
import { isLocalPath } from "../../../../server/common/model-ref.ts";
import { modelfileFromShow, toCreateRequest } from "../../../../server/common/modelfile/to-create-request.ts";
import { AppError } from "../../../../server/common/errors.ts";
import { ModelfileSyntaxError } from "../../../../server/common/modelfile/errors.ts";

const fixture = (name: string) =>
  readFileSync(new URL(`../../../fixtures/modelfiles/${name}`, import.meta.url), "utf8");

// Resolves like the CLI does, relative to a Modelfile in /home/me/models, with ~ as /home/me.
const resolved: string[] = [];
const resolvePath = (p: string) => {
  resolved.push(p);
  return p.startsWith("~") ? posix.join("/home/me", p.slice(1)) : posix.resolve("/home/me/models", p);
};

describe("toCreateRequest", () => {
  it("turns the seed Modelfile into a create body with a resolved GGUF path", () => {
    const body = toCreateRequest(parseModelfile(fixture("seed.Modelfile")), { resolvePath });
    assert.deepEqual(body, {
      from: "/home/me/models/model.gguf",
      template:
        "<|startoftext|><|im_start|>system\n{{ .System }}<|im_end|>\n<|im_start|>user\n{{ .Prompt }}<|im_end|>\n<|im_start|>assistant\n",
      parameters: { temperature: 0.7, top_p: 0.9, stop: ["<|im_end|>", "<|endoftext|>"] },
    });
  });

  it("keeps model names and hub references as they are", () => {
    resolved.length = 0;
    const chatml = toCreateRequest(parseModelfile(fixture("chatml-messages.Modelfile")), { resolvePath });
    assert.deepEqual(chatml, {
      from: "hf.co/HuggingFaceTB/SmolLM2-135M-Instruct-GGUF:Q4_1",
      template:
        "{{- range .Messages }}<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n{{ end }}<|im_start|>assistant\n",
      system: "You are a concise assistant.",
      parameters: { num_ctx: 2048, stop: ["<|im_end|>"] },
      messages: [
        { role: "user", content: "What is 2+2?" },
        { role: "assistant", content: "4" },
      ],
      license: "Apache License\nVersion 2.0",
    });
    assert.deepEqual(resolved, [], "nothing was treated as a path");
  });

  it("detects local paths by prefix or .gguf suffix, but not hub file-name tags", () => {
    for (const p of ["/abs/m.gguf", "./m", "../up/m.bin", "~/m.gguf", "~", "plain.gguf", "dir/Model.GGUF"]) {
      assert.equal(isLocalPath(p), true, p);
    }
    for (const p of [
      "llama3.2",
      "llama3.2:1b",
      "library/qwen:latest",
      "hf.co/org/repo:Llama-3.2-1B-Q4_K_M.gguf",
      "huggingface.co/org/repo",
    ]) {
      assert.equal(isLocalPath(p), false, p);
    }
    const body = toCreateRequest(parseModelfile("FROM ~/gguf/tiny.gguf"), { resolvePath });
    assert.equal(body.from, "/home/me/gguf/tiny.gguf");
  });

  it("lets the last single-valued command win and collects repeated ones", () => {
    const mf = parseModelfile(
      [
        "FROM first",
        "FROM second",
        "SYSTEM a",
        "SYSTEM b",
        "PARAMETER temperature 0.1",
        "PARAMETER temperature 0.2",
        "PARAMETER use_mmap false",
        "ADAPTER ./lora-a.gguf",
        "ADAPTER /abs/lora-b.gguf",
        "LICENSE one",
        "LICENSE two",
        "REQUIRES 0.5.0",
        "MESSAGE system s",
        "MESSAGE user u",
      ].join("\n"),
    );
    assert.deepEqual(toCreateRequest(mf, { resolvePath }), {
      from: "second",
      system: "b",
      requires: "0.5.0",
      parameters: { temperature: 0.2, use_mmap: false },
      messages: [
        { role: "system", content: "s" },
        { role: "user", content: "u" },
      ],
      license: ["one", "two"],
      adapters: ["/home/me/models/lora-a.gguf", "/abs/lora-b.gguf"],
    });
  });

  it("takes a second FROM naming a local GGUF as the projector of a vision model", () => {
    const body = toCreateRequest(parseModelfile("FROM ./model.gguf\nFROM ../mmproj-f16.gguf\n"), { resolvePath });
    assert.deepEqual(body, { from: "/home/me/models/model.gguf", projector: "/home/me/mmproj-f16.gguf" });
    assert.deepEqual(toCreateRequest(parseModelfile("FROM llava\nFROM ./p.gguf"), { resolvePath }), {
      from: "llava",
      projector: "/home/me/models/p.gguf",
    });
  });

  it("omits everything the Modelfile does not set", () => {
    assert.deepEqual(toCreateRequest(parseModelfile("FROM llama3"), { resolvePath }), { from: "llama3" });
  });

  it("refuses a hand-built Modelfile without FROM", () => {
    assert.throws(
      () => toCreateRequest({ commands: [{ name: "system", args: "x" }] }, { resolvePath }),
      (e: unknown) => e instanceof ModelfileSyntaxError && e.message === "no FROM line" && e.line === null,
    );
  });
});

describe("modelfileFromShow", () => {
  const show = {
    from: "/home/me/.gantry/models/blobs/sha256-abc",
    template: "{{ .Prompt }}",
    system: "Be brief.",
    parameters: { top_k: 40, stop: ["<|im_end|>", "User:"], temperature: 0.7, numa: false },
    messages: [
      { role: "user", content: "hi" },
      { role: "assistant", content: "hello\nthere" },
    ],
    license: ["MIT", "line one\nline two"],
  };

  it("prints FROM, TEMPLATE, SYSTEM, sorted PARAMETERs, MESSAGEs and LICENSEs", () => {
    assert.equal(
      formatModelfile(modelfileFromShow(show)),
      [
        "FROM /home/me/.gantry/models/blobs/sha256-abc",
        "TEMPLATE {{ .Prompt }}",
        "SYSTEM Be brief.",
        "PARAMETER numa false",
        'PARAMETER stop "<|im_end|>"',
        'PARAMETER stop "User:"',
        "PARAMETER temperature 0.7",
        "PARAMETER top_k 40",
        "MESSAGE user hi",
        'MESSAGE assistant """hello\nthere"""',
        "LICENSE MIT",
        'LICENSE """line one\nline two"""',
        "",
      ].join("\n"),
    );
  });

  it("recreates the same model: show -> Modelfile text -> create body carries the same fields", () => {
    const body = toCreateRequest(parseModelfile(formatModelfile(modelfileFromShow(show))), { resolvePath });
    assert.deepEqual(body, {
      from: show.from,
      template: show.template,
      system: show.system,
      parameters: show.parameters,
      messages: show.messages,
      license: show.license,
    });
  });

  it("omits empty optional parts", () => {
    assert.equal(
      formatModelfile(modelfileFromShow({ from: "llama3", template: "", license: "MIT" })),
      "FROM llama3\nLICENSE MIT\n",
    );
  });

  it("rejects parameters and roles a Modelfile cannot express", () => {
    assert.throws(
      () => modelfileFromShow({ from: "x", parameters: { bogus: 1 } }),
      (e: unknown) => e instanceof AppError && e.code === "BAD_REQUEST" && /unknown parameter "bogus"/.test(e.message),
    );
    assert.throws(
      () => modelfileFromShow({ from: "x", parameters: { num_ctx: 1.5 } }),
      (e: unknown) => e instanceof AppError && /expected an integer/.test(e.message),
    );
    assert.throws(
      () => modelfileFromShow({ from: "x", messages: [{ role: "tool", content: "r" }] }),
      (e: unknown) => e instanceof AppError && /role "tool"/.test(e.message),
    );
  });
});
