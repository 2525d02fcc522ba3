// pullModel: an hf.co reference → blobs and a manifest in the store, with Ollama's progress status lines:
// pulling manifest → pulling <12 hex> {digest, total, completed}… → verifying sha256 digest → writing manifest →
// success
// Model files (every part of a split set) and the projector are downloaded resumably and verified against the hub's
// LFS sha256; the small optional repo files (template, system, params) are fetched whole. The model is stored under
// its hub name, hf.co/<org>/<repo>:<QUANT | file | latest>.
import fs from "node:fs/promises";
import path from "node:path";
import { AppError } from "../common/errors.ts";
import type { Logger } from "../common/logger.ts";
import { silentLogger } from "../common/logger.ts";
import { ModelParametersSchema } from "../api/store-schemas.ts";
import { readGgufSummary, type GgufSummary } from "../gguf/metadata.ts";
import { blobFileName, digestOf, type Digest } from "../store/digest.ts";
import { layerMediaType, type Descriptor, type LayerKind } from "../store/manifests.ts";
import type { ModelStore } from "../store/model-store.ts";
import { formatModelName, parseModelName } from "../common/model-name.ts";
import { HubClient, hubStatusError } from "./client.ts";
import { downloadVerified, sidecarPath, type DownloadTuning } from "./download.ts";
import { hubModelName, hubRepoLabel, isHubRef, parseHubRef, type HubRef } from "../common/hub-ref.ts";
import { selectGgufFiles, type HubFile } from "./ref.ts";
import { SharedDownloads, type DownloadTask } from "./shared-downloads.ts";
import { linkSplitParts } from "../store/splits.ts";
import type { StoreProgress } from "../store/types.ts";
import { writeModel } from "../store/write-model.ts";

export interface PullOptions {
  store: ModelStore;
  /** GANTRY_HUB_URL */
  hubUrl: string;
  /** HF_TOKEN */
  token?: string | undefined;
  onProgress?: (p: StoreProgress) => void;
  /** Leaving (client gone) cancels downloads no other pull is watching; partial files stay for a resume. */
  signal?: AbortSignal;
  /** Downloads shared between concurrent pulls; defaults to one registry per store directory in this process. */
  downloads?: SharedDownloads;
  tuning?: Partial<DownloadTuning>;
  logger?: Logger;
  /** Minimum interval between two progress lines of one layer (default 200 ms); first and last always go out. */
  progressIntervalMs?: number;
}

export interface PullResult {
  /** Display name, e.g. "hf.co/org/repo:Q4_K_M". */
  name: string;
  /** Layers written to the manifest. */
  layers: Descriptor[];
}

const registries = new Map<string, SharedDownloads>();
const registryFor = (root: string): SharedDownloads => {
  let r = registries.get(root);
  if (!r) registries.set(root, (r = new SharedDownloads()));
  return r;
};

interface LargeLayer {
  kind: LayerKind;
  file: HubFile;
  digest: Digest;
}

export async function pullModel(refText: string, opts: PullOptions): Promise<PullResult> {
  if (!isHubRef(refText)) {
    throw new AppError(
      "MODEL_INVALID_NAME",
      `cannot pull "${refText.slice(0, 200)}": only hub models can be pulled, as hf.co/<org>/<repo>[:<quant>]`,
      { param: "model" },
    );
  }
  const ref = parseHubRef(refText);
  const name = parseModelName(hubModelName(ref));
  const progress = opts.onProgress ?? (() => {});
  const log = opts.logger ?? silentLogger;
  const client = new HubClient({ baseUrl: opts.hubUrl, token: opts.token });
  const { store } = opts;

  progress({ status: "pulling manifest" });
  const selection = selectGgufFiles(await client.listFiles(ref, opts.signal), ref, hubRepoLabel(ref));
  const large: LargeLayer[] = [];
  for (const [kind, file] of [
    ...selection.model.map((f) => ["model", f] as const),
    ...(selection.projector ? [["projector", selection.projector] as const] : []),
  ]) {
    const sha = await client.sha256Of(ref, file, opts.signal);
    if (!sha)
      throw new AppError(
        "UPSTREAM_FAILED",
        `the hub reports no sha256 for ${file.path} in ${hubRepoLabel(ref)}, so it cannot be verified`,
      );
    large.push({ kind, file, digest: digestOf(sha) });
  }
  log.info({ model: formatModelName(name), files: large.map((l) => l.file.path) }, "pulling from the hub");

  const layers: Descriptor[] = [];
  const downloads = opts.downloads ?? registryFor(store.root);
  for (const layer of large) {
    await fetchLayer(opts, client, ref, layer, downloads, log);
    layers.push({ mediaType: layerMediaType(layer.kind), digest: layer.digest, size: layer.file.size });
  }
  for (const kind of ["template", "system", "params"] as const) {
    const file = selection[kind];
    if (file) layers.push(await fetchTextLayer(opts, client, ref, kind, file));
  }

  progress({ status: "verifying sha256 digest" });
  const modelDigests = layers.filter((l) => l.mediaType === layerMediaType("model")).map((l) => l.digest);
  const modelPath =
    modelDigests.length > 1
      ? await linkSplitParts(store.root, store.blobs, modelDigests)
      : store.blobs.path(modelDigests[0]!);
  await writeModel(store, name, layers, await ggufSummary(modelPath, log), progress);
  return { name: formatModelName(name), layers };
}

/**
 * Progress lines of one layer: at most one per interval, the first and the last always, and a suppressed value is
 * sent when the interval is over (so a stalled download shows where it stopped, not where it was 200 ms before).
 */
function layerProgress(
  opts: PullOptions,
  digest: Digest,
  total: number,
): ((completed: number) => void) & { cancel(): void } {
  const interval = opts.progressIntervalMs ?? 200;
  let last = -Infinity,
    sent = -1,
    pending = -1;
  let timer: NodeJS.Timeout | undefined;
  const send = (completed: number) => {
    clearTimeout(timer);
    timer = undefined;
    last = Date.now();
    sent = completed;
    opts.onProgress?.({ status: `pulling ${digest.slice(7, 19)}`, digest, total, completed });
  };
  const emit = (completed: number) => {
    if (completed === sent) return;
    if (completed >= total || sent < 0 || Date.now() - last >= interval) return send(completed);
    pending = completed;
    timer ??= setTimeout(() => send(pending), last + interval - Date.now()).unref();
  };
  /** Drops a held-back line (the download failed: nothing may follow the error). */
  return Object.assign(emit, { cancel: () => clearTimeout(timer) });
}

async function fetchLayer(
  opts: PullOptions,
  client: HubClient,
  ref: HubRef,
  layer: LargeLayer,
  downloads: SharedDownloads,
  log: Logger,
): Promise<void> {
  const emit = layerProgress(opts, layer.digest, layer.file.size);
  if (await opts.store.blobs.has(layer.digest)) return emit(layer.file.size);
  emit(0);
  try {
    await downloads.join(layer.digest, (task) => downloadToStore(opts, client, ref, layer, task, log), {
      signal: opts.signal,
      onProgress: (p) => emit(p.completed),
    });
  } catch (e) {
    emit.cancel();
    throw e;
  }
  emit(layer.file.size);
}

/** The shared download of one blob: into blobs/sha256-<hex>-partial, verified, then moved into place. */
async function downloadToStore(
  opts: PullOptions,
  client: HubClient,
  ref: HubRef,
  layer: LargeLayer,
  task: DownloadTask,
  log: Logger,
): Promise<void> {
  const { blobs } = opts.store;
  if (await blobs.has(layer.digest)) return;
  await fs.mkdir(blobs.dir, { recursive: true });
  const partial = path.join(blobs.dir, `${blobFileName(layer.digest)}-partial`);
  await downloadVerified({
    url: client.fileUrl(ref, layer.file.path),
    headers: client.headers(),
    sha256: layer.digest.slice(7),
    size: layer.file.size,
    partialPath: partial,
    label: `${layer.file.path} in ${hubRepoLabel(ref)}`,
    statusError: (status) => hubStatusError(status, ref, layer.file.path),
    signal: task.signal,
    onProgress: (completed, total) => task.progress({ completed, total }),
    logger: log,
    ...(opts.tuning ? { tuning: opts.tuning } : {}),
  });
  await blobs.adoptVerified(partial, layer.digest);
  await fs.rm(sidecarPath(partial), { force: true });
}

async function fetchTextLayer(
  opts: PullOptions,
  client: HubClient,
  ref: HubRef,
  kind: "template" | "system" | "params",
  file: HubFile,
): Promise<Descriptor> {
  let body = await client.fetchSmall(ref, file.path, opts.signal);
  if (kind === "params") {
    // The params file becomes the model's default options: reject it now rather than break every later load.
    let parsed;
    try {
      parsed = ModelParametersSchema.safeParse(JSON.parse(body.toString("utf8")));
    } catch {
      parsed = null;
    }
    if (!parsed?.success)
      throw new AppError(
        "UPSTREAM_FAILED",
        `the params file of ${hubRepoLabel(ref)} is not a JSON object of model parameters`,
      );
    body = Buffer.from(JSON.stringify(parsed.data), "utf8");
  }
  const stored = await opts.store.blobs.put(body);
  layerProgress(opts, stored.digest, stored.size)(stored.size);
  return { mediaType: layerMediaType(kind), digest: stored.digest, size: stored.size };
}

// A header the reader cannot parse still gives a usable model (its config says "unknown").
async function ggufSummary(modelPath: string, log: Logger): Promise<GgufSummary | null> {
  try {
    return await readGgufSummary(modelPath);
  } catch (e) {
    log.warn({ err: e, modelPath }, "cannot read GGUF metadata of a pulled model");
    return null;
  }
}
