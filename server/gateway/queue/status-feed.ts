// A queued request's status, read from the broker: once (GET .../status), or as an SSE stream (.../status/stream)
// that sends each change, keep-alives meanwhile, and closes after COMPLETED. A change on this replica (the runner
// starting or ending the request) is sent at once; other replicas' changes are seen by polling.
import { EventEmitter } from "node:events";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Broker, QueueJob } from "./broker.ts";
import type { QueueConfig } from "./config.ts";
import { statusOf, type StatusView } from "./status.ts";

/** How often the stream reads the status when nothing on this replica says it changed. */
const POLL_MS = 500;

export class StatusFeed {
  private readonly broker: Broker;
  private readonly config: Pick<QueueConfig, "keepAliveSeconds" | "maxRetries">;
  private readonly now: () => number;
  private readonly changes = new EventEmitter();

  constructor(o: { broker: Broker; config: Pick<QueueConfig, "keepAliveSeconds" | "maxRetries">; now: () => number }) {
    this.broker = o.broker;
    this.config = o.config;
    this.now = o.now;
    this.changes.setMaxListeners(0);
  }

  /** This replica started or ended the request: its streams read the status now. */
  changed(id: string): void {
    this.changes.emit(id);
  }

  /** The request's status now (its position when it waits). */
  async view(job: QueueJob, logs: boolean): Promise<StatusView> {
    const state = await this.broker.timely(job.getState());
    const waiting = state === "waiting" || state === "delayed" || state === "prioritized";
    const position = waiting && !job.data.cancelled ? await this.broker.position(job) : 0;
    return statusOf(job, state, position, logs, this.config.maxRetries);
  }

  /** The status as SSE: each change, keep-alives meanwhile, closed after COMPLETED. */
  async stream(req: IncomingMessage, res: ServerResponse, job: QueueJob, urls: object, logs: boolean): Promise<void> {
    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      "x-fal-request-id": job.id!,
    });
    let last = "";
    let closed = false;
    res.once("close", () => (closed = true));
    let lastWrite = this.now();
    const keepAliveMs = this.config.keepAliveSeconds * 1000;
    for (;;) {
      // Armed before the read: a start or end on this replica between the read and the wait is not missed.
      const next = this.nextChange(job.id!, Math.min(POLL_MS, keepAliveMs));
      const fresh = await this.broker.find(job.data.org, job.data.app, job.id!);
      const v = fresh ? await this.view(fresh, logs) : undefined;
      const text = v ? JSON.stringify({ ...v.body, ...urls }) : "";
      if (v && text !== last) {
        res.write(`data: ${text}\n\n`);
        last = text;
        lastWrite = this.now();
      }
      if (!v || v.body.status === "COMPLETED" || closed) {
        next.cancel();
        break;
      }
      await next.done;
      if (closed) break;
      if (this.now() - lastWrite >= keepAliveMs) {
        res.write(": keep-alive\n\n");
        lastWrite = this.now();
      }
    }
    if (!req.destroyed) res.end();
  }

  /** Settles when this replica starts or ends the request, or after ms (other replicas are polled). */
  private nextChange(id: string, ms: number): { done: Promise<void>; cancel(): void } {
    let settle: () => void = () => undefined;
    const done = new Promise<void>((resolve) => {
      settle = () => {
        clearTimeout(t);
        this.changes.off(id, settle);
        resolve();
      };
    });
    const t = setTimeout(settle, ms);
    this.changes.on(id, settle);
    return { done, cancel: settle };
  }
}
