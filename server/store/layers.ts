// Decoding a manifest's layers into what the engine and /api/show need. Text layers are small blobs read on demand.
import fs from "node:fs/promises";
import { AppError } from "../common/errors.ts";
import type { BlobStore } from "./blobs.ts";
import { layerKind, type Descriptor } from "./manifests.ts";
import { StoredMessageShape, StoredParametersSchema, type ModelParameters } from "./schemas.ts";
import type { BlobRef, DecodedLayers, ModelOptions } from "./types.ts";

const missingBlob = (d: Descriptor) =>
  new AppError(
    "BLOB_NOT_FOUND",
    `blob ${d.digest} of this model is missing from the store; create or pull the model again`,
  );

async function readText(blobs: BlobStore, d: Descriptor): Promise<string> {
  try {
    return await fs.readFile(blobs.path(d.digest), "utf8");
  } catch {
    throw missingBlob(d);
  }
}

async function readJson(blobs: BlobStore, d: Descriptor): Promise<unknown> {
  try {
    return JSON.parse(await readText(blobs, d));
  } catch (e) {
    if (e instanceof AppError) throw e;
    throw new AppError("INTERNAL", `layer ${d.digest} is not valid JSON`, { cause: e });
  }
}

async function fileRef(blobs: BlobStore, d: Descriptor): Promise<BlobRef> {
  if (!(await blobs.has(d.digest))) throw missingBlob(d);
  return { digest: d.digest, path: blobs.path(d.digest) };
}

export async function decodeLayers(blobs: BlobStore, layers: readonly Descriptor[]): Promise<DecodedLayers> {
  const modelParts: BlobRef[] = [];
  const out: Omit<DecodedLayers, "model" | "modelParts"> = {
    adapters: [],
    parameters: {},
    messages: [],
    licenses: [],
    size: 0,
  };
  for (const layer of layers) {
    out.size += layer.size;
    switch (layerKind(layer)) {
      case "model":
        modelParts.push(await fileRef(blobs, layer));
        break;
      case "projector":
        out.projector = await fileRef(blobs, layer);
        break;
      case "adapter":
        out.adapters.push(await fileRef(blobs, layer));
        break;
      case "template":
        out.template = await readText(blobs, layer);
        break;
      case "system":
        out.system = await readText(blobs, layer);
        break;
      case "license":
        out.licenses.push(await readText(blobs, layer));
        break;
      case "params":
        out.parameters = StoredParametersSchema.parse(await readJson(blobs, layer));
        break;
      case "messages":
        out.messages = StoredMessageShape.array().parse(await readJson(blobs, layer));
        break;
      case null:
        break; // unknown media types (newer Ollama layers) are carried along but not interpreted
    }
  }
  const model = modelParts[0];
  if (!model) throw new AppError("INTERNAL", "manifest has no model layer");
  return { model, modelParts, ...out };
}

/** The stored parameters the engine honours. */
export function toModelOptions(p: ModelParameters): ModelOptions {
  const keys = [
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "seed",
    "num_predict",
    "stop",
    "repeat_penalty",
    "repeat_last_n",
    "presence_penalty",
    "frequency_penalty",
    "num_ctx",
    "use_mmap",
    "draft_ngram",
    "draft_min",
  ] as const satisfies readonly (keyof ModelOptions & keyof ModelParameters)[];
  const out: Record<string, unknown> = {};
  for (const k of keys) if (p[k] !== undefined) out[k] = p[k];
  return out as ModelOptions;
}
