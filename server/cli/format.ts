// Human-readable numbers, times and tables for CLI output. Pure: every clock reading is passed in.

const UNITS = ["B", "KB", "MB", "GB", "TB", "PB"];

/** Decimal units as Ollama prints them: 932 B, 1.2 MB, 4.7 GB. */
export function formatBytes(n: number): string {
  if (!Number.isFinite(n) || n < 0) return "?";
  let i = 0;
  let v = n;
  while (v >= 1000 && i < UNITS.length - 1) {
    v /= 1000;
    i++;
  }
  if (i === 0) return `${Math.round(v)} B`;
  return `${v >= 100 ? Math.round(v) : v.toFixed(v >= 10 ? 1 : 2).replace(/\.?0+$/, "")} ${UNITS[i]}`;
}

/** A transfer rate: "12 MB/s". */
export const formatSpeed = (bytesPerSecond: number): string => `${formatBytes(bytesPerSecond)}/s`;

/** A remaining time for an ETA: "45s", "3m12s", "1h04m". */
export function formatEta(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return "?";
  const s = Math.ceil(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
}

const plural = (n: number, unit: string) =>
  `${n === 1 ? (unit === "hour" ? "An" : "A") : n} ${unit}${n === 1 ? "" : "s"}`;

/** "Less than a second ago", "2 minutes ago", "3 weeks ago" — the wording `ollama list` uses. */
export function relativeTime(then: Date, now: Date): string {
  const future = then.getTime() > now.getTime();
  const s = Math.floor(Math.abs(now.getTime() - then.getTime()) / 1000);
  const phrase = (p: string) => (future ? `${p} from now` : `${p} ago`);
  if (s < 1) return future ? "Less than a second from now" : "Less than a second ago";
  if (s < 60) return phrase(plural(s, "second"));
  const m = Math.floor(s / 60);
  if (m < 60) return phrase(plural(m, "minute"));
  const h = Math.floor(m / 60);
  if (h < 24) return phrase(plural(h, "hour"));
  const d = Math.floor(h / 24);
  if (d < 7) return phrase(plural(d, "day"));
  if (d < 30) return phrase(plural(Math.floor(d / 7), "week"));
  if (d < 365) return phrase(plural(Math.floor(d / 30), "month"));
  return phrase(plural(Math.floor(d / 365), "year"));
}

/** Columns left-aligned, padded to the widest cell, separated by at least three spaces (as `ollama list`). */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd((widths[i] ?? 0) + 3)))
      .join("")
      .trimEnd();
  return [header, ...rows].map(line).join("\n") + "\n";
}

/** The 12-hex short ID of a digest ("sha256:abc…" or bare hex). */
export const shortId = (digest: string): string => digest.replace(/^sha256[:-]/, "").slice(0, 12);
