// A watched cache of one resource (client-node's informer) that restarts itself: client-node's informer stops on any
// error but 410 Gone, so each failure here restarts it with exponential backoff. Used by the operator's caches and the
// gateway's watches.
import {
  makeInformer,
  type Informer,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  type ObjectCache,
} from "@kubernetes/client-node";
import type { Logger } from "./logger.ts";

const MIN_BACKOFF_MS = 500;
/**
 * Retries of a watch whose apiserver is gone stay this close together, so the cache follows changes within a second or
 * two of its return (a 30 s cap left a key created after a long outage refused for up to 30 s). A refused connection
 * costs the apiserver nothing.
 */
const MAX_BACKOFF_MS = 2_000;
/** Failures in a row logged as warnings; later ones at debug, with a warning every this many. */
const WARN_FAILURES = 3;

/**
 * Objects per page of a watch's list, as client-go's reflector pages. A fresh operator lists 2,000 apps' pods,
 * Deployments and Services at once: whole, each list's JSON, its parsed objects and their typed copies are alive
 * together before any is trimmed, and V8 keeps the old space it grew to (docs/decisions/0017). A page is trimmed
 * before the next is asked for.
 */
export const LIST_PAGE_SIZE = 500;

/** One page of a list: the list call passes these on (`limit`, `_continue`: client-node's names for them). */
export interface ListPage {
  limit: number;
  _continue?: string;
}

export type WatchEvent = "add" | "update" | "delete";

export class KubeWatch<T extends KubernetesObject> {
  readonly name: string;
  readonly informer: Informer<T> & ObjectCache<T>;
  /** Resolves when the first list succeeded. */
  readonly listed: Promise<void>;
  /** Whether the first list succeeded. */
  synced = false;
  /** The last failure of a list or watch, cleared by a successful list. */
  lastError: unknown;
  private backoffMs = MIN_BACKOFF_MS;
  private failures = 0;
  private stopped = false;
  private readonly logger: Logger;

  constructor(
    kc: KubeConfig,
    o: {
      name: string;
      path: string;
      /** Lists one page; a list that ignores `page` returns everything at once (no continue token). */
      list: (page: ListPage) => Promise<unknown>;
      labelSelector?: string;
      logger: Logger;
      /** Drops more of each object before it is cached (fields no reader of this cache reads). */
      trim?: (obj: T) => void;
      /** Objects per list page (default LIST_PAGE_SIZE). */
      pageSize?: number;
    },
  ) {
    this.name = o.name;
    this.logger = o.logger;
    let listed!: () => void;
    this.listed = new Promise<void>((r) => {
      listed = r;
    });
    // The cache keeps the very objects its handlers get: dropping managedFields (server-side apply's bookkeeping, read
    // by no one here) saves memory on every cached object, as client-go informers' transforms do.
    const strip = (obj: T) => {
      if (obj.metadata) delete obj.metadata.managedFields;
      o.trim?.(obj);
    };
    const listFn = async () => {
      const l = await listPaged<T>(o.list, strip, o.pageSize ?? LIST_PAGE_SIZE);
      this.synced = true;
      this.lastError = undefined;
      listed();
      this.backoffMs = MIN_BACKOFF_MS; // healthy again: the next failure retries quickly
      if (this.failures > 0) this.logger.info({ kind: this.name, failures: this.failures }, "watch recovered");
      this.failures = 0;
      return l;
    };
    this.informer = makeInformer<T>(kc, o.path, listFn, o.labelSelector);
    this.informer.on("add", strip);
    this.informer.on("update", strip);
  }

  on(fn: (obj: T, event: WatchEvent) => void): void {
    this.informer.on("add", (o) => fn(o, "add"));
    this.informer.on("update", (o) => fn(o, "update"));
    this.informer.on("delete", (o) => fn(o, "delete"));
  }

  /** Starts the watch (restarting it after every error); resolves once it has listed. */
  start(): Promise<void> {
    const start = (): void => {
      if (!this.stopped) this.informer.start().catch(restart);
    };
    const restart = (err: unknown): void => {
      if (this.stopped) return;
      this.lastError = err;
      const n = ++this.failures;
      const level = n <= WARN_FAILURES || n % 30 === 0 ? "warn" : "debug";
      this.logger[level](
        { kind: this.name, err: String(err), retryMs: this.backoffMs, failures: n },
        "watch failed; restarting",
      );
      setTimeout(start, this.backoffMs).unref();
      this.backoffMs = Math.min(this.backoffMs * 2, MAX_BACKOFF_MS);
    };
    this.informer.on("error", restart);
    start();
    return this.listed;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.informer.stop();
  }
}

/**
 * A whole list, page by page, each page's objects trimmed as it arrives. The pages are one snapshot (the API server
 * serves a continue token from the first page's resourceVersion), so the last page's resourceVersion starts the watch;
 * a token that expired fails the list (410) and the watch lists again from the start.
 */
export async function listPaged<T extends KubernetesObject>(
  list: (page: ListPage) => Promise<unknown>,
  trim: (obj: T) => void,
  pageSize: number,
): Promise<KubernetesListObject<T>> {
  const items: T[] = [];
  let _continue: string | undefined;
  for (;;) {
    const page = (await list({ limit: pageSize, ...(_continue ? { _continue } : {}) })) as KubernetesListObject<T>;
    for (const obj of page.items ?? []) {
      trim(obj);
      items.push(obj);
    }
    // Typed lists carry the token as `_continue`; custom objects' plain JSON as `continue`.
    const meta = page.metadata as { _continue?: string; continue?: string } | undefined;
    _continue = meta?._continue || meta?.continue || undefined;
    if (!_continue) return { ...page, items };
  }
}

/** The watch path of a resource, cluster-wide or in one namespace. */
export const resourcePath = (prefix: string, plural: string, namespace?: string): string =>
  `${prefix}${namespace ? `/namespaces/${namespace}` : ""}/${plural}`;
