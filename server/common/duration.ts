// Durations as Ollama accepts them for keep_alive: a Go duration string ("5m", "1h30m", "300ms", "-1m"),
// or a number of seconds. Negative means forever (null); 0 means now. Very large values are "very long": they are
// clamped to the longest duration Go (and so Ollama) can hold, about 292 years, never wrapped around or refused.

const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** The longest keep_alive: Go's largest time.Duration (2^63 - 1 ns), in whole milliseconds (≈ 292 years). */
export const MAX_KEEP_ALIVE_MS = 9_223_372_036_854;

const clamp = (ms: number): number => Math.min(Math.round(ms), MAX_KEEP_ALIVE_MS);

/** Milliseconds (at most MAX_KEEP_ALIVE_MS), or null for "forever". Throws a plain Error saying what is wrong. */
export function parseKeepAlive(value: string | number): number | null {
  if (typeof value === "number") {
    if (Number.isNaN(value)) throw new Error(`invalid duration ${value}`);
    return value < 0 ? null : clamp(value * 1000);
  }
  const s = value.trim();
  if (/^-?\d+(\.\d+)?$/.test(s)) return parseKeepAlive(Number(s));
  const m = /^(-?)((?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+)$/.exec(s);
  if (!m)
    throw new Error(
      `invalid duration "${value}" (use e.g. "5m", "1h", "30s", seconds as a number, or a negative value for forever)`,
    );
  let ms = 0;
  for (const part of m[2]!.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)) ms += Number(part[1]) * UNIT_MS[part[2]!]!;
  return m[1] === "-" ? null : clamp(ms);
}

/** Formats milliseconds as a short Go-style duration ("5m0s" → "5m"). */
export function formatDuration(ms: number | null): string {
  if (ms === null) return "forever";
  if (ms % 3_600_000 === 0 && ms > 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0 && ms > 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}
