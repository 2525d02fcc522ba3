// Usage rows (hourly, per app and key) folded into what the pages show: buckets of an hour or a day, totals per app
// and per key, and the CSV a person downloads. Pure.

/** An hourly usage row as the management API gives it. */
export interface UsageRow {
  hour: string;
  app: string;
  keyId: string;
  requests: number;
  errors: number;
  promptTokens: number;
  completionTokens: number;
  durationMs: number;
  streamed?: number;
  firstTokenMs?: number;
  lastAt?: string;
}

export type Bucket = "hour" | "day";

export const bucketStart = (iso: string, bucket: Bucket): number => {
  const t = Date.parse(iso);
  return bucket === "day" ? Math.floor(t / 86_400_000) * 86_400_000 : t;
};

export interface Totals {
  requests: number;
  errors: number;
  promptTokens: number;
  completionTokens: number;
  streamed: number;
  firstTokenMs: number;
}

const zero = (): Totals => ({
  requests: 0,
  errors: 0,
  promptTokens: 0,
  completionTokens: 0,
  streamed: 0,
  firstTokenMs: 0,
});

function add(t: Totals, r: UsageRow): void {
  t.requests += r.requests;
  t.errors += r.errors;
  t.promptTokens += r.promptTokens;
  t.completionTokens += r.completionTokens;
  t.streamed += r.streamed ?? 0;
  t.firstTokenMs += r.firstTokenMs ?? 0;
}

/** Every bucket of [from, to), so quiet hours show as zero rather than being skipped. */
export function bucketTimes(from: number, to: number, bucket: Bucket): number[] {
  const step = bucket === "day" ? 86_400_000 : 3_600_000;
  const out: number[] = [];
  for (let t = Math.floor(from / step) * step; t < to; t += step) out.push(t);
  return out;
}

/** Totals per bucket, for the rows `keep` selects. */
export function perBucket(
  rows: UsageRow[],
  times: number[],
  bucket: Bucket,
  keep: (r: UsageRow) => boolean = () => true,
) {
  const by = new Map(times.map((t) => [t, zero()]));
  for (const r of rows) {
    if (!keep(r)) continue;
    const t = by.get(bucketStart(r.hour, bucket));
    if (t) add(t, r);
  }
  return times.map((t) => by.get(t)!);
}

/** Totals per value of `field` (app or key), largest first. */
export function perGroup(rows: UsageRow[], field: "app" | "keyId"): Array<[string, Totals]> {
  const by = new Map<string, Totals>();
  for (const r of rows) {
    let t = by.get(r[field]);
    if (!t) by.set(r[field], (t = zero()));
    add(t, r);
  }
  return [...by.entries()].sort((a, b) => b[1].requests - a[1].requests || a[0].localeCompare(b[0]));
}

const csvField = (v: string | number): string => {
  const s = String(v);
  // A leading =, +, - or @ would be a formula in a spreadsheet.
  const safe = /^[=+\-@]/.test(s) ? `'${s}` : s;
  return /[",\n\r]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
};

/** The rows as CSV, one line per bucket, app and key. */
export function usageCsv(rows: UsageRow[], bucket: Bucket): string {
  const by = new Map<string, { time: number; app: string; keyId: string; t: Totals }>();
  for (const r of rows) {
    const time = bucketStart(r.hour, bucket);
    const k = `${time}|${r.app}|${r.keyId}`;
    let e = by.get(k);
    if (!e) by.set(k, (e = { time, app: r.app, keyId: r.keyId, t: zero() }));
    add(e.t, r);
  }
  const lines = [[bucket, "app", "key_id", "requests", "errors", "prompt_tokens", "completion_tokens"].join(",")];
  for (const e of [...by.values()].sort(
    (a, b) => a.time - b.time || a.app.localeCompare(b.app) || a.keyId.localeCompare(b.keyId),
  ))
    lines.push(
      [new Date(e.time).toISOString(), e.app, e.keyId, e.t.requests, e.t.errors, e.t.promptTokens, e.t.completionTokens]
        .map(csvField)
        .join(","),
    );
  return `${lines.join("\n")}\n`;
}
