// Step 5, account: usage metering — what one request used, read from the response as 4-forward passes it on (OpenAI
// `usage`, Ollama eval counts; streamed or not), and hourly aggregation per app and key. Pure.
import { z } from "zod";

export const UsageRowSchema = z
  .object({
    hour: z.iso.datetime().describe("Start of the hour (UTC, RFC 3339)."),
    app: z.string().describe("The app (ModelApp name)."),
    keyId: z.string().describe('The key id, or "-" for calls without a key (public apps).'),
    requests: z.int().min(0).describe("Requests answered."),
    errors: z.int().min(0).describe("Of which failed (status 400 and above, or cut off)."),
    promptTokens: z.int().min(0),
    completionTokens: z.int().min(0),
    durationMs: z.number().min(0).describe("Total time spent answering, in milliseconds."),
    streamed: z.int().min(0).optional().describe("Of which answered as a stream (SSE or NDJSON)."),
    firstTokenMs: z
      .number()
      .min(0)
      .optional()
      .describe("Sum over the streamed answers of the time to their first byte (the first token), in milliseconds."),
    lastAt: z.iso.datetime().optional().describe("When the last of these requests ended (UTC, RFC 3339)."),
  })
  .describe("Usage of one app by one key in one hour.");
export type UsageRow = z.infer<typeof UsageRowSchema>;

export interface RequestUsage {
  org: string;
  app: string;
  keyId: string;
  status: number;
  promptTokens: number;
  completionTokens: number;
  durationMs: number;
  /** Time to the first byte of a streamed answer (its first token); undefined when the answer was not a stream. */
  firstTokenMs?: number | undefined;
  at: number;
}

/** Whether an answer's content type is a stream of tokens (SSE or NDJSON): its first byte is its first token. */
export const isStreamType = (type: string | undefined): boolean =>
  type !== undefined && (type.includes("event-stream") || type.includes("ndjson"));

let lastSecond = { start: -1, iso: "" };
/** A time to the second as RFC 3339 (the last one reused: one string per second, not per request). */
function secondOf(t: number): string {
  const start = Math.floor(t / 1000) * 1000;
  if (start !== lastSecond.start) lastSecond = { start, iso: new Date(start).toISOString() };
  return lastSecond.iso;
}

/** The later of two optional RFC 3339 UTC times (same format: they compare as strings). */
const later = (a: string | undefined, b: string | undefined) =>
  a === undefined ? b : b === undefined || a > b ? a : b;

let lastHour = { start: -1, iso: "" };
/** The hour a time falls in, as its start (RFC 3339); the last one is reused (one per hour, not per request). */
export function hourOf(t: number): string {
  const start = Math.floor(t / 3_600_000) * 3_600_000;
  if (start !== lastHour.start) lastHour = { start, iso: new Date(start).toISOString() };
  return lastHour.iso;
}
/** The day (YYYY-MM-DD, UTC) an hour belongs to: usage is stored one object per org and day. */
export const dayOf = (hour: string): string => hour.slice(0, 10);

const rowKey = (r: Pick<UsageRow, "hour" | "app" | "keyId">) => `${r.hour}|${r.app}|${r.keyId}`;

/** Hourly rows keyed by hour|app|key; adding is commutative, so deltas from several gateways merge by addition. */
export class UsageTable {
  readonly rows = new Map<string, UsageRow>();

  add(u: RequestUsage): void {
    const hour = hourOf(u.at);
    const have = this.rows.get(`${hour}|${u.app}|${u.keyId}`);
    if (!have) {
      this.addRow({
        hour,
        app: u.app,
        keyId: u.keyId,
        requests: 1,
        errors: u.status >= 400 ? 1 : 0,
        promptTokens: u.promptTokens,
        completionTokens: u.completionTokens,
        durationMs: u.durationMs,
        ...(u.firstTokenMs !== undefined ? { streamed: 1, firstTokenMs: u.firstTokenMs } : {}),
        lastAt: secondOf(u.at),
      });
      return;
    }
    // The common case (a row for this hour, app and key exists): no object made per request.
    have.requests++;
    if (u.status >= 400) have.errors++;
    have.promptTokens += u.promptTokens;
    have.completionTokens += u.completionTokens;
    have.durationMs += u.durationMs;
    if (u.firstTokenMs !== undefined) {
      have.streamed = (have.streamed ?? 0) + 1;
      have.firstTokenMs = (have.firstTokenMs ?? 0) + u.firstTokenMs;
    }
    have.lastAt = later(have.lastAt, secondOf(u.at));
  }

  addRow(r: UsageRow): void {
    const k = rowKey(r);
    const have = this.rows.get(k);
    if (!have) {
      this.rows.set(k, { ...r });
      return;
    }
    have.requests += r.requests;
    have.errors += r.errors;
    have.promptTokens += r.promptTokens;
    have.completionTokens += r.completionTokens;
    have.durationMs += r.durationMs;
    if (r.streamed !== undefined) have.streamed = (have.streamed ?? 0) + r.streamed;
    if (r.firstTokenMs !== undefined) have.firstTokenMs = (have.firstTokenMs ?? 0) + r.firstTokenMs;
    const last = later(have.lastAt, r.lastAt);
    if (last !== undefined) have.lastAt = last;
  }

  get size(): number {
    return this.rows.size;
  }

  /** The rows in order, copies, durations to the microsecond (sums of floats carry noise like 3066.0125710000175). */
  list(): UsageRow[] {
    return [...this.rows.values()]
      .sort((a, b) => rowKey(a).localeCompare(rowKey(b)))
      .map((r) => ({
        ...r,
        durationMs: Math.round(r.durationMs * 1000) / 1000,
        ...(r.firstTokenMs !== undefined ? { firstTokenMs: Math.round(r.firstTokenMs * 1000) / 1000 } : {}),
      }));
  }
}

/** Merges row lists (e.g. stored days plus this gateway's unflushed delta), keeping hours in [from, to). */
export function mergeUsage(lists: Iterable<readonly UsageRow[]>, from: number, to: number): UsageRow[] {
  const t = new UsageTable();
  for (const list of lists)
    for (const r of list) {
      const h = Date.parse(r.hour);
      if (h >= from - 3_599_999 && h < to) t.addRow(r);
    }
  return t.list();
}

/** The days (YYYY-MM-DD) the hours in [from, to) fall on. */
export function daysBetween(from: number, to: number): string[] {
  const out: string[] = [];
  for (let d = Math.floor(from / 86_400_000); d * 86_400_000 < to; d++)
    out.push(new Date(d * 86_400_000).toISOString().slice(0, 10));
  return out;
}

const count = (v: unknown): number => {
  const n = Number(v ?? 0);
  return Number.isFinite(n) ? n : 0;
};

/**
 * An API's usage object: OpenAI chat's prompt/completion_tokens, or Responses' and Anthropic's input/output_tokens
 * (Anthropic's input_tokens leave out the cached ones, cache_read_input_tokens, which are part of the prompt too).
 */
function usageCounts(u: unknown): { prompt: number; completion: number } | undefined {
  if (!u || typeof u !== "object") return undefined;
  const o = u as {
    prompt_tokens?: unknown;
    completion_tokens?: unknown;
    input_tokens?: unknown;
    output_tokens?: unknown;
    cache_read_input_tokens?: unknown;
    cache_creation_input_tokens?: unknown;
  };
  return {
    prompt:
      o.prompt_tokens !== undefined
        ? count(o.prompt_tokens)
        : count(o.input_tokens) + count(o.cache_read_input_tokens) + count(o.cache_creation_input_tokens),
    completion: count(o.completion_tokens ?? o.output_tokens),
  };
}

/**
 * Token counts of a JSON response body or of one event/line of a stream; undefined when it carries none: `usage`
 * (OpenAI, Anthropic), a Responses event's `response.usage`, Ollama's eval counts.
 */
export function tokensOf(obj: unknown): { prompt: number; completion: number } | undefined {
  if (!obj || typeof obj !== "object") return undefined;
  const o = obj as {
    usage?: unknown;
    response?: { usage?: unknown } | null;
    prompt_eval_count?: unknown;
    eval_count?: unknown;
  };
  const usage = usageCounts(o.usage) ?? usageCounts(o.response?.usage);
  if (usage) return usage;
  if (o.prompt_eval_count !== undefined || o.eval_count !== undefined)
    return { prompt: count(o.prompt_eval_count), completion: count(o.eval_count) };
  return undefined;
}

/**
 * Reads token counts out of a response as it passes, without holding it: a JSON body is kept (bounded) and parsed at
 * the end; NDJSON and SSE are scanned line by line for the last line that carries counts.
 */
export class UsageScanner {
  private readonly kind: "json" | "ndjson" | "sse" | "other";
  private buf = "";
  private tooBig = false;
  /**
   * Token events of a stream passed so far (SSE chunks with content, Responses' `*.delta` events, Anthropic's
   * content_block_delta, NDJSON lines before the last).
   */
  private events = 0;
  tokens: { prompt: number; completion: number } | undefined;

  constructor(contentType: string) {
    this.kind = contentType.includes("text/event-stream")
      ? "sse"
      : contentType.includes("ndjson")
        ? "ndjson"
        : contentType.includes("json")
          ? "json"
          : "other";
  }

  push(chunk: Buffer): void {
    if (this.kind === "other" || this.tooBig) return;
    if (this.kind === "json") {
      if (this.buf.length + chunk.length > 4 << 20) {
        this.tooBig = true;
        this.buf = "";
        return;
      }
      this.buf += chunk.toString("utf8");
      return;
    }
    // Only lines that can carry counts are parsed: the token events in between are skipped by a substring test.
    this.buf += chunk.toString("utf8");
    let nl: number;
    while ((nl = this.buf.indexOf("\n")) >= 0) {
      const line = this.buf.slice(0, nl);
      this.buf = this.buf.slice(nl + 1);
      this.line(line);
    }
    if (this.buf.length > 1 << 20) this.buf = "";
  }

  private line(line: string): void {
    if (
      this.kind === "sse"
        ? line.startsWith("data:") &&
          (line.includes('"finish_reason":null') ||
            line.includes('.delta"') ||
            line.includes('"type":"content_block_delta"'))
        : line.includes('"done":false')
    )
      this.events++;
    if (!line.includes('"usage"') && !line.includes('"eval_count"') && !line.includes('"prompt_eval_count"')) return;
    const json = this.kind === "sse" ? (line.startsWith("data:") ? line.slice(5).trim() : "") : line;
    if (!json) return;
    try {
      this.tokens = tokensOf(JSON.parse(json)) ?? this.tokens;
    } catch {
      /* not JSON: nothing to count */
    }
  }

  end(): { prompt: number; completion: number } | undefined {
    if (this.kind === "json" && this.buf) {
      try {
        this.tokens = tokensOf(JSON.parse(this.buf)) ?? this.tokens;
      } catch {
        /* not JSON */
      }
      this.buf = "";
    } else if (this.buf) this.line(this.buf);
    return this.tokens;
  }

  /**
   * The counts of an answer that broke off (the client left, the pod failed): the pod's own when they came, else the
   * token events the client received (a stream carries one token per event, or a few merged where a token ends inside
   * a UTF-8 character: a lower bound), so a stream left before its last event is not free.
   */
  partial(): { prompt: number; completion: number } | undefined {
    return this.tokens ?? (this.events > 0 ? { prompt: 0, completion: this.events } : undefined);
  }
}

/**
 * Drops the usage-only chunk (`"choices":[]` with `"usage"`) from an SSE stream, passing every other event on as soon
 * as it is complete. Events are separated by a blank line.
 */
export class UsageEventFilter {
  private pending = "";

  /** The bytes to send now for this chunk. */
  push(chunk: Buffer): string {
    this.pending += chunk.toString("utf8");
    let out = "";
    let end: number;
    while ((end = this.pending.indexOf("\n\n")) >= 0) {
      const event = this.pending.slice(0, end + 2);
      this.pending = this.pending.slice(end + 2);
      if (!isUsageOnly(event)) out += event;
    }
    return out;
  }

  end(): string {
    const rest = this.pending;
    this.pending = "";
    return isUsageOnly(rest) ? "" : rest;
  }
}

function isUsageOnly(event: string): boolean {
  if (!event.includes('"usage"') || !event.includes('"choices":[]')) return false;
  const data = event.trim();
  if (!data.startsWith("data:")) return false;
  try {
    const o = JSON.parse(data.slice(5).trim()) as { choices?: unknown[]; usage?: unknown };
    return Array.isArray(o.choices) && o.choices.length === 0 && o.usage !== undefined;
  } catch {
    return false;
  }
}
