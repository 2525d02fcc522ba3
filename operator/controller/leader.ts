// Lease-based leader election (client-go's leaderelection, coordination.k8s.io/v1 Lease), so several operator replicas
// can run and exactly one reconciles. A lease is taken over only when its holder has not renewed it for
// leaseDurationSeconds as measured on this replica's own clock (never by trusting another machine's timestamps).
// A leader that cannot renew within renewDeadlineSeconds steps down; on shutdown it releases the lease so a standby
// takes over at once.
import type { V1Lease } from "@kubernetes/client-node";
import type { Logger } from "../../server/common/logger.ts";
import type { LeaseSettings } from "../config.ts";
import type { KubeWriter } from "../kube/writer.ts";
import { statusOf } from "../kube/writer.ts";

export interface LeaderElectionOptions extends LeaseSettings {
  identity: string;
}

/**
 * A lease request that cannot succeed by retrying: the Lease's namespace does not exist. The operator stops at once
 * with this message rather than retry it every few seconds.
 */
export class LeaseSetupError extends Error {}

type LeaseApi = Pick<KubeWriter, "readLease" | "createLease" | "replaceLease">;

/**
 * A Lease's times are MicroTime: RFC 3339 with exactly six fractional digits. client-node writes Dates with three
 * (which
 * the API server refuses) but passes strings through untouched.
 */
const microTime = (d: Date | string): Date =>
  new Date(d).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z") as unknown as Date;

export class LeaderElector {
  private readonly o: LeaderElectionOptions;
  private readonly api: LeaseApi;
  private readonly logger: Logger;
  private observed: { holder: string; rv: string; at: number } | undefined;
  private leading = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private lastRenew = 0;

  constructor(api: LeaseApi, o: LeaderElectionOptions, logger: Logger) {
    this.api = api;
    this.o = o;
    this.logger = logger.child({ lease: `${o.namespace}/${o.name}`, identity: o.identity });
  }

  get isLeader(): boolean {
    return this.leading;
  }

  /**
   * Tries to acquire, then keeps renewing. Calls onStart once leading; onStop if leadership is lost; onFatal (and
   * stops) when the lease cannot be taken however long it retries (LeaseSetupError).
   */
  run(onStart: () => void, onStop: () => void, onFatal: (err: LeaseSetupError) => void = () => {}): void {
    const tick = async () => {
      if (this.stopped) return;
      let fatal: LeaseSetupError | undefined;
      const ok = await this.tryAcquireOrRenew().catch((err: unknown) => {
        if (err instanceof LeaseSetupError) fatal = err;
        else this.logger.warn({ err: String(err) }, "lease request failed");
        return false;
      });
      if (this.stopped) return;
      if (fatal) {
        this.stopped = true;
        onFatal(fatal);
        return;
      }
      const now = Date.now();
      if (ok) {
        this.lastRenew = now;
        if (!this.leading) {
          this.leading = true;
          this.logger.info("became leader");
          onStart();
        }
      } else if (this.leading && now - this.lastRenew > this.o.renewDeadlineSeconds * 1000) {
        this.leading = false;
        this.logger.error("could not renew the lease in time: stepping down");
        onStop();
        return;
      }
      this.timer = setTimeout(() => void tick(), this.o.retryPeriodSeconds * 1000);
    };
    void tick();
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const now = new Date();
    let lease: V1Lease;
    try {
      lease = await this.api.readLease(this.o.namespace, this.o.name);
    } catch (err) {
      if (statusOf(err) !== 404) throw err;
      await this.createLease(now);
      return true;
    }
    return this.renewOrTakeOver(lease, now);
  }

  /** Creates the Lease held by this replica; a 404 means its namespace does not exist (a LeaseSetupError). */
  private async createLease(now: Date): Promise<void> {
    try {
      await this.api.createLease(this.o.namespace, {
        metadata: { name: this.o.name, namespace: this.o.namespace },
        spec: {
          holderIdentity: this.o.identity,
          leaseDurationSeconds: this.o.leaseDurationSeconds,
          acquireTime: microTime(now),
          renewTime: microTime(now),
          leaseTransitions: 0,
        },
      });
    } catch (err) {
      if (statusOf(err) !== 404) throw err;
      const ns = this.o.namespace;
      throw new LeaseSetupError(
        `leader election: namespace "${ns}" does not exist, so the operator cannot hold its Lease there; create it ` +
          `(kubectl create namespace ${ns}), set leaderElection.namespace to an existing namespace, or set ` +
          `leaderElection.enabled: false to run a single operator`,
      );
    }
  }

  private async renewOrTakeOver(lease: V1Lease, now: Date): Promise<boolean> {
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? "";
    const rv = lease.metadata?.resourceVersion ?? "";
    // Track when *we* last saw the lease change: expiry is judged on our clock.
    if (!this.observed || this.observed.rv !== rv) this.observed = { holder, rv, at: Date.now() };
    const duration = (spec.leaseDurationSeconds ?? this.o.leaseDurationSeconds) * 1000;
    const heldByOther = holder !== "" && holder !== this.o.identity;
    if (heldByOther && Date.now() - this.observed.at < duration) return false;
    const takingOver = holder !== this.o.identity;
    const updated = await this.api.replaceLease(this.o.namespace, this.o.name, {
      metadata: { ...lease.metadata },
      spec: {
        holderIdentity: this.o.identity,
        leaseDurationSeconds: this.o.leaseDurationSeconds,
        acquireTime: microTime(takingOver ? now : (spec.acquireTime ?? now)),
        renewTime: microTime(now),
        leaseTransitions: (spec.leaseTransitions ?? 0) + (takingOver && holder !== "" ? 1 : 0),
      },
    });
    this.observed = { holder: this.o.identity, rv: updated.metadata?.resourceVersion ?? "", at: Date.now() };
    if (takingOver && holder !== "") this.logger.info({ previous: holder }, "took over an expired lease");
    return true;
  }

  /** Stops renewing; a leader hands the lease back (empty holder) so a standby does not wait for it to expire. */
  async release(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (!this.leading) return;
    this.leading = false;
    try {
      const lease = await this.api.readLease(this.o.namespace, this.o.name);
      if (lease.spec?.holderIdentity !== this.o.identity) return;
      await this.api.replaceLease(this.o.namespace, this.o.name, {
        metadata: { ...lease.metadata },
        spec: {
          ...lease.spec,
          holderIdentity: "",
          leaseDurationSeconds: 1,
          renewTime: microTime(new Date()),
          ...(lease.spec?.acquireTime ? { acquireTime: microTime(lease.spec.acquireTime) } : {}),
        },
      });
      this.logger.info("released the lease");
    } catch (err) {
      this.logger.warn({ err: String(err) }, "could not release the lease");
    }
  }
}
