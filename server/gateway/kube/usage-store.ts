// Usage kept across gateway restarts: one ConfigMap per org and day (`gantry-usage-YYYY-MM-DD`, labelled
// gantry.dev/usage, data `usage.json` = that day's hourly rows). Each gateway adds what it metered since its last write
// every flushSeconds (default 5): read the object from the watch cache, add the delta, replace it with the read
// resourceVersion; on a conflict (another replica wrote first) read it again and retry. Rows are sums, so deltas from
// any number of replicas merge exactly. Writes happen only for orgs that had requests since the last flush: at most
// one write per org (two around midnight) per replica per flush interval, whatever the request rate. A crash loses at
// most the last interval's delta; SIGTERM writes it. Days older than retentionDays are deleted.
import { CoreV1Api, type KubeConfig, type V1ConfigMap } from "@kubernetes/client-node";
import { z } from "zod";
import { KubeWatch, resourcePath } from "../../common/kube-watch.ts";
import type { Logger } from "../../common/logger.ts";
import type { UsageStore } from "../ports.ts";
import {
  dayOf,
  daysBetween,
  mergeUsage,
  UsageRowSchema,
  UsageTable,
  type RequestUsage,
  type UsageRow,
} from "../5-account/usage.ts";

export const USAGE_LABEL = "gantry.dev/usage";
export const USAGE_KEY = "usage.json";
export const usageConfigMapName = (day: string): string => `gantry-usage-${day}`;

/** The contents of a usage ConfigMap's usage.json. */
export const UsageDaySchema = z.array(UsageRowSchema).describe("Hourly usage rows of one org and day.");

const statusOf = (e: unknown): number | undefined => (e as { code?: number })?.code;

export function readUsageDay(cm: V1ConfigMap | undefined): UsageRow[] {
  const text = cm?.data?.[USAGE_KEY];
  if (!text) return [];
  try {
    const r = UsageDaySchema.safeParse(JSON.parse(text));
    return r.success ? r.data : [];
  } catch {
    return [];
  }
}

/** Failed writes in a row logged as warnings (then every 100th); the rest at debug. */
const WARN_FAILURES = 3;

export class KubeUsage implements UsageStore {
  private readonly watch: KubeWatch<V1ConfigMap>;
  private readonly core: CoreV1Api;
  /** Metered here and not yet written, by org. */
  private pending = new Map<string, UsageTable>();
  /** Being written right now (still counted by queries). */
  private writing = new Map<string, UsageTable>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private isSynced = false;
  /** Writes failed in a row (an apiserver outage): only the first few are warnings, not one per org and flush. */
  private failures = 0;
  private readonly o: {
    flushMs: number;
    retentionDays: number;
    logger: Logger;
    onWrite?: (result: "ok" | "conflict" | "error") => void;
  };

  constructor(
    kc: KubeConfig,
    o: {
      namespace?: string;
      flushMs: number;
      retentionDays: number;
      logger: Logger;
      onWrite?: (result: "ok" | "conflict" | "error") => void;
    },
  ) {
    this.o = o;
    this.core = kc.makeApiClient(CoreV1Api);
    const ns = o.namespace;
    this.watch = new KubeWatch<V1ConfigMap>(kc, {
      name: "usage configmaps",
      path: resourcePath("/api/v1", "configmaps", ns),
      list: (page) =>
        ns
          ? this.core.listNamespacedConfigMap({ namespace: ns, labelSelector: USAGE_LABEL, ...page })
          : this.core.listConfigMapForAllNamespaces({ labelSelector: USAGE_LABEL, ...page }),
      labelSelector: USAGE_LABEL,
      logger: o.logger,
    });
  }

  get synced(): boolean {
    return this.isSynced;
  }

  async start(): Promise<void> {
    await this.watch.start();
    this.isSynced = true;
    const tick = () => {
      this.timer = setTimeout(() => {
        void this.flush().finally(tick);
      }, this.o.flushMs);
      this.timer.unref();
    };
    tick();
  }

  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    await this.flush();
    await this.watch.stop();
  }

  record(u: RequestUsage): void {
    let t = this.pending.get(u.org);
    if (!t) {
      t = new UsageTable();
      this.pending.set(u.org, t);
    }
    t.add(u);
  }

  query(org: string, from: number, to: number): UsageRow[] {
    const stored = daysBetween(from, to).map((day) =>
      readUsageDay(this.watch.informer.get(usageConfigMapName(day), org)),
    );
    return mergeUsage([...stored, this.writing.get(org)?.list() ?? [], this.pending.get(org)?.list() ?? []], from, to);
  }

  /** Writes every org's pending delta (one at a time; a concurrent call waits for the running one). */
  flush(): Promise<void> {
    this.flushing ??= this.flushOnce().finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  private async flushOnce(): Promise<void> {
    this.writing = this.pending;
    this.pending = new Map();
    for (const [org, table] of this.writing) {
      const byDay = new Map<string, UsageRow[]>();
      for (const r of table.list()) byDay.set(dayOf(r.hour), [...(byDay.get(dayOf(r.hour)) ?? []), r]);
      for (const [day, rows] of byDay) {
        try {
          await this.addToDay(org, day, rows);
          if (this.failures > 0) this.o.logger.info({ failures: this.failures }, "usage writes recovered");
          this.failures = 0;
        } catch (err) {
          // Not lost: back into the pending delta for the next flush.
          const n = ++this.failures;
          this.o.logger[n <= WARN_FAILURES || n % 100 === 0 ? "warn" : "debug"](
            { org, day, err: String(err), failures: n },
            "usage write failed; retrying at the next flush",
          );
          this.o.onWrite?.("error");
          for (const r of rows) {
            let t = this.pending.get(org);
            if (!t) {
              t = new UsageTable();
              this.pending.set(org, t);
            }
            t.addRow(r);
          }
        }
      }
      await this.expire(org).catch(() => undefined);
    }
    this.writing = new Map();
  }

  private async addToDay(org: string, day: string, delta: UsageRow[]): Promise<void> {
    const name = usageConfigMapName(day);
    let current: V1ConfigMap | undefined = this.watch.informer.get(name, org);
    for (let attempt = 0; attempt < 8; attempt++) {
      const merged = new UsageTable();
      for (const r of [...readUsageDay(current), ...delta]) merged.addRow(r);
      const data = { [USAGE_KEY]: JSON.stringify(merged.list()) };
      try {
        if (current?.metadata?.resourceVersion) {
          await this.core.replaceNamespacedConfigMap({
            name,
            namespace: org,
            body: { ...current, data },
          });
        } else {
          await this.core.createNamespacedConfigMap({
            namespace: org,
            body: {
              metadata: {
                name,
                namespace: org,
                labels: { [USAGE_LABEL]: "true", "app.kubernetes.io/managed-by": "gantry" },
              },
              data,
            },
          });
        }
        this.o.onWrite?.("ok");
        return;
      } catch (e) {
        const code = statusOf(e);
        if (code !== 409) throw e;
        this.o.onWrite?.("conflict");
        current = await this.core.readNamespacedConfigMap({ name, namespace: org }).catch((err: unknown) => {
          if (statusOf(err) === 404) return undefined;
          throw err;
        });
      }
    }
    throw new Error(`usage ConfigMap ${org}/${name}: too many conflicting writes`);
  }

  private async expire(org: string): Promise<void> {
    const oldest = new Date(Date.now() - this.o.retentionDays * 86_400_000).toISOString().slice(0, 10);
    for (const cm of this.watch.informer.list(org)) {
      const name = cm.metadata?.name ?? "";
      const day = name.slice("gantry-usage-".length);
      if (/^\d{4}-\d{2}-\d{2}$/.test(day) && day < oldest)
        await this.core.deleteNamespacedConfigMap({ name, namespace: org }).catch(() => undefined);
    }
  }
}
