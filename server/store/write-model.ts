// The last step of every create and pull: the config blob (what `gantry list` shows without opening the GGUF) and
// the manifest that names the model. One place, so a created and a pulled model are stored alike.
import type { GgufSummary } from "../gguf/metadata.ts";
import type { ModelName } from "../common/model-name.ts";
import type { BlobStore } from "./blobs.ts";
import {
  CONFIG_MEDIA_TYPE,
  MANIFEST_MEDIA_TYPE,
  type Descriptor,
  type ManifestStore,
  layerMediaType,
  type ModelConfig,
} from "./manifests.ts";
import type { ProgressListener } from "./types.ts";

/**
 * The config of a model from its GGUF header; a header the reader could not parse (null) gives "unknown" fields. A
 * vision model's families name its projector's architecture too, as Ollama's do ("llama", "clip").
 */
export function modelConfig(summary: GgufSummary | null, layers: readonly Descriptor[] = []): ModelConfig {
  const family = summary?.architecture ?? "unknown";
  return {
    model_format: "gguf",
    model_family: family,
    model_families: layers.some((l) => l.mediaType === layerMediaType("projector")) ? [family, "clip"] : [family],
    model_type: summary?.parameterSize ?? "unknown",
    file_type: summary?.quantizationLevel ?? "unknown",
  };
}

/** Stores the config blob, then the manifest (progress "writing manifest", then "success"). */
export async function writeModel(
  store: { blobs: BlobStore; manifests: ManifestStore },
  name: ModelName,
  layers: Descriptor[],
  summary: GgufSummary | null,
  progress: ProgressListener,
): Promise<void> {
  const configBlob = await store.blobs.put(Buffer.from(JSON.stringify(modelConfig(summary, layers)), "utf8"));
  progress({ status: "writing manifest" });
  await store.manifests.write(name, {
    schemaVersion: 2,
    mediaType: MANIFEST_MEDIA_TYPE,
    config: { mediaType: CONFIG_MEDIA_TYPE, digest: configBlob.digest, size: configBlob.size },
    layers,
  });
  progress({ status: "success" });
}
