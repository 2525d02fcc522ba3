// The GPU check's phases: each prints its start, its end with its own and the run's elapsed time, and what it found;
// a failure is recorded and printed, never thrown, so the phases after it run.
import fs from "node:fs";

export interface PhaseResult {
  name: string;
  status: "ok" | "failed";
  seconds: number;
  /** At the end, seconds since run.sh started. */
  at: number;
  note: string;
}

export class Phases {
  readonly results: PhaseResult[] = [];
  readonly startedMs: number;
  /** Called after each phase (the check writes its summary so far). */
  onPhaseEnd: () => void = () => undefined;

  /** `startedSeconds`: when run.sh started (Unix seconds), so the unpacking counts too. */
  constructor(startedSeconds: number) {
    this.startedMs = startedSeconds * 1000;
  }

  elapsed(): number {
    return Math.round((Date.now() - this.startedMs) / 1000);
  }

  /** Runs one phase; resolves whether it succeeded. */
  async run(name: string, fn: () => Promise<string>): Promise<boolean> {
    console.log(`== ${name} (at ${this.elapsed()} s)`);
    const started = performance.now();
    let status: PhaseResult["status"] = "ok",
      note: string;
    try {
      note = await fn();
    } catch (e) {
      status = "failed";
      note = e instanceof Error ? e.message : String(e);
    }
    const seconds = Math.round((performance.now() - started) / 100) / 10;
    this.results.push({ name, status, seconds, at: this.elapsed(), note });
    console.log(`== ${name} ${status === "ok" ? "done" : "FAILED"} in ${seconds} s (at ${this.elapsed()} s): ${note}`);
    this.onPhaseEnd();
    return status === "ok";
  }

  /** The phases as a Markdown table. */
  table(): string {
    // A failure's whole message is in run.log; the table keeps its end.
    const cell = (s: string) => {
      const one = s.replaceAll("|", "\\|").replaceAll("\n", " ");
      return one.length > 600 ? `…${one.slice(-600)}` : one;
    };
    return [
      "| phase | status | seconds | at (s) | what it found |",
      "|---|---|---|---|---|",
      ...this.results.map((r) => `| ${r.name} | ${r.status} | ${r.seconds} | ${r.at} | ${cell(r.note)} |`),
    ].join("\n");
  }
}

/** The last `lines` lines of a text file. */
export function tail(file: string, lines: number): string {
  try {
    return fs.readFileSync(file, "utf8").split("\n").slice(-lines).join("\n");
  } catch {
    return "";
  }
}
