// How many requests wait in each app's queue, as this replica knows it: the broker's count, read each second (for the
// autoscaler's load and the metrics), plus the submissions this replica stored since, so that a submission costs no
// broker round trip except near the queue's limit, where the exact count decides.
import { queueName, splitQueueName, type Broker } from "./broker.ts";

export class WaitingCounts {
  private readonly broker: Pick<Broker, "waiting">;
  private readonly counts = new Map<string, number>();
  /** Submissions this replica stored since the last count. */
  private readonly submittedSince = new Map<string, number>();

  constructor(broker: Pick<Broker, "waiting">) {
    this.broker = broker;
  }

  /** An app's requests waiting at the last count. */
  get(org: string, app: string): number {
    return this.counts.get(queueName(org, app)) ?? 0;
  }

  /** Every counted app's requests waiting at the last count. */
  all(): Array<{ org: string; app: string; n: number }> {
    return [...this.counts].map(([name, n]) => ({ ...splitQueueName(name), n }));
  }

  /** Whether `max` or more wait: this replica's estimate first, the exact count only when the estimate reaches it. */
  async atLeast(org: string, app: string, max: number): Promise<boolean> {
    const name = queueName(org, app);
    if (this.get(org, app) + (this.submittedSince.get(name) ?? 0) < max) return false;
    const n = await this.broker.waiting(org, app);
    this.counts.set(name, n);
    this.submittedSince.set(name, 0);
    return n >= max;
  }

  /** This replica stored a submission for the app. */
  submitted(org: string, app: string): void {
    const name = queueName(org, app);
    this.submittedSince.set(name, (this.submittedSince.get(name) ?? 0) + 1);
  }

  /** Counts the apps' queues again (`names` as queueName gives them); a count the broker cannot give is kept. */
  async refresh(names: readonly string[]): Promise<void> {
    for (const name of names) {
      const { org, app } = splitQueueName(name);
      const before = this.submittedSince.get(name) ?? 0;
      const n = await this.broker.waiting(org, app).catch(() => undefined);
      if (n === undefined) continue;
      this.counts.set(name, n);
      this.submittedSince.set(name, (this.submittedSince.get(name) ?? 0) - before);
    }
  }
}
