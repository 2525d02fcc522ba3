// The broker: BullMQ on Redis/Valkey (docs/decisions/0015-queue-on-bullmq.md). One BullMQ queue per app
// (`<org>/<app>`), so each app's capacity is its own global concurrency; a set of the apps that have queues, so a
// gateway that starts finds every queue with work; a pub/sub channel for cancellations of running requests; the
// shared webhook signing key. Submissions use a connection that fails at once while the broker is away (503), never
// one that buffers commands.
import { Job, Queue } from "bullmq";
import { Redis } from "ioredis";
import type { QueueConfig } from "./config.ts";
import type { JobData, JobResult } from "./wire.ts";

export type QueueJob = Job<JobData, JobResult>;

export class BrokerUnavailable extends Error {}

export const queueName = (org: string, app: string): string => `${org}/${app}`;

/** The org and app of a queue name (queueName's inverse). */
export const splitQueueName = (name: string): { org: string; app: string } => {
  const i = name.indexOf("/");
  return { org: name.slice(0, i), app: name.slice(i + 1) };
};

/** BullMQ's priority of a low request (any one above 0 puts the job in the prioritized set, after the wait list). */
const LOW_PRIORITY = 1;

export class Broker {
  /** For submissions and reads: fails fast when the broker is down. */
  readonly client: Redis;
  /** Workers' connection (BullMQ needs commands to wait for a reconnection there; it adds blocking ones). */
  readonly workers: Redis;
  private readonly subscriber: Redis;
  private readonly queues = new Map<string, Queue<JobData, JobResult>>();
  /** Apps this replica has put in the set of apps with queues. */
  private readonly known = new Set<string>();
  private readonly c: QueueConfig;

  constructor(c: QueueConfig, onCancel: (queue: string, id: string) => void) {
    this.c = c;
    this.workers = new Redis(c.redisUrl, { maxRetriesPerRequest: null, retryStrategy: (n) => Math.min(100 * n, 1000) });
    this.workers.on("error", () => undefined);
    this.client = new Redis(c.redisUrl, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      // Reconnect quickly after a broker restart; until then commands fail (and submissions get 503).
      retryStrategy: (n) => Math.min(100 * n, 1000),
    });
    this.client.on("error", () => undefined); // reported through failed commands and /readyz
    this.subscriber = new Redis(c.redisUrl, {
      maxRetriesPerRequest: null,
      retryStrategy: (n) => Math.min(100 * n, 1000),
    });
    this.subscriber.on("error", () => undefined);
    void this.subscriber.subscribe(this.key("cancel")).catch(() => undefined);
    this.subscriber.on("message", (_ch: string, msg: string) => {
      const i = msg.lastIndexOf(" ");
      if (i > 0) onCancel(msg.slice(0, i), msg.slice(i + 1));
    });
  }

  get up(): boolean {
    return this.client.status === "ready";
  }

  /** Resolves once the submission connection is up (it reconnects by itself after a broker restart). */
  ready(): Promise<void> {
    if (this.up) return Promise.resolve();
    return new Promise((resolve) => this.client.once("ready", () => resolve()));
  }

  key(name: string): string {
    return `${this.c.prefix}:gantry:${name}`;
  }

  queue(org: string, app: string): Queue<JobData, JobResult> {
    const name = queueName(org, app);
    let q = this.queues.get(name);
    if (!q) {
      q = new Queue<JobData, JobResult>(name, { connection: this.client, prefix: this.c.prefix });
      q.on("error", () => undefined);
      this.queues.set(name, q);
    }
    return q;
  }

  /** Fails with BrokerUnavailable unless the broker answers within brokerTimeoutMs. */
  async timely<T>(p: Promise<T>): Promise<T> {
    if (!this.up) {
      p.catch(() => undefined);
      throw new BrokerUnavailable("the queue's broker is not reachable");
    }
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new BrokerUnavailable("the queue's broker did not answer in time")),
        this.c.brokerTimeoutMs,
      );
    });
    try {
      return await Promise.race([p, late]);
    } catch (e) {
      throw e instanceof BrokerUnavailable
        ? e
        : new BrokerUnavailable(`the queue's broker failed: ${(e as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Stores a submission; resolves once the broker has it (the request is acknowledged only then). */
  async add(id: string, data: JobData): Promise<void> {
    const q = this.queue(data.org, data.app);
    const age = this.c.retentionSeconds;
    const name = queueName(data.org, data.app);
    const known = this.known.has(name);
    await this.timely(
      Promise.all([
        known ? undefined : this.client.sadd(this.key("apps"), name).then(() => this.known.add(name)),
        q.add("request", data, {
          jobId: id,
          // BullMQ takes the wait list first, then its prioritized set: a low request runs after every normal one.
          ...(data.priority === "low" ? { priority: LOW_PRIORITY } : {}),
          attempts: data.noRetry ? 1 : this.c.maxRetries + 1,
          backoff: { type: "fixed", delay: this.c.retryDelayMs },
          removeOnComplete: { age },
          removeOnFail: { age },
        }),
      ]),
    );
  }

  /** Requests waiting in an app's queue, low priority ones included (for the 429 of a full queue and the metrics). */
  waiting(org: string, app: string): Promise<number> {
    return this.timely(this.queue(org, app).getJobCountByTypes("waiting", "prioritized"));
  }

  find(org: string, app: string, id: string): Promise<QueueJob | undefined> {
    return this.timely(Job.fromId<JobData, JobResult>(this.queue(org, app), id));
  }

  /** A waiting job's place: 0 is the next to run (BullMQ pushes on the left of its wait list and takes from the
   * right; a low priority job, in the prioritized set, comes after the whole wait list). */
  async position(job: QueueJob): Promise<number> {
    const q = this.queue(job.data.org, job.data.app);
    if (job.data.priority === "low") {
      const r = await this.timely(this.client.multi().llen(q.keys.wait!).zrank(q.keys.prioritized!, job.id!).exec());
      const rank = r?.[1]?.[1] as number | null;
      return rank === null || rank === undefined ? 0 : (r?.[0]?.[1] as number) + rank;
    }
    const r = await this.timely(this.client.multi().lpos(q.keys.wait!, job.id!).llen(q.keys.wait!).exec());
    const at = r?.[0]?.[1] as number | null;
    const len = r?.[1]?.[1] as number;
    return at === null || at === undefined ? 0 : Math.max(0, len - 1 - at);
  }

  /** Every app that has had a queue (a starting gateway runs workers for them). */
  apps(): Promise<string[]> {
    return this.timely(this.client.smembers(this.key("apps")));
  }

  /** Tells every gateway replica to stop a running request. */
  async publishCancel(queue: string, id: string): Promise<void> {
    await this.timely(this.client.publish(this.key("cancel"), `${queue} ${id}`));
  }

  /** The one webhook key of all replicas: the first one stored wins. */
  async sharedSigningKey(made: string): Promise<string> {
    const k = this.key("webhook-signing-key");
    await this.client.set(k, made, "NX");
    return (await this.client.get(k)) ?? made;
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close().catch(() => undefined)));
    this.subscriber.disconnect();
    this.workers.disconnect();
    this.client.disconnect();
  }
}
