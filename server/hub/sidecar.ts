// The sidecar of a partial download (`<partial>.json`): what is known about the file and how far each part got, so a
// later process resumes every part where it stopped. Written to a temp file and renamed, and only ever after the
// bytes it counts were written, so it never claims data the partial file does not hold.
import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import { z } from "zod";

export const PartSchema = z.object({
  start: z.number().int().nonnegative(),
  /** Exclusive. */
  end: z.number().int().nonnegative(),
  /** Bytes written from `start` on. */
  done: z.number().int().nonnegative(),
});
export type Part = z.infer<typeof PartSchema>;

export const SidecarSchema = z.object({
  version: z.literal(1),
  url: z.string(),
  digest: z.string(),
  total: z.number().int().nonnegative(),
  etag: z.string().optional(),
  parts: z.array(PartSchema),
});
export type Sidecar = z.infer<typeof SidecarSchema>;

/** Splits [0, total) into `count` contiguous parts of near-equal size. */
export function planParts(total: number, count: number): Part[] {
  const n = Math.max(1, Math.min(count, total || 1));
  const size = Math.ceil(total / n);
  const parts: Part[] = [];
  for (let start = 0; start < total || parts.length === 0; start += size)
    parts.push({ start, end: Math.min(total, start + size), done: 0 });
  return parts;
}

/** True when the parts tile [0, total) in order and no part claims more than its length. */
export function partsAreValid(parts: readonly Part[], total: number): boolean {
  let at = 0;
  for (const p of parts) {
    if (p.start !== at || p.end < p.start || p.done > p.end - p.start) return false;
    at = p.end;
  }
  return at === total && parts.length > 0;
}

export const completedBytes = (parts: readonly Part[]): number => parts.reduce((a, p) => a + p.done, 0);

/** The sidecar for this download, or null when there is none or it describes another download. */
export async function readSidecar(file: string, expect: { digest: string; total: number }): Promise<Sidecar | null> {
  let raw: unknown;
  try {
    raw = JSON.parse(await fs.readFile(file, "utf8"));
  } catch {
    return null;
  }
  const parsed = SidecarSchema.safeParse(raw);
  if (!parsed.success) return null;
  const s = parsed.data;
  return s.digest === expect.digest && s.total === expect.total && partsAreValid(s.parts, s.total) ? s : null;
}

export async function writeSidecar(file: string, sidecar: Sidecar): Promise<void> {
  const temp = `${file}.${randomBytes(4).toString("hex")}.tmp`;
  try {
    await fs.writeFile(temp, JSON.stringify(sidecar));
    await fs.rename(temp, file);
  } finally {
    await fs.rm(temp, { force: true });
  }
}
