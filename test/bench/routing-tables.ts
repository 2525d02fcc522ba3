// The routing bench's tables (test/bench/routing.ts), one set per workload, printed as soon as the workload is done.
import os from "node:os";
import { median } from "./table.ts";
import { thinkNote, type Think } from "./routing-think.ts";

export const STRATEGIES = ["LeastLoad", "PrefixHash"] as const;
export type Strategy = (typeof STRATEGIES)[number];
export type Workload = "chat" | "agents";

export interface Turn {
  workload: Workload;
  strategy: Strategy;
  turn: number;
  ttftMs: number;
  prompt: number;
  cached: number;
  completion: number;
  pod: string;
  /** The access log's `choice`: least_load, ring_first, ring_kept (the key's last pod) or ring_next (passed on). */
  choice: string;
  conversation: string;
}

/** What the pods of an app counted during a workload (their /metrics, after minus before). */
export interface PodCounts {
  hits: number;
  misses: number;
  failed: number;
  restored: number;
  /** The pods' own time to first token (from a request's arrival), summed, and its count. */
  ttftSeconds: number;
  ttftCount: number;
  /** Wall seconds with a decode call in flight: generation steps, and prompt calls; with none while work waited. */
  generationSeconds: number;
  promptSeconds: number;
  idleSeconds: number;
  generationCalls: number;
  promptCalls: number;
}
export const NO_COUNTS: PodCounts = {
  hits: 0,
  misses: 0,
  failed: 0,
  restored: 0,
  ttftSeconds: 0,
  ttftCount: 0,
  generationSeconds: 0,
  promptSeconds: 0,
  idleSeconds: 0,
  generationCalls: 0,
  promptCalls: 0,
};

/** One workload's measurements: its turns, each round's wall seconds per strategy, the pods' counts. */
export interface WorkloadResult {
  workload: Workload;
  conversations: number;
  turns: number;
  rows: Turn[];
  seconds: Record<Strategy, number[]>;
  pods: Record<Strategy, PodCounts>;
  /** Load average (1 min) at the workload's start and end. */
  load: [number, number];
  think: Think;
}

export interface Table {
  title: string;
  header: string[];
  rows: string[][];
}

const p95 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.95))]!;
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const f = (n: number) => (Number.isFinite(n) ? n.toFixed(0) : "-");
const share = (ts: Turn[]) => (ts.reduce((a, t) => a + t.cached, 0) / ts.reduce((a, t) => a + t.prompt, 0)).toFixed(2);

export const loadNote = (w: Pick<WorkloadResult, "load" | "think">): string =>
  `${thinkNote(w.think)}, load average ${w.load[0].toFixed(1)} at start, ${w.load[1].toFixed(1)} at end, on ${os.cpus().length} CPUs`;

/** Per turn: TTFT mean and p95 and the cached share of each strategy, and the ratio of the medians. */
function perTurn(w: WorkloadResult, what: string): Table {
  const by = (s: Strategy, turn: number) => w.rows.filter((t) => t.strategy === s && t.turn === turn);
  return {
    title: `Routing, ${what}: time to first token per turn, ms (${w.conversations} conversations × ${w.turns} turns, 3 replicas of SmolLM2-135M, ${loadNote(w)})`,
    header: [
      "turn",
      ...STRATEGIES.flatMap((s) => [`${s} mean`, `${s} p95`, `${s} cached ÷ prompt`]),
      "PrefixHash ÷ LeastLoad (median)",
    ],
    rows: Array.from({ length: w.turns }, (_, i) => {
      const of = (s: Strategy) => by(s, i + 1).map((t) => t.ttftMs);
      return [
        String(i + 1),
        ...STRATEGIES.flatMap((s) => [f(mean(of(s))), f(p95(of(s))), share(by(s, i + 1))]),
        (median(of("PrefixHash")) / median(of("LeastLoad"))).toFixed(2),
      ];
    }),
  };
}

/** Per strategy: cached share, tokens/s, TTFT, spread over pods, the ring's first choice, the pods' RAM cache. */
function summary(w: WorkloadResult, what: string): Table {
  return {
    title: `Routing, ${what}: cache reuse, throughput and spread (all rounds; ${loadNote(w)})`,
    header: [
      "strategy",
      "cached ÷ prompt tokens",
      "tokens/s",
      "median TTFT turns 3–6 ms",
      "median TTFT turn 1 ms",
      "requests per pod",
      "ring first / kept / next",
      "RAM cache hits / misses / failed, restored tokens",
    ],
    rows: STRATEGIES.map((s) => {
      const ts = w.rows.filter((t) => t.strategy === s);
      const perPod = new Map<string, number>();
      for (const t of ts) perPod.set(t.pod, (perPod.get(t.pod) ?? 0) + 1);
      const completion = ts.reduce((a, t) => a + t.completion, 0);
      const p = w.pods[s];
      return [
        s,
        share(ts),
        (completion / w.seconds[s].reduce((a, b) => a + b, 0)).toFixed(1),
        f(median(ts.filter((t) => t.turn >= 3).map((t) => t.ttftMs))),
        f(median(ts.filter((t) => t.turn === 1).map((t) => t.ttftMs))),
        [...perPod.values()].sort((a, b) => b - a).join(" / "),
        s === "PrefixHash"
          ? ["first", "kept", "next"]
              .map((c) => `${((ts.filter((t) => t.choice === `ring_${c}`).length / ts.length) * 100).toFixed(0)}%`)
              .join(" / ")
          : "-",
        `${p.hits} / ${p.misses} / ${p.failed}, ${p.restored}`,
      ];
    }),
  };
}

/** The ratios issue 38 sets targets for (PrefixHash against LeastLoad), with the targets. */
function targets(w: WorkloadResult, what: string): Table {
  const ts = (s: Strategy) => w.rows.filter((t) => t.strategy === s);
  const tps = (s: Strategy) => ts(s).reduce((a, t) => a + t.completion, 0) / w.seconds[s].reduce((a, b) => a + b, 0);
  const ttft36 = (s: Strategy) =>
    median(
      ts(s)
        .filter((t) => t.turn >= 3)
        .map((t) => t.ttftMs),
    );
  const rows =
    w.workload === "chat"
      ? [
          ["PrefixHash cached ÷ prompt tokens", share(ts("PrefixHash")), "≥ 0.70 (ceiling about 0.76)"],
          [
            "median TTFT turns 3–6, PrefixHash ÷ LeastLoad",
            (ttft36("PrefixHash") / ttft36("LeastLoad")).toFixed(2),
            "≤ 0.6",
          ],
          ["tokens/s, PrefixHash ÷ LeastLoad", (tps("PrefixHash") / tps("LeastLoad")).toFixed(2), "≥ 1"],
        ]
      : STRATEGIES.map((s) => [`${s} cached ÷ prompt tokens`, share(ts(s)), "≥ 0.85"]);
  return { title: `Routing, ${what}: issue 38's targets`, header: ["measure", "figure", "target"], rows };
}

/**
 * Per strategy, turns 3–6 split by whether their pod found at least half the prompt cached (a median mixes the two:
 * decision 0019), and where a turn's time went: the pods' own TTFT against the client's (the gap is the gateway and the
 * connections), the pods' decode calls' share of the wall time, a generation step's and a prompt call's mean.
 */
function timeParts(w: WorkloadResult, what: string): Table {
  const pct = (n: number, all: number) => `${((n / all) * 100).toFixed(0)}%`;
  return {
    title: `Routing, ${what}: turns 3–6 cached or not, and the pods' time (their /metrics; ${loadNote(w)})`,
    header: [
      "strategy",
      "turns 3–6 ≥ half cached: share, median TTFT ms",
      "the rest: median TTFT ms",
      "mean TTFT ms: client / pods",
      "pods' decode busy: generation / prompt / idle with work",
      "ms per generation step / prompt call",
    ],
    rows: STRATEGIES.map((s) => {
      const late = w.rows.filter((t) => t.strategy === s && t.turn >= 3);
      const hit = late.filter((t) => t.cached * 2 >= t.prompt);
      const miss = late.filter((t) => t.cached * 2 < t.prompt);
      const p = w.pods[s];
      const podSeconds = w.seconds[s].reduce((a, b) => a + b, 0) * 3;
      return [
        s,
        `${pct(hit.length, late.length)}, ${f(median(hit.map((t) => t.ttftMs)))}`,
        f(median(miss.map((t) => t.ttftMs))),
        `${f(mean(w.rows.filter((t) => t.strategy === s).map((t) => t.ttftMs)))} / ${f((p.ttftSeconds / p.ttftCount) * 1000)}`,
        [p.generationSeconds, p.promptSeconds, p.idleSeconds].map((x) => pct(x, podSeconds)).join(" / "),
        `${f((p.generationSeconds / p.generationCalls) * 1000)} / ${f((p.promptSeconds / p.promptCalls) * 1000)}`,
      ];
    }),
  };
}

export function workloadTables(w: WorkloadResult): Table[] {
  const what =
    w.workload === "chat" ? "chat" : "agents (a shared 2k-token system prompt and tool list, 60 tokens a turn)";
  return [perTurn(w, what), summary(w, what), timeParts(w, what), targets(w, what)];
}

/** The fourth replica's effect (bench routing's `grow`): conversations under way that changed pods, and those kept. */
export interface Grown {
  moved: number;
  kept: number;
  of: number;
}

export function extraTable(grown: Grown | undefined, keyMicros: number): Table {
  const of = (n: number, all: number) => `${n} of ${all} (${((n / all) * 100).toFixed(0)}%)`;
  return {
    title: "Routing: a fourth replica between turns 1 and 2 (PrefixHash), and the routing work per request",
    header: ["measure", "value"],
    rows: [
      ...(grown
        ? [
            ["conversations that changed pods", of(grown.moved, grown.of)],
            ["conversations whose key the new pod took, kept on their last pod (ring_kept)", of(grown.kept, grown.of)],
          ]
        : []),
      ["key + ring pick on a 32 KB chat body, µs (median of 9 × 2000)", keyMicros.toFixed(1)],
    ],
  };
}
