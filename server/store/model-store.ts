// The model store: named models (manifests) over content-addressed blobs, under one root directory
// (GANTRY_MODELS): blobs/sha256-<hex> and manifests/<host>/<namespace>/<model>/<tag>.
import fs from "node:fs/promises";
import path from "node:path";
import { AppError, modelNotFound } from "../common/errors.ts";
import type { Logger } from "../common/logger.ts";
import { silentLogger } from "../common/logger.ts";
import { assertGguf, GgufSummaryCache, readGgufSummary, type GgufSummary } from "../gguf/metadata.ts";
import { BlobStore, hashFile } from "./blobs.ts";
import { modelCapabilities } from "./capabilities.ts";
import { createModel, isPathRef } from "./create.ts";
import type { Digest } from "./digest.ts";
import { decodeLayers, toModelOptions } from "./layers.ts";
import { layersOf, ManifestStore, ModelConfigSchema, referencedDigests, type StoredManifest } from "./manifests.ts";
import { formatModelName, parseModelName, qualifiedModelName } from "../common/model-name.ts";
import { linkSplitParts, splitModelDir } from "./splits.ts";
import type {
  CreateModelInput,
  DecodedLayers,
  ModelDescription,
  ModelDetails,
  ModelResolver,
  ModelSpec,
  ModelSummary,
  ProgressListener,
} from "./types.ts";

export class ModelStore implements ModelResolver {
  readonly root: string;
  readonly blobs: BlobStore;
  readonly manifests: ManifestStore;
  private readonly gguf = new GgufSummaryCache();
  private readonly logger: Logger;
  /** Digests of ad-hoc GGUF files, keyed by path, mtime and size so an edited file is hashed again. */
  private readonly fileDigests = new Map<string, Promise<Digest>>();
  /** With `only`: the models this store shows (qualified names in lower case, .gguf paths resolved). */
  private only: ReadonlySet<string> | undefined;
  /** The `only` references as given, named in the not-found error of another model. */
  private onlyNames: readonly string[] = [];
  /** Other names of models (key: the alias's first onlyKeys key), as given: alias → model. */
  private aliases = new Map<string, { alias: string; model: string }>();

  /**
   * `only` (GANTRY_ONLY_MODELS): the models this store lists and resolves; every other one in the directory is hidden
   * and "not found", as if absent (the pod of an app shares its model volume with other apps). Empty or absent: all.
   * `aliases` (GANTRY_MODEL_ALIASES): other names that select a model (an app's name selects its model).
   */
  constructor(opts: {
    root: string;
    logger?: Logger;
    only?: readonly string[];
    aliases?: Readonly<Record<string, string>>;
  }) {
    this.root = path.resolve(opts.root);
    this.blobs = new BlobStore(this.root);
    this.manifests = new ManifestStore(this.root);
    this.logger = opts.logger ?? silentLogger;
    this.restrict(opts);
  }

  /** Sets `only` and `aliases` (see the constructor); `gantry run` sets them once it knows the model it serves. */
  restrict(opts: { only?: readonly string[]; aliases?: Readonly<Record<string, string>> }): void {
    this.only = opts.only?.length ? new Set(opts.only.flatMap((ref) => onlyKeys(ref))) : undefined;
    this.onlyNames = opts.only ?? [];
    this.aliases = new Map();
    for (const [alias, model] of Object.entries(opts.aliases ?? {})) {
      const key = onlyKeys(alias)[0];
      // An alias spelling the model's own name (`chat` for `chat:latest`) already selects it.
      if (key !== undefined && key !== onlyKeys(model)[0]) this.aliases.set(key, { alias, model });
    }
  }

  /** The model a reference selects: the model of an alias, else the reference itself. */
  private canonical(ref: string): string {
    if (this.aliases.size === 0) return ref;
    const key = onlyKeys(ref)[0];
    return (key !== undefined && this.aliases.get(key)?.model) || ref;
  }

  /** The aliases that select a model (as /v1/models lists them, after the model's own name). */
  aliasesOf(name: string): string[] {
    const key = onlyKeys(name)[0];
    return [...this.aliases.values()].filter((a) => onlyKeys(a.model)[0] === key).map((a) => a.alias);
  }

  /** Whether a reference names a model this store shows (always, without `only`). */
  shows(ref: string): boolean {
    const only = this.only;
    return !only || onlyKeys(this.canonical(ref)).some((k) => only.has(k));
  }

  private assertShown(ref: string): void {
    if (this.only && onlyKeys(ref).length > 0 && !this.shows(ref))
      throw new AppError(
        "MODEL_NOT_FOUND",
        `model "${ref}" not found: this server serves ${this.servedNames()} (GET /v1/models or /api/tags lists it)`,
        { param: "model" },
      );
  }

  /** The served models, each with its aliases: `"hf.co/org/repo:Q4_K_M" (also "chat")`. */
  private servedNames(): string {
    return this.onlyNames
      .map((n) => {
        const aliases = this.aliasesOf(n);
        return (
          JSON.stringify(n) + (aliases.length ? ` (also ${aliases.map((a) => JSON.stringify(a)).join(", ")})` : "")
        );
      })
      .join(", ");
  }

  /** A stored model by name, or a path ending in ".gguf" to a file on this machine (used as it is, not imported). */
  async resolve(alias: string): Promise<ModelSpec> {
    const ref = this.canonical(alias);
    this.assertShown(ref);
    const { displayName, layers } = await this.locate(ref);
    // llama.cpp finds the other parts of a split model only next to the first, under the split naming pattern.
    const modelPath =
      layers.modelParts.length > 1
        ? await linkSplitParts(
            this.root,
            this.blobs,
            layers.modelParts.map((p) => p.digest),
          )
        : layers.model.path;
    return {
      name: displayName,
      digest: layers.model.digest,
      modelPath,
      ...(layers.template !== undefined ? { template: layers.template } : {}),
      ...(layers.system !== undefined ? { system: layers.system } : {}),
      parameters: toModelOptions(layers.parameters),
      messages: layers.messages,
      adapters: layers.adapters.map((a) => a.path),
      ...(layers.projector ? { projector: layers.projector.path } : {}),
      size: layers.size,
      ...(layers.parameters.draft_model !== undefined
        ? { draft: await this.draftOf(layers.parameters.draft_model) }
        : {}),
    };
  }

  /** A draft model named by PARAMETER draft_model: its weights (its own draft model, if any, is not used). */
  private async draftOf(name: string): Promise<NonNullable<ModelSpec["draft"]>> {
    const { displayName, layers } = await this.locate(this.canonical(name));
    return { name: displayName, digest: layers.model.digest, modelPath: layers.model.path };
  }

  /** What a resolved model can do (the `capabilities` of /api/show): from its GGUF header and projector. */
  async capabilities(model: ModelSpec): Promise<string[]> {
    const summary = await this.gguf.get(model.digest, model.modelPath);
    return modelCapabilities({
      isEmbedding: summary.isEmbedding,
      isReranker: summary.isReranker,
      hasProjector: model.projector !== undefined,
      goTemplate: model.template,
      jinjaTemplate: summary.chatTemplate,
    });
  }

  /** Stored models, most recently modified first. */
  async list(): Promise<ModelSummary[]> {
    const summaries: ModelSummary[] = [];
    for (const m of await this.manifests.list()) {
      if (this.only && !this.only.has(qualifiedModelName(m.name).toLowerCase())) continue;
      try {
        summaries.push({
          name: formatModelName(m.name),
          digest: m.digest,
          size: m.manifest.layers.reduce((a, l) => a + l.size, 0),
          modifiedAt: m.modifiedAt,
          details: await this.details(m),
        });
      } catch (e) {
        this.logger.warn({ err: e, model: formatModelName(m.name) }, "skipping unreadable model in list");
      }
    }
    return summaries.sort((a, b) => b.modifiedAt.getTime() - a.modifiedAt.getTime());
  }

  /** POST /api/create. Progress statuses follow Ollama's; the last one is "success". */
  async create(req: CreateModelInput, onProgress: ProgressListener = () => {}): Promise<void> {
    await createModel({ blobs: this.blobs, manifests: this.manifests, gguf: this.gguf }, req, onProgress);
    this.logger.info({ model: req.model }, "model created");
  }

  /** Removes a model, then the blobs only it referenced. Throws MODEL_NOT_FOUND. */
  async delete(name: string): Promise<void> {
    const stored = await this.read(name);
    await this.manifests.delete(stored.name);
    const stillUsed = new Set((await this.manifests.list()).flatMap((m) => referencedDigests(m.manifest)));
    for (const digest of new Set(referencedDigests(stored.manifest))) {
      if (!stillUsed.has(digest)) await this.blobs.remove(digest);
    }
    const parts = layersOf(stored.manifest, "model").map((l) => l.digest);
    if (parts.length > 1 && !stillUsed.has(parts[0]!))
      await fs.rm(splitModelDir(this.root, parts), { recursive: true, force: true });
    this.logger.info({ model: formatModelName(stored.name) }, "model deleted");
  }

  /** Gives a model a second name (shares all blobs). Throws MODEL_NOT_FOUND / MODEL_INVALID_NAME. */
  async copy(source: string, destination: string): Promise<void> {
    const dest = parseModelName(destination);
    const stored = await this.read(source);
    await this.manifests.write(dest, stored.manifest);
  }

  /** Removes every blob no manifest references (e.g. uploads never used by a create). Returns what was removed. */
  async prune(): Promise<Digest[]> {
    const used = new Set((await this.manifests.list()).flatMap((m) => referencedDigests(m.manifest)));
    const removed: Digest[] = [];
    for (const blob of await this.blobs.list()) {
      if (!used.has(blob.digest) && (await this.blobs.remove(blob.digest))) removed.push(blob.digest);
    }
    return removed;
  }

  /** What /api/show reports of a model (verbose: every GGUF metadata array in full). */
  async describe(alias: string, opts: { verbose?: boolean } = {}): Promise<ModelDescription> {
    const name = this.canonical(alias);
    this.assertShown(name);
    const { displayName, layers, modifiedAt } = await this.locate(name);
    const summary = opts.verbose
      ? await readGgufSummary(layers.model.path, { verbose: true })
      : await this.gguf.get(layers.model.digest, layers.model.path);
    const projector = layers.projector
      ? await this.gguf.get(layers.projector.digest, layers.projector.path)
      : undefined;
    return {
      displayName,
      layers,
      summary,
      details: projector
        ? { ...detailsOf(summary), families: [summary.architecture, projector.architecture] }
        : detailsOf(summary),
      capabilities: modelCapabilities({
        isEmbedding: summary.isEmbedding,
        isReranker: summary.isReranker,
        hasProjector: !!layers.projector,
        goTemplate: layers.template,
        jinjaTemplate: summary.chatTemplate,
      }),
      ...(projector ? { projector } : {}),
      modifiedAt,
    };
  }

  private async read(name: string): Promise<StoredManifest> {
    this.assertShown(name);
    let parsed;
    try {
      parsed = parseModelName(name);
    } catch (e) {
      // "./missing.gguf" is a file that is not there rather than a malformed model name.
      if (isPathRef(name))
        throw new AppError("MODEL_NOT_FOUND", `model file "${name}" not found on the server`, { param: "model" });
      throw e;
    }
    const stored = await this.manifests.read(parsed);
    if (!stored) throw modelNotFound(name);
    return stored;
  }

  // The config blob answers list() cheaply; models whose config is unreadable fall back to the GGUF header.
  private async details(m: StoredManifest): Promise<ModelDetails> {
    try {
      const config = ModelConfigSchema.parse(
        JSON.parse(await fs.readFile(this.blobs.path(m.manifest.config.digest), "utf8")),
      );
      return {
        parent_model: "",
        format: "gguf",
        family: config.model_family,
        families: config.model_families,
        parameter_size: config.model_type,
        quantization_level: config.file_type,
      };
    } catch {
      const layers = await decodeLayers(this.blobs, m.manifest.layers);
      return detailsOf(await this.gguf.get(layers.model.digest, layers.model.path));
    }
  }

  // A ref is a local file when it ends in ".gguf" and that file exists; otherwise it is a model name.
  private async adHocFile(ref: string): Promise<string | null> {
    if (!ref.toLowerCase().endsWith(".gguf")) return null;
    const file = path.resolve(ref);
    return (await fs.stat(file).then(
      (s) => s.isFile(),
      () => false,
    ))
      ? file
      : null;
  }

  private async fileDigest(file: string): Promise<Digest> {
    const stat = await fs.stat(file);
    const key = `${file}\0${stat.mtimeMs}\0${stat.size}`;
    let digest = this.fileDigests.get(key);
    if (!digest) {
      digest = hashFile(file).then((h) => h.digest);
      digest.catch(() => this.fileDigests.delete(key));
      this.fileDigests.set(key, digest);
    }
    return digest;
  }

  // A model by name, or an existing ".gguf" file as a model with nothing but weights.
  private async locate(ref: string): Promise<{ displayName: string; layers: DecodedLayers; modifiedAt: Date }> {
    const file = await this.adHocFile(ref);
    if (!file) {
      const stored = await this.read(ref);
      return {
        displayName: formatModelName(stored.name),
        layers: await decodeLayers(this.blobs, stored.manifest.layers),
        modifiedAt: stored.modifiedAt,
      };
    }
    await assertGguf(file, `"${file}"`);
    const [digest, stat] = await Promise.all([this.fileDigest(file), fs.stat(file)]);
    return {
      displayName: file,
      layers: {
        model: { digest, path: file },
        modelParts: [{ digest, path: file }],
        adapters: [],
        parameters: {},
        messages: [],
        licenses: [],
        size: stat.size,
      },
      modifiedAt: stat.mtime,
    };
  }
}

/**
 * How `only` compares references: a model name fully qualified in lower case, a .gguf path resolved. A reference that
 * is neither (a malformed name) has no key: it fails later with its own 400.
 */
function onlyKeys(ref: string): string[] {
  const keys: string[] = [];
  try {
    keys.push(qualifiedModelName(parseModelName(ref)).toLowerCase());
  } catch {
    // not a model name
  }
  if (ref.toLowerCase().endsWith(".gguf")) keys.push(path.resolve(ref));
  return keys;
}

const detailsOf = (s: GgufSummary): ModelDetails => ({
  parent_model: "",
  format: "gguf",
  family: s.architecture,
  families: [s.architecture],
  parameter_size: s.parameterSize,
  quantization_level: s.quantizationLevel,
});
