// Pulls from a local hub: which files are chosen, which layers end up in the manifest, and split models.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { getLlama } from "node-llama-cpp";
import { pullModel } from "../../../server/hub/pull.ts";
import { splitModelPath } from "../../../server/store/splits.ts";
import { layerKind, layersOf } from "../../../server/store/manifests.ts";
import { parseModelName } from "../../../server/common/model-name.ts";
import { startHubServer, type HubServer } from "../../support/hub-server.ts";
import { tinyModelPath } from "../../support/models.ts";
import { FAST, progressLog, sha256File, tempStore } from "./helpers.ts";
import { splitGguf } from "./split-gguf.ts";

describe("hub pulls: selection and layers", () => {
  let hub: HubServer;
  let q4: string, q8: string, projF16: string, projQ8: string;

  before(async () => {
    hub = await startHubServer();
    [q4, q8, projF16, projQ8] = await Promise.all([
      tinyModelPath({ seed: 1 }),
      tinyModelPath({ seed: 2 }),
      tinyModelPath({ seed: 3 }),
      tinyModelPath({ seed: 4 }),
    ]);
    await hub.register({
      org: "acme",
      repo: "Vision-GGUF",
      files: {
        "README.md": Buffer.from("# vision\n"),
        "Vision-Q4_K_M.gguf": q4,
        "Vision-Q8_0.gguf": q8,
        "mmproj-Vision-F16.gguf": projF16,
        "mmproj-Vision-Q8_0.gguf": projQ8,
        template: Buffer.from("{{ .System }} {{ .Prompt }}"),
        system: Buffer.from("You are terse."),
        params: Buffer.from(JSON.stringify({ temperature: 0.2, stop: ["<|im_end|>"] })),
      },
    });
  });
  after(() => hub.close());

  it("pulls Q4_K_M by default, with the F16 projector and the template, system and params files", async () => {
    const store = tempStore();
    const log = progressLog();
    const result = await pullModel("hf.co/acme/Vision-GGUF", {
      store,
      hubUrl: hub.url,
      onProgress: log.push,
      tuning: FAST,
    });
    assert.equal(result.name, "hf.co/acme/Vision-GGUF:latest");

    const stored = await store.manifests.read(parseModelName("hf.co/acme/Vision-GGUF"));
    assert.ok(stored);
    assert.deepEqual(
      stored.manifest.layers.map((l) => layerKind(l)),
      ["model", "projector", "template", "system", "params"],
    );
    assert.equal(stored.manifest.layers[0]!.digest, `sha256:${await sha256File(q4)}`);
    assert.equal(stored.manifest.layers[1]!.digest, `sha256:${await sha256File(projF16)}`);

    const spec = await store.resolve("hf.co/acme/Vision-GGUF");
    assert.equal(await sha256File(spec.modelPath), await sha256File(q4));
    assert.equal(await sha256File(spec.projector!), await sha256File(projF16));
    assert.equal(spec.template, "{{ .System }} {{ .Prompt }}");
    assert.equal(spec.system, "You are terse.");
    assert.deepEqual(spec.parameters, { temperature: 0.2, stop: ["<|im_end|>"] });
    assert.deepEqual(
      (await store.list()).map((m) => m.name),
      ["hf.co/acme/Vision-GGUF:latest"],
    );

    const statuses = log.lines.map((p) => p.status);
    assert.equal(statuses[0], "pulling manifest");
    assert.deepEqual(statuses.slice(-3), ["verifying sha256 digest", "writing manifest", "success"]);
    const modelLines = log.lines.filter((p) => p.digest === stored.manifest.layers[0]!.digest);
    assert.equal(modelLines[0]!.status, `pulling ${stored.manifest.layers[0]!.digest.slice(7, 19)}`);
    assert.equal(modelLines.at(-1)!.completed, fs.statSync(q4).size);
    assert.equal(modelLines.at(-1)!.total, fs.statSync(q4).size);
  });

  it("pulls a quant named in any case, with the projector of the same precision, under the upper-cased tag", async () => {
    const store = tempStore();
    hub.resetLog();
    const result = await pullModel("huggingface.co/acme/Vision-GGUF:q8_0", { store, hubUrl: hub.url, tuning: FAST });
    assert.equal(result.name, "hf.co/acme/Vision-GGUF:Q8_0");
    const spec = await store.resolve("hf.co/acme/vision-gguf:Q8_0");
    assert.equal(await sha256File(spec.modelPath), await sha256File(q8));
    assert.equal(await sha256File(spec.projector!), await sha256File(projQ8));
    assert.equal(hub.downloads("Vision-Q4_K_M.gguf").length, 0, "the Q4_K_M file is not downloaded");
    assert.equal(hub.bytesServed("Vision-Q8_0.gguf"), fs.statSync(q8).size);
  });

  it("does not download a blob the store already has", async () => {
    const store = tempStore();
    await pullModel("hf.co/acme/Vision-GGUF:Q8_0", { store, hubUrl: hub.url, tuning: FAST });
    hub.resetLog();
    const log = progressLog();
    await pullModel("hf.co/acme/Vision-GGUF:Vision-Q8_0.gguf", {
      store,
      hubUrl: hub.url,
      onProgress: log.push,
      tuning: FAST,
    });
    assert.equal(hub.bytesServed("Vision-Q8_0.gguf"), 0);
    assert.ok(await store.resolve("hf.co/acme/Vision-GGUF:Vision-Q8_0.gguf"));
    assert.equal(log.lines.at(-1)!.status, "success");
  });

  it("pulls a split model: every part as a model layer in order, linked side by side under llama.cpp's split names", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-split-"));
    const parts = await splitGguf(await tinyModelPath({ seed: 5 }), dir, "Big-Q4_K_M", 3);
    await hub.register({
      org: "acme",
      repo: "Big-GGUF",
      files: Object.fromEntries(parts.map((p) => [`Q4_K_M/${path.basename(p)}`, p])),
    });
    const store = tempStore();
    await pullModel("hf.co/acme/Big-GGUF:Q4_K_M", { store, hubUrl: hub.url, tuning: FAST });
    const stored = await store.manifests.read(parseModelName("hf.co/acme/Big-GGUF:Q4_K_M"));
    const models = layersOf(stored!.manifest, "model");
    assert.deepEqual(
      models.map((l) => l.digest),
      await Promise.all(parts.map(async (p) => `sha256:${await sha256File(p)}`)),
    );

    const first = splitModelPath(
      store.root,
      models.map((l) => l.digest),
    );
    assert.equal(path.basename(first), "model-00001-of-00003.gguf");
    for (const [i, p] of parts.entries()) {
      const linked = path.join(path.dirname(first), `model-0000${i + 1}-of-00003.gguf`);
      assert.equal(await sha256File(linked), await sha256File(p), `part ${i + 1} is reachable next to the first`);
    }
    // llama.cpp loads the whole set from the first link: same tensors as the unsplit model.
    const llama = await getLlama({ gpu: false });
    const [splitModel, wholeModel] = [
      await llama.loadModel({ modelPath: first }),
      await llama.loadModel({ modelPath: await tinyModelPath({ seed: 5 }) }),
    ];
    try {
      assert.equal(splitModel.size, wholeModel.size);
      assert.deepEqual(splitModel.tokenize("hello world"), wholeModel.tokenize("hello world"));
    } finally {
      await splitModel.dispose();
      await wholeModel.dispose();
    }
    // The config was read from the first part's header: the split model is listed with its real family.
    const listed = (await store.list()).find((m) => m.name === "hf.co/acme/Big-GGUF:Q4_K_M");
    assert.equal(listed?.details.family, "llama");
  });
});
