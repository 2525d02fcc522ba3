// Progress display for the NDJSON status lines of /api/pull and /api/create. On a terminal every download gets a bar
// that is redrawn in place; elsewhere (logs, pipes) a line is printed only when something changes state, never per
// chunk.
import type { Progress } from "../api/store-schemas.ts";
import { formatBytes, formatEta, formatSpeed, shortId } from "./format.ts";

export interface BarState {
  label: string;
  completed: number;
  total: number;
  /** Bytes per second, or null while unknown. */
  speed: number | null;
}

const BAR_WIDTH = 25;

/** One bar line: `pulling 6340dc3229b0:  42% ▕██████████            ▏ 1.2 GB/2.9 GB  12 MB/s  2m03s`. */
export function renderBar(s: BarState, barWidth = BAR_WIDTH): string {
  const fraction = s.total > 0 ? Math.min(1, Math.max(0, s.completed / s.total)) : 0;
  const filled = Math.round(fraction * barWidth);
  const pct = `${Math.floor(fraction * 100)}%`.padStart(4);
  const bar = `▕${"█".repeat(filled)}${" ".repeat(barWidth - filled)}▏`;
  const done = s.total > 0 && s.completed >= s.total;
  const bytes = done ? formatBytes(s.total) : `${formatBytes(s.completed)}/${formatBytes(s.total)}`;
  const rate =
    !done && s.speed !== null && s.speed > 0
      ? `  ${formatSpeed(s.speed)}  ${formatEta((s.total - s.completed) / s.speed)}`
      : "";
  return `${s.label}: ${pct} ${bar} ${bytes}${rate}`;
}

/** The label of a status line: "pulling sha256:abcdef…" shortens to "pulling abcdef012345". */
export function statusLabel(p: Progress): string {
  if (p.digest && p.status.includes(p.digest)) return p.status.replace(p.digest, shortId(p.digest));
  if (p.digest && p.total !== undefined && !p.status.includes(shortId(p.digest)))
    return `${p.status} ${shortId(p.digest)}`;
  return p.status;
}

/** Speed over a sliding window of samples, so a stall shows up quickly and one burst does not dominate. */
export class SpeedMeter {
  private readonly samples: { t: number; bytes: number }[] = [];
  private readonly windowMs: number;
  constructor(windowMs = 5000) {
    this.windowMs = windowMs;
  }

  add(timeMs: number, completed: number): void {
    this.samples.push({ t: timeMs, bytes: completed });
    while (this.samples.length > 2 && timeMs - this.samples[0]!.t > this.windowMs) this.samples.shift();
  }

  /** Bytes per second, or null with fewer than two samples or no elapsed time. */
  speed(): number | null {
    const first = this.samples[0],
      last = this.samples[this.samples.length - 1];
    if (!first || !last || last.t <= first.t) return null;
    return Math.max(0, ((last.bytes - first.bytes) * 1000) / (last.t - first.t));
  }
}

export interface ProgressOutput {
  write(text: string): void;
  isTTY: boolean;
}

interface Line {
  key: string;
  text: string;
  bar?: { state: BarState; meter: SpeedMeter };
  /** When this line was last written (not on a terminal). */
  writtenAt?: number;
}

export interface ProgressDisplayOptions {
  /**
   * Not on a terminal: also write a download's bar line at most this often while it moves (0: only when it starts
   * and ends). A pod's init container sets it, so its log shows how far a pull got (`gantry deploy` shows that line).
   */
  logEveryMs?: number;
}

/** Consumes progress events and draws them. `now` is injectable so tests can drive the clock. */
export class ProgressDisplay {
  private readonly out: ProgressOutput;
  private readonly now: () => number;
  private readonly logEveryMs: number;
  private readonly lines: Line[] = [];
  private drawnLines = 0;
  private lastDraw = 0;

  constructor(out: ProgressOutput, now: () => number = Date.now, opts: ProgressDisplayOptions = {}) {
    this.out = out;
    this.now = now;
    this.logEveryMs = opts.logEveryMs ?? 0;
  }

  update(p: Progress): void {
    const isBar = p.total !== undefined && p.total > 0;
    const key = isBar ? `bar:${p.digest ?? p.status}` : `status:${p.status}`;
    let line = this.lines.find((l) => l.key === key);
    const isNew = line === undefined;
    if (!line) {
      line = { key, text: "" };
      this.lines.push(line);
    }
    const wasDone = line.bar ? line.bar.state.completed >= line.bar.state.total : false;
    if (isBar) {
      line.bar ??= {
        state: { label: statusLabel(p), completed: 0, total: p.total!, speed: null },
        meter: new SpeedMeter(),
      };
      const s = line.bar.state;
      s.total = p.total!;
      s.completed = p.completed ?? s.completed;
      line.bar.meter.add(this.now(), s.completed);
      s.speed = line.bar.meter.speed();
      line.text = renderBar(s);
    } else {
      line.text = statusLabel(p);
    }
    const nowDone = line.bar ? line.bar.state.completed >= line.bar.state.total : false;
    if (this.out.isTTY) this.redraw(isNew || nowDone !== wasDone);
    else if (isNew || (nowDone && !wasDone) || (line.bar && !nowDone && this.logDue(line))) {
      line.writtenAt = this.now();
      this.out.write(`${line.text}\n`);
    }
  }

  private logDue(line: Line): boolean {
    return this.logEveryMs > 0 && this.now() - (line.writtenAt ?? 0) >= this.logEveryMs;
  }

  /** Final redraw (a terminal shows the last state of every bar). */
  finish(): void {
    if (this.out.isTTY) this.redraw(true);
  }

  private redraw(force: boolean): void {
    // Redrawing on every NDJSON line would flood the terminal on fast links: at most ~10 frames a second.
    const t = this.now();
    if (!force && t - this.lastDraw < 100) return;
    this.lastDraw = t;
    const up = this.drawnLines > 0 ? `\x1b[${this.drawnLines}A` : "";
    this.out.write(`${up}\r${this.lines.map((l) => `\x1b[2K${l.text}\n`).join("")}`);
    this.drawnLines = this.lines.length;
  }
}
