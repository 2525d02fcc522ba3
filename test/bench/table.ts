// Plain-text tables for benchmark output.

/** A table as the benches return it, printed by printTable. */
export interface Table {
  title: string;
  header: string[];
  rows: string[][];
}

export function printTable(title: string, header: string[], rows: Array<Array<string | number>>): void {
  const cells = rows.map((r) => r.map((c) => (typeof c === "number" ? fmt(c) : c)));
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i]!.length)));
  const line = (r: string[]) => "| " + r.map((c, i) => c.padEnd(widths[i]!)).join(" | ") + " |";
  console.log(`\n${title}`);
  console.log(line(header));
  console.log("|" + widths.map((w) => "-".repeat(w + 2)).join("|") + "|");
  for (const r of cells) console.log(line(r));
}

function fmt(n: number): string {
  if (!Number.isFinite(n)) return "-";
  if (Math.abs(n) >= 100) return n.toFixed(0);
  if (Math.abs(n) >= 10) return n.toFixed(1);
  return n.toFixed(2);
}

export const median = (xs: number[]): number => {
  if (!xs.length) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

export const minMedMax = (xs: number[]): { min: number; med: number; max: number } => {
  const finite = xs.filter(Number.isFinite);
  return finite.length
    ? { min: Math.min(...finite), med: median(finite), max: Math.max(...finite) }
    : { min: Number.NaN, med: Number.NaN, max: Number.NaN };
};

/** "min / median / max" of measurements, formatted as the tables print numbers. */
export const spread = (xs: number[]): string => {
  const s = minMedMax(xs);
  return `${fmt(s.min)} / ${fmt(s.med)} / ${fmt(s.max)}`;
};

/** The ratio of two sets of measurements' medians, to two decimals ("-" where either has none). */
export const medianRatio = (a: number[], b: number[]): string => {
  const r = minMedMax(a).med / minMedMax(b).med;
  return Number.isFinite(r) ? r.toFixed(2) : "-";
};

/**
 * The rounds' own ratios (each round runs the two servers back to back, so a drift of the machine's speed between
 * rounds
 * cancels out): their median, and in how many rounds Gantry did at least as well.
 */
export const pairedRatio = (g: number[], l: number[], lowerIsBetter = false): string => {
  const rs = g.map((x, i) => x / l[i]!).filter(Number.isFinite);
  if (!rs.length) return "-";
  const won = rs.filter((r) => (lowerIsBetter ? r <= 1 : r >= 1)).length;
  return `${median(rs).toFixed(2)} (${won}/${rs.length})`;
};
