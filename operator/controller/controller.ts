// The ModelApp controller: watches feed a key queue, the leader's workers reconcile keys, and the leader's autoscaler
// turns gateway load reports into replica counts. Every replica keeps warm caches and load reports, so a standby
// that becomes leader starts at once.
import type { KubeConfig, KubernetesObject, V1OwnerReference } from "@kubernetes/client-node";
import type { Logger } from "../../server/common/logger.ts";
import { API_VERSION, KIND, type ModelApp } from "../api/v1alpha1/modelapp.ts";
import type { LeaderElectionSettings, OperatorConfig } from "../config.ts";
import { ClusterCaches, type CacheName } from "../kube/caches.ts";
import { KubeWriter } from "../kube/writer.ts";
import { APP_LABEL } from "../render/labels.ts";
import { decideReplicas, LoadReports, scaleDownDelayMs, type LoadReport } from "./autoscaler.ts";
import { LeaderElector } from "./leader.ts";
import { OperatorMetrics } from "./metrics.ts";
import { appKey, parseKey, reconcile, type ReconcileResult } from "./reconcile.ts";
import { WorkQueue } from "./workqueue.ts";

export interface ControllerOptions {
  kc: KubeConfig;
  config: OperatorConfig;
  logger: Logger;
  /** This replica's name in the leader lease and in events. */
  identity: string;
  /** Leader election as settled for where the operator runs (config.ts resolveLeaderElection). */
  leaderElection: LeaderElectionSettings;
}

/** Whether the operator is ready (its caches hold the cluster's objects) and, when not, why. */
export interface Readiness {
  ready: boolean;
  reason?: string;
}

/**
 * Whether the app's status describes its current spec: the operator has acted on it. Apps that it has not (new, or
 * changed) are reconciled before status refreshes, so a busy fleet's backlog of pod progress does not delay them.
 */
const actedOn = (app: ModelApp): boolean => app.status?.observedGeneration === app.metadata.generation;

export class Controller {
  readonly metrics: OperatorMetrics;
  private readonly cachesHolder: ClusterCaches;
  private readonly writer: KubeWriter;
  private readonly queue = new WorkQueue();
  private readonly loads: LoadReports;
  private readonly history = new Map<string, Array<{ at: number; want: number }>>();
  private readonly elector: LeaderElector | undefined;
  private readonly o: ControllerOptions;
  private workers: Array<Promise<void>> = [];
  private autoscaleTimer: NodeJS.Timeout | undefined;
  private leading = false;
  private stopping = false;

  constructor(o: ControllerOptions) {
    this.o = o;
    this.cachesHolder = new ClusterCaches(o.kc, {
      ...(o.config.watchNamespace ? { namespace: o.config.watchNamespace } : {}),
      logger: o.logger,
    });
    this.loads = new LoadReports(o.config.autoscaler.reportTtlSeconds * 1000);
    this.metrics = new OperatorMetrics(() => this.cachesHolder.caches.apps.list(), {
      inFlight: () => this.loads.totals(Date.now()),
    });
    this.writer = new KubeWriter(o.kc, {
      instance: o.identity,
      count: (verb, resource, code) => this.metrics.kubeRequests.inc({ verb, resource, code: String(code) }),
    });
    const le = o.leaderElection;
    this.elector = le.enabled
      ? new LeaderElector(this.writer, { ...le.lease, identity: o.identity }, o.logger)
      : undefined;
  }

  get caches() {
    return this.cachesHolder.caches;
  }

  /** /readyz: ready once every watch has listed its objects; until then, what it still waits for and why. */
  get readiness(): Readiness {
    if (this.cachesHolder.hasSynced) return { ready: true };
    return { ready: false, reason: this.cachesHolder.waitingFor() ?? "starting the watches" };
  }

  get isLeader(): boolean {
    return this.leading;
  }

  /**
   * Starts the watches, then campaigns for leadership (or leads at once without election). `onFatal` hears of a
   * leader election that cannot work however long it retries (its Lease's namespace does not exist).
   */
  async start(onLostLeadership: () => void, onFatal: (err: Error) => void = () => {}): Promise<void> {
    this.cachesHolder.onChange((kind, obj, event) => {
      this.metrics.watchEvents.inc({ kind, event });
      const keys = this.keysFor(kind, obj);
      const urgent = kind === "apps" && !actedOn(obj as ModelApp);
      for (const key of keys) this.queue.add(key, urgent);
      if (keys.length) this.metrics.queueAdds.inc({ kind }, keys.length);
      this.metrics.queueDepth.set(this.queue.length);
    });
    await this.cachesHolder.start();
    this.o.logger.info({ apps: this.caches.apps.list().length }, "caches synced");
    if (!this.elector) {
      this.lead();
      return;
    }
    this.elector.run(
      () => this.lead(),
      () => {
        this.leading = false;
        this.metrics.leader.set(0);
        onLostLeadership();
      },
      onFatal,
    );
  }

  /** Which apps to look at again when an object changes. */
  private keysFor(kind: CacheName, obj: KubernetesObject): string[] {
    const ns = obj.metadata?.namespace ?? "default";
    switch (kind) {
      case "apps":
        return [appKey(ns, obj.metadata?.name ?? "")];
      case "pods": {
        const app = obj.metadata?.labels?.[APP_LABEL];
        return app ? [appKey(ns, app)] : [];
      }
      case "claims": {
        // Any one app sharing the volume renders the same claim: one reconcile puts it right, not one per sharer
        // (that was a requeue of a fleet's worth of apps for every claim change).
        const user = this.cachesHolder.index
          .volumeUsers(ns, obj.metadata?.name ?? "")
          .filter((a) => !a.metadata.deletionTimestamp)
          .sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1))[0];
        return user ? [appKey(ns, user.metadata.name)] : [];
      }
      default: {
        const owner = (obj.metadata?.ownerReferences ?? []).find(
          (r: V1OwnerReference) => r.controller && r.apiVersion === API_VERSION && r.kind === KIND,
        );
        return owner ? [appKey(ns, owner.name)] : [];
      }
    }
  }

  private lead(): void {
    if (this.leading || this.stopping) return;
    this.leading = true;
    this.metrics.leader.set(1);
    const apps = this.caches.apps.list();
    for (const a of apps) this.queue.add(appKey(a.metadata.namespace ?? "default", a.metadata.name), !actedOn(a));
    this.metrics.queueAdds.inc({ kind: "leader" }, apps.length);
    this.workers = Array.from({ length: this.o.config.workers }, () => this.work());
    const every = this.o.config.autoscaler.intervalSeconds * 1000;
    const loop = () => {
      this.autoscaleAll().catch((err: unknown) => this.o.logger.error({ err: String(err) }, "autoscaler pass failed"));
      this.autoscaleTimer = setTimeout(loop, every);
    };
    this.autoscaleTimer = setTimeout(loop, every);
  }

  private async work(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      this.metrics.queueDepth.set(this.queue.length);
      const end = this.metrics.reconcileDuration.startTimer();
      let result: ReconcileResult | "error";
      try {
        result = await reconcile(key, {
          caches: this.caches,
          index: this.cachesHolder.index,
          writer: this.writer,
          config: this.o.config,
          logger: this.o.logger,
          now: () => new Date(),
        });
        this.queue.forget(key);
      } catch (err) {
        result = "error";
        const { namespace, name } = parseKey(key);
        const app = this.caches.apps.get(name, namespace);
        const retryMs = this.queue.addRateLimited(key, app !== undefined && !actedOn(app));
        this.metrics.retries.inc();
        this.o.logger.warn({ app: key, err: String(err), retryMs }, "reconcile failed; retrying");
      } finally {
        end();
        this.queue.done(key);
      }
      if (result !== "gone") this.metrics.reconciles.inc({ result });
    }
  }

  /** Stores a gateway's load snapshot; apps it reports busy are scaled at once (a held request wakes its app). */
  recordLoad(report: LoadReport): void {
    const now = Date.now();
    const busy = this.loads.record(report, now);
    if (!this.leading || busy.length === 0) return;
    const totals = this.loads.totals(now);
    for (const key of busy) {
      const { namespace, name } = parseKey(key);
      const app = this.caches.apps.get(name, namespace);
      if (app)
        void this.autoscale(app, totals).catch((err: unknown) =>
          this.o.logger.warn({ app: key, err: String(err) }, "scale failed"),
        );
    }
  }

  private async autoscaleAll(): Promise<void> {
    const apps = this.caches.apps.list();
    const live = new Set(apps.map((a) => appKey(a.metadata.namespace ?? "default", a.metadata.name)));
    for (const key of this.history.keys()) if (!live.has(key)) this.history.delete(key);
    // Summed once per pass: per app, it was a pass over every gateway's report of every app (O(apps²) each pass).
    const totals = this.loads.totals(Date.now());
    for (const app of apps)
      await this.autoscale(app, totals).catch((err: unknown) =>
        this.o.logger.warn({ app: `${app.metadata.namespace}/${app.metadata.name}`, err: String(err) }, "scale failed"),
      );
  }

  /** `totals`: in-flight requests per app key, from LoadReports.totals. */
  private async autoscale(app: ModelApp, totals: ReadonlyMap<string, number>): Promise<void> {
    if (!this.leading || app.metadata.deletionTimestamp) return;
    const parsed = this.cachesHolder.index.spec(app);
    if (!parsed.ok) return;
    const { scaling, server } = parsed.spec;
    if (scaling.minReplicas > scaling.maxReplicas) return;
    const ns = app.metadata.namespace ?? "default",
      key = appKey(ns, app.metadata.name),
      now = Date.now();
    const current = Math.min(
      scaling.maxReplicas,
      Math.max(scaling.minReplicas, parsed.spec.replicas ?? scaling.minReplicas),
    );
    const { replicas, history } = decideReplicas({
      inFlight: totals.get(key) ?? 0,
      target: scaling.targetConcurrency ?? server.parallel,
      min: scaling.minReplicas,
      max: scaling.maxReplicas,
      current,
      history: this.history.get(key) ?? [],
      now,
      scaleDownDelayMs: scaleDownDelayMs(scaling.scaleDownDelay),
    });
    this.history.set(key, history);
    if (replicas === (parsed.spec.replicas ?? scaling.minReplicas)) return;
    await this.writer.scale(ns, app.metadata.name, replicas);
    this.metrics.scaleEvents.inc({ direction: replicas > current ? "up" : "down" });
    this.o.logger.info({ app: key, from: current, to: replicas }, "scaled");
    await this.writer.event(
      {
        regarding: {
          apiVersion: API_VERSION,
          kind: KIND,
          name: app.metadata.name,
          namespace: ns,
          ...(app.metadata.uid ? { uid: app.metadata.uid } : {}),
        },
        type: "Normal",
        reason: replicas > current ? "ScaledUp" : "ScaledDown",
        message: `replicas ${current} → ${replicas}`,
      },
      new Date(),
    );
  }

  /** Stops reconciling, hands back the lease and stops the watches. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.autoscaleTimer) clearTimeout(this.autoscaleTimer);
    this.queue.shutDown();
    await Promise.all(this.workers);
    await this.elector?.release();
    this.leading = false;
    await this.cachesHolder.stop();
  }
}
