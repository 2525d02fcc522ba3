// Step 5, account: what each request leaves behind: its metrics, its usage record and its access log line (pino, a
// child logger of the gateway's). Requests are accounted in batches within 50 ms after they end (or every 256), off the
// path of the next request on a busy connection; a metrics scrape, a usage read and shutdown flush first, so they see
// every answered request.
import type { Logger } from "../../common/logger.ts";
import type { RequestContext } from "../context.ts";
import type { AppStats, GatewayMetrics, PodChoice } from "../metrics.ts";
import type { UsageStore } from "../ports.ts";
import { isStreamType } from "./usage.ts";

/** Ended requests are accounted for this long after they end at most. */
const ACCOUNT_EVERY_MS = 50;
/** ...or once this many are waiting. */
const ACCOUNT_BATCH = 256;

/** A request that ended, waiting for its metrics, usage record and log line. */
interface Ended {
  ctx: RequestContext;
  stats: AppStats;
  status: number;
  ms: number;
  at: number;
}

export class Accounting {
  private readonly metrics: GatewayMetrics;
  private readonly usage: UsageStore | undefined;
  private readonly now: () => number;
  /** The access log: one line per request. Its fields are the gateway's own (no prompt, key or header). */
  private readonly access: Logger;
  private ended: Ended[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(o: { metrics: GatewayMetrics; usage?: UsageStore; logger: Logger; now: () => number }) {
    this.metrics = o.metrics;
    this.usage = o.usage;
    this.now = o.now;
    // No redaction pass: every field is the gateway's own and none can hold a secret (decision record 0002).
    this.access = o.logger.child({}, { redact: [] });
  }

  /** Metrics and the log line of a request refused before it reached its app (no usage record). */
  refused(ctx: RequestContext, status: number, stats = this.metrics.app(ctx.org, ctx.app)): void {
    stats.count(status);
    this.log(ctx, status, performance.now() - ctx.t0);
  }

  /** A request that reached its app ended: accounted in the next batch. */
  finished(ctx: RequestContext, stats: AppStats, status: number): void {
    this.ended.push({ ctx, stats, status, ms: performance.now() - ctx.t0, at: this.now() });
    if (this.ended.length >= ACCOUNT_BATCH) this.flush();
    else this.timer ??= setTimeout(this.flush, ACCOUNT_EVERY_MS).unref();
  }

  /** Accounts for the ended requests now. */
  readonly flush = (): void => {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.ended;
    if (batch.length === 0) return;
    this.ended = [];
    for (const { ctx, stats, status, ms, at } of batch) {
      const tokens = ctx.tokens;
      stats.count(status);
      stats.duration.observe(ms / 1000);
      if (ctx.ttfbMs !== undefined) stats.ttfb.observe(ctx.ttfbMs / 1000);
      if (ctx.pod) stats.pod(ctx.pod, choiceOf(ctx));
      const k = stats.key(ctx.keyId);
      k.requests++;
      if (tokens) {
        k.prompt += tokens.prompt;
        k.completion += tokens.completion;
      }
      this.usage?.record({
        org: ctx.org,
        app: ctx.app,
        keyId: ctx.keyId,
        status,
        promptTokens: tokens?.prompt ?? 0,
        completionTokens: tokens?.completion ?? 0,
        durationMs: ms,
        firstTokenMs: isStreamType(ctx.sentType) ? ctx.ttfbMs : undefined,
        at,
      });
      this.log(ctx, status, ms);
    }
  };

  private log(ctx: RequestContext, status: number, ms: number): void {
    const t = ctx.tokens;
    this.access.info(
      {
        requestId: ctx.requestId,
        org: ctx.org,
        app: ctx.app,
        method: ctx.req.method,
        path: ctx.rest,
        status,
        keyId: ctx.keyId,
        client: ctx.client.address,
        ms: Math.round(ms * 10) / 10,
        ...(ctx.pod ? { pod: ctx.pod, choice: choiceOf(ctx) } : {}),
        ...(t ? { promptTokens: t.prompt, completionTokens: t.completion } : {}),
      },
      status === 499 ? "client closed the connection" : "request",
    );
  }
}

/**
 * How the pod was chosen: the least loaded, or by PrefixHash the key's own pod, the one its last request went to, or
 * the next one along the ring.
 */
const choiceOf = (ctx: RequestContext): PodChoice =>
  ctx.route?.via === undefined ? "least_load" : (`ring_${ctx.route.via}` as const);
