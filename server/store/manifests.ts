// Manifests: Docker v2-style JSON at manifests/<host>/<namespace>/<model>/<tag>, one per model name. Written to a temp
// file and renamed, so readers never see half a manifest. Lookups are case-insensitive, as names are.
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { AppError } from "../common/errors.ts";
import { parseDigest, type Digest } from "./digest.ts";
import { fromManifestPath, nameKey, toManifestPath, type ModelName } from "../common/model-name.ts";

export const MANIFEST_MEDIA_TYPE = "application/vnd.docker.distribution.manifest.v2+json";
export const CONFIG_MEDIA_TYPE = "application/vnd.docker.container.image.v1+json";

export const LAYER_KINDS = [
  "model",
  "template",
  "system",
  "params",
  "messages",
  "license",
  "projector",
  "adapter",
] as const;
export type LayerKind = (typeof LAYER_KINDS)[number];
export const layerMediaType = (kind: LayerKind): string => `application/vnd.ollama.image.${kind}`;

const DigestSchema = z.string().transform((s, ctx) => {
  try {
    return parseDigest(s);
  } catch {
    ctx.addIssue({ code: "custom", message: "invalid digest" });
    return z.NEVER;
  }
});

const DescriptorSchema = z.object({
  mediaType: z.string(),
  digest: DigestSchema,
  size: z.number().int().nonnegative(),
});

export const ManifestSchema = z.object({
  schemaVersion: z.literal(2),
  mediaType: z.string(),
  config: DescriptorSchema,
  layers: z.array(DescriptorSchema),
});

export type Descriptor = z.infer<typeof DescriptorSchema>;
export type Manifest = z.infer<typeof ManifestSchema>;

/** The config blob: what `gantry list` shows without opening the GGUF. */
export const ModelConfigSchema = z.object({
  model_format: z.literal("gguf"),
  model_family: z.string(),
  model_families: z.array(z.string()),
  model_type: z.string(),
  file_type: z.string(),
});
export type ModelConfig = z.infer<typeof ModelConfigSchema>;

export interface StoredManifest {
  name: ModelName;
  manifest: Manifest;
  /** sha256 of the manifest bytes: the model's identity in /api/tags. */
  digest: Digest;
  modifiedAt: Date;
}

export const layerKind = (d: Descriptor): LayerKind | null =>
  LAYER_KINDS.find((k) => d.mediaType === layerMediaType(k)) ?? null;

export const layersOf = (m: Manifest, kind: LayerKind): Descriptor[] => m.layers.filter((l) => layerKind(l) === kind);

/** Every blob a manifest needs: its config and its layers. */
export const referencedDigests = (m: Manifest): Digest[] => [m.config.digest, ...m.layers.map((l) => l.digest)];

const isENOENT = (e: unknown) => typeof e === "object" && e !== null && (e as NodeJS.ErrnoException).code === "ENOENT";

export class ManifestStore {
  readonly dir: string;

  constructor(root: string) {
    this.dir = path.join(root, "manifests");
  }

  /** Writes a manifest (replacing one whose name differs only in case) and returns its digest. */
  async write(name: ModelName, manifest: Manifest): Promise<Digest> {
    const existing = await this.locate(name);
    const file = this.fileOf(name);
    const body = JSON.stringify(manifest);
    await fs.mkdir(path.dirname(file), { recursive: true });
    const temp = `${file}.${randomBytes(6).toString("hex")}.tmp`;
    try {
      await fs.writeFile(temp, body, { flag: "wx" });
      await fs.rename(temp, file);
    } finally {
      await fs.rm(temp, { force: true });
    }
    if (existing && existing !== file) await this.removeFile(existing);
    return parseDigest(`sha256:${createHash("sha256").update(body).digest("hex")}`);
  }

  /** The manifest of a name, or null when there is none. */
  async read(name: ModelName): Promise<StoredManifest | null> {
    const file = await this.locate(name);
    return file ? this.readFile(file) : null;
  }

  /** Every manifest in the store (files that are not valid manifests are skipped). */
  async list(): Promise<StoredManifest[]> {
    const out: StoredManifest[] = [];
    for (const file of await this.walk()) {
      const m = await this.readFile(file).catch(() => null);
      if (m) out.push(m);
    }
    return out;
  }

  /** Deletes a manifest; false when there was none. */
  async delete(name: ModelName): Promise<boolean> {
    const file = await this.locate(name);
    if (!file) return false;
    await this.removeFile(file);
    return true;
  }

  private fileOf(name: ModelName): string {
    return path.join(this.dir, ...toManifestPath(name));
  }

  // Exact path first (the common case), then a case-insensitive scan.
  private async locate(name: ModelName): Promise<string | null> {
    const exact = this.fileOf(name);
    if (
      await fs.stat(exact).then(
        (s) => s.isFile(),
        () => false,
      )
    )
      return exact;
    const key = nameKey(name);
    for (const file of await this.walk()) {
      const n = this.nameOfFile(file);
      if (n && nameKey(n) === key) return file;
    }
    return null;
  }

  private nameOfFile(file: string): ModelName | null {
    try {
      return fromManifestPath(path.relative(this.dir, file).split(path.sep));
    } catch {
      return null;
    }
  }

  private async readFile(file: string): Promise<StoredManifest | null> {
    const name = this.nameOfFile(file);
    if (!name) return null;
    let body: string;
    let stat;
    try {
      [body, stat] = await Promise.all([fs.readFile(file, "utf8"), fs.stat(file)]);
    } catch (e) {
      if (isENOENT(e)) return null;
      throw e;
    }
    let parsed;
    try {
      parsed = ManifestSchema.safeParse(JSON.parse(body));
    } catch {
      parsed = null;
    }
    if (!parsed?.success) throw new AppError("INTERNAL", `corrupt manifest ${path.relative(this.dir, file)}`);
    return {
      name,
      manifest: parsed.data,
      digest: parseDigest(`sha256:${createHash("sha256").update(body).digest("hex")}`),
      modifiedAt: stat.mtime,
    };
  }

  private async walk(): Promise<string[]> {
    let entries;
    try {
      entries = await fs.readdir(this.dir, { recursive: true, withFileTypes: true });
    } catch (e) {
      if (isENOENT(e)) return [];
      throw e;
    }
    return entries
      .filter((e) => e.isFile() && !e.name.endsWith(".tmp"))
      .map((e) => path.join(e.parentPath, e.name))
      .filter((f) => path.relative(this.dir, f).split(path.sep).length === 4)
      .sort();
  }

  // Removes the file, then the directories it leaves empty (up to manifests/).
  private async removeFile(file: string): Promise<void> {
    await fs.rm(file, { force: true });
    let dir = path.dirname(file);
    while (dir.startsWith(this.dir + path.sep)) {
      try {
        await fs.rmdir(dir);
      } catch {
        break;
      }
      dir = path.dirname(dir);
    }
  }
}
