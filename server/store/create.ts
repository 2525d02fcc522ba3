// POST /api/create semantics: assemble a model's layers from a base (an existing model, a GGUF on the server, or
// uploaded blobs) plus overrides (template, system, parameters, messages, license, adapters), then write the manifest.
import fs from "node:fs/promises";
import path from "node:path";
import { AppError } from "../common/errors.ts";
import { assertGguf, type GgufSummaryCache } from "../gguf/metadata.ts";
import type { BlobStore } from "./blobs.ts";
import { parseDigest, type Digest } from "./digest.ts";
import { layerKind, layerMediaType, type Descriptor, type LayerKind, type ManifestStore } from "./manifests.ts";
import { decodeLayers } from "./layers.ts";
import { parseModelName } from "../common/model-name.ts";
import { parseTemplate } from "../template/index.ts";
import type { ModelParameters } from "./schemas.ts";
import type { CreateModelInput, ProgressListener } from "./types.ts";
import { writeModel } from "./write-model.ts";

export interface CreateContext {
  blobs: BlobStore;
  manifests: ManifestStore;
  gguf: GgufSummaryCache;
}

/** `from` values that name a file on the server rather than a model. */
export const isPathRef = (ref: string): boolean =>
  ref.toLowerCase().endsWith(".gguf") || ref.startsWith("/") || ref.startsWith("./") || ref.startsWith("../");

/** A layer plus whether this create stored its blob for the first time (for the progress messages). */
interface NewLayer {
  layer: Descriptor;
  created: boolean;
}

const descriptor = (kind: LayerKind, digest: Digest, size: number): Descriptor => ({
  mediaType: layerMediaType(kind),
  digest,
  size,
});

async function uploadedGguf(
  ctx: CreateContext,
  kind: LayerKind,
  fileName: string,
  digestText: string,
): Promise<NewLayer> {
  const digest = parseDigest(digestText);
  const size = await ctx.blobs.size(digest);
  if (size === null)
    throw new AppError(
      "BLOB_NOT_FOUND",
      `blob ${digest} for "${fileName}" has not been uploaded (POST /api/blobs/${digest})`,
    );
  await assertGguf(ctx.blobs.path(digest), `"${fileName}"`);
  return { layer: descriptor(kind, digest, size), created: false };
}

async function baseLayers(ctx: CreateContext, req: CreateModelInput, progress: ProgressListener): Promise<NewLayer[]> {
  if (req.from !== undefined && req.files !== undefined)
    throw new AppError("BAD_REQUEST", `give either "from" or "files", not both`);
  if (req.from !== undefined) {
    if (!isPathRef(req.from)) {
      const base = await ctx.manifests.read(parseModelName(req.from));
      if (!base) throw new AppError("MODEL_NOT_FOUND", `base model "${req.from}" not found`, { param: "from" });
      return base.manifest.layers.map((layer) => ({ layer, created: false }));
    }
    const file = path.resolve(req.from);
    if (
      !(await fs.stat(file).then(
        (s) => s.isFile(),
        () => false,
      ))
    ) {
      throw new AppError("BAD_REQUEST", `file "${req.from}" does not exist on the server`, { param: "from" });
    }
    await assertGguf(file, `"${req.from}"`);
    progress({ status: "parsing GGUF" });
    const stored = await ctx.blobs.importFile(file);
    return [{ layer: descriptor("model", stored.digest, stored.size), created: stored.created }];
  }
  if (req.files !== undefined) {
    const layers: NewLayer[] = [];
    for (const [fileName, digest] of Object.entries(req.files)) {
      if (!fileName.toLowerCase().endsWith(".gguf")) {
        throw new AppError("UNSUPPORTED_FIELD", `"${fileName}": only GGUF files can be imported`, { param: "files" });
      }
      // A projector (mmproj) is a GGUF of architecture "clip", whatever its file is called.
      const uploaded = await uploadedGguf(ctx, "model", fileName, digest);
      const summary = await ctx.gguf.get(uploaded.layer.digest, ctx.blobs.path(uploaded.layer.digest)).catch(() => {
        throw new AppError("MODEL_INVALID_FILE", `"${fileName}" is not a readable GGUF file`, { param: "files" });
      });
      layers.push(
        summary.architecture === "clip"
          ? { ...uploaded, layer: descriptor("projector", uploaded.layer.digest, uploaded.layer.size) }
          : uploaded,
      );
    }
    const count = (kind: LayerKind) => layers.filter((l) => layerKind(l.layer) === kind).length;
    if (count("model") !== 1) {
      throw new AppError(
        "BAD_REQUEST",
        `"files" must contain exactly one model GGUF (split GGUFs are not supported)${count("model") === 0 && count("projector") > 0 ? `; the files given are projectors (general.architecture "clip") only` : ""}`,
        { param: "files" },
      );
    }
    if (count("projector") > 1)
      throw new AppError("BAD_REQUEST", `"files" may contain one projector (mmproj) GGUF, not ${count("projector")}`, {
        param: "files",
      });
    progress({ status: "parsing GGUF" });
    return layers;
  }
  throw new AppError("BAD_REQUEST", `neither "from" nor "files" was given`, { param: "from" });
}

async function textLayer(ctx: CreateContext, kind: LayerKind, text: string): Promise<NewLayer> {
  const stored = await ctx.blobs.put(Buffer.from(text, "utf8"));
  return { layer: descriptor(kind, stored.digest, stored.size), created: stored.created };
}

/** The overriding layers of a request, and the kinds of base layers they replace. */
async function overrideLayers(
  ctx: CreateContext,
  req: CreateModelInput,
  base: Descriptor[],
): Promise<{ added: NewLayer[]; replaced: Set<LayerKind> }> {
  const added: NewLayer[] = [];
  const replaced = new Set<LayerKind>();
  const text = async (kind: LayerKind, values: string[]) => {
    replaced.add(kind);
    for (const v of values) added.push(await textLayer(ctx, kind, v));
  };
  for (const [fileName, digest] of Object.entries(req.adapters ?? {}))
    added.push(await uploadedGguf(ctx, "adapter", fileName, digest));
  if (req.template !== undefined) await text("template", [req.template]);
  if (req.system !== undefined) await text("system", [req.system]);
  if (req.parameters !== undefined) {
    // New parameters override the base model's one by one, as Modelfile PARAMETER lines do.
    const inherited = base.some((l) => layerKind(l) === "params")
      ? (await decodeLayers(ctx.blobs, base)).parameters
      : {};
    const merged: ModelParameters = { ...inherited, ...req.parameters };
    await text("params", [JSON.stringify(merged)]);
  }
  if (req.messages !== undefined) await text("messages", [JSON.stringify(req.messages)]);
  if (req.license !== undefined) await text("license", typeof req.license === "string" ? [req.license] : req.license);
  return { added, replaced };
}

export async function createModel(
  ctx: CreateContext,
  req: CreateModelInput,
  progress: ProgressListener,
): Promise<void> {
  if (req.quantize !== undefined)
    throw new AppError("UNSUPPORTED_FIELD", `"quantize" is not supported: import an already quantized GGUF`, {
      param: "quantize",
    });
  if (req.modelfile !== undefined) {
    throw new AppError(
      "UNSUPPORTED_FIELD",
      `"modelfile" is not supported: send from/files/template/system/parameters (the gantry CLI parses Modelfiles)`,
      { param: "modelfile" },
    );
  }
  const name = parseModelName(req.model);
  // Checked before anything is stored: a template that does not parse would fail every later request on the model.
  if (req.template !== undefined) checkTemplate(req.template);
  const base = await baseLayers(ctx, req, progress);
  const { added, replaced } = await overrideLayers(
    ctx,
    req,
    base.map((b) => b.layer),
  );
  const kept = base.filter((b) => {
    const k = layerKind(b.layer);
    return k === null || !replaced.has(k);
  });
  const layers = sortLayers(dedupe([...kept, ...added]));

  const model = layers.find((l) => layerKind(l.layer) === "model")!.layer;
  const summary = await ctx.gguf.get(model.digest, ctx.blobs.path(model.digest));
  for (const l of layers)
    progress({ status: `${l.created ? "creating new" : "using existing"} layer ${l.layer.digest}` });

  await writeModel(
    ctx,
    name,
    layers.map((l) => l.layer),
    summary,
    progress,
  );
}

/** Parses a Go template as every request will; a TEMPLATE_ERROR (400) with the parser's message when it does not. */
function checkTemplate(template: string): void {
  try {
    parseTemplate(template);
  } catch (e) {
    if (e instanceof RangeError)
      throw new AppError("TEMPLATE_ERROR", "template: nests too deeply to parse", { param: "template" });
    throw e;
  }
}

const dedupe = (layers: NewLayer[]): NewLayer[] =>
  layers.filter(
    (l, i) =>
      layers.findIndex((o) => o.layer.digest === l.layer.digest && o.layer.mediaType === l.layer.mediaType) === i,
  );

// Model first, then a fixed order, so equal content always gives an equal manifest.
const KIND_ORDER: readonly (LayerKind | null)[] = [
  "model",
  "projector",
  "adapter",
  "template",
  "system",
  "params",
  "messages",
  "license",
  null,
];
const sortLayers = (layers: NewLayer[]): NewLayer[] =>
  layers
    .map((l, i) => ({ l, i }))
    .sort((a, b) => KIND_ORDER.indexOf(layerKind(a.l.layer)) - KIND_ORDER.indexOf(layerKind(b.l.layer)) || a.i - b.i)
    .map((x) => x.l);
