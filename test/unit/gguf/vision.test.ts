// The generated vision projector as a GGUF reader sees it: an mmproj file (general.architecture "clip") with
// llama.cpp's LLaVA MLP projector keys and tensors, shaped for the tiny text model; the same seed writes the same
// bytes.
// (That llama.cpp's mtmd accepts it is tested against llama-mtmd-cli in test/integration/setup/vision-pair.test.ts.)
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { readGgufHeader } from "../../../server/gguf/reader.ts";
import { TINY_SHAPE } from "../../support/gguf/tiny.ts";
import { GGML_TYPE } from "../../support/gguf/types.ts";
import { imageTokens, TINY_PROJECTOR, writeTinyProjector } from "../../support/gguf/vision.ts";

test("the tiny projector is a CLIP mmproj with a LLaVA MLP projector into the tiny model's 64-wide embeddings", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-vision-gguf-"));
  try {
    const file = path.join(dir, "mmproj.gguf");
    await writeTinyProjector(file, { seed: 3 });
    const h = await readGgufHeader(file);
    const meta = (k: string) => h.metadata.get(k);
    assert.equal(meta("general.architecture"), "clip");
    assert.equal(meta("general.type"), "mmproj");
    assert.equal(meta("clip.projector_type"), "mlp");
    assert.equal(meta("clip.has_vision_encoder"), true);
    assert.equal(meta("clip.vision.image_size"), TINY_PROJECTOR.imageSize);
    assert.equal(meta("clip.vision.patch_size"), TINY_PROJECTOR.patchSize);
    assert.equal(imageTokens(), 16);
    const tensor = (name: string) => h.tensors.find((t) => t.name === name);
    // A conv kernel over 16 x 16 RGB patches, one position per patch plus the class embedding.
    assert.deepEqual(tensor("v.patch_embd.weight")?.dims, [16, 16, 3, TINY_PROJECTOR.nEmbd]);
    assert.equal(tensor("v.patch_embd.weight")?.type, GGML_TYPE.F16);
    assert.deepEqual(tensor("v.position_embd.weight")?.dims, [TINY_PROJECTOR.nEmbd, imageTokens() + 1]);
    // Its output width is the text model's embedding width (mtmd refuses a projector for another width).
    assert.deepEqual(tensor("mm.2.weight")?.dims, [TINY_PROJECTOR.nEmbdText, TINY_SHAPE.nEmbd]);
    for (let l = 0; l < TINY_PROJECTOR.nLayer; l++)
      for (const m of ["attn_q", "attn_k", "attn_v", "attn_out", "ln1", "ln2", "ffn_up", "ffn_down"])
        assert.ok(tensor(`v.blk.${l}.${m}.weight`), `v.blk.${l}.${m}.weight`);

    const again = path.join(dir, "again.gguf");
    await writeTinyProjector(again, { seed: 3 });
    assert.ok(fs.readFileSync(file).equals(fs.readFileSync(again)));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
