// `npm run bench routing`: LeastLoad against PrefixHash on the test control plane, as issue 32 sets it: two apps of 3
// replicas each (pods that really run `gantry serve` on SmolLM2-135M, one inference thread each), identical but for
// spec.loadBalancing, called through `gantry gateway` by 12 concurrent conversations of 6 turns (about 150 tokens of
// user text a turn, answers capped at 32 tokens, streamed), the strategies interleaved over rounds (A B, then B A),
// each round with new conversations. Per strategy: time to first token per turn (mean, p95), the share of prompt
// tokens found in a pod's cache, aggregate tokens/s, requests per pod. A second run adds a fourth replica to the
// PrefixHash app between turns 3 and 4 and reports the share of conversations that moved. Also: the key and the ring's
// pick on a 32 KB body, in process. A second workload, agents (issue 38): 8 conversations of 6 turns that share a
// 2k-token system prompt with a tool list (about 60 tokens of user text a turn), on the same apps. The pods keep up to
// 512 MiB of evicted prompts in RAM (spec.server.promptCacheRam). Also runnable: `node test/bench/routing.ts`.
import { randomUUID } from "node:crypto";
import os from "node:os";
import { CoreV1Api } from "@kubernetes/client-node";
import OpenAI from "openai";
import { createTestNamespace, ensureTestCluster, kubeConfigFor } from "../cluster/test-cluster.ts";
import { prefixKey } from "../../server/gateway/3-route/prefix-key.ts";
import { PrefixRing } from "../../server/gateway/3-route/prefix-ring.ts";
import { parseBody } from "../../server/gateway/3-route/request-body.ts";
import { startTestGateway, type TestGateway } from "../support/gateway.ts";
import { startHubServer } from "../support/hub-server.ts";
import { smollm2Path } from "../support/models.ts";
import { installCrd, kubectl, podsOperatorConfig, startTestOperator } from "../support/operator.ts";
import { median } from "./table.ts";

const MODEL = "hf.co/HuggingFaceTB/SmolLM2-135M-Instruct-GGUF:Q4_K_M";
const GROWN = 36;
const CONVERSATIONS = 12,
  TURNS = 6,
  ANSWER_TOKENS = 32,
  AGENTS = 8;
const STRATEGIES = ["LeastLoad", "PrefixHash"] as const;
type Strategy = (typeof STRATEGIES)[number];
const WORDS = (
  "the river valley mountain harbour city market season winter summer garden library museum train station bridge " +
  "castle forest island village tower road school theatre festival kitchen recipe history engine journey letter"
).split(" ");

interface Turn {
  workload: "chat" | "agents";
  strategy: Strategy;
  turn: number;
  ttftMs: number;
  prompt: number;
  cached: number;
  completion: number;
  pod: string;
  /** The access log's `choice`: least_load, ring_first or ring_next (passed on by the load bound). */
  choice: string;
  conversation: string;
}

/** About 150 tokens of user text (a word is about 1.3 tokens of SmolLM2's vocabulary), different per seed. */
function userText(seed: number): string {
  const words: string[] = [];
  for (let i = 0; i < 115; i++) words.push(WORDS[(seed * 7919 + i * i * 31 + i) % WORDS.length]!);
  return `Question ${seed}: tell me about ${words.join(" ")}.`;
}

/** An agent's system prompt: instructions and a tool list, about 2k tokens, the same for every agent conversation. */
const AGENT_SYSTEM = (() => {
  const tools = Array.from({ length: 24 }, (_, i) => ({
    name: `tool_${i}_${WORDS[i % WORDS.length]}`,
    description: `Looks up the ${WORDS[(i * 5) % WORDS.length]} and ${WORDS[(i * 11) % WORDS.length]} records of a ${WORDS[(i * 3) % WORDS.length]}; returns them as a list with dates and sources.`,
    parameters: {
      type: "object",
      properties: {
        query: { type: "string", description: `What to find in the ${WORDS[(i * 7) % WORDS.length]} records` },
        limit: { type: "integer", description: "Most results to return" },
      },
      required: ["query"],
    },
  }));
  return (
    "You are a research agent. Plan before you act, call one tool at a time, cite every source, and answer briefly. " +
    "Rules: ".concat(Array.from({ length: 12 }, (_, i) => `(${i + 1}) never invent a ${WORDS[i]} record;`).join(" ")) +
    `\nTools:\n${JSON.stringify(tools, null, 1)}`
  );
})();

/** About 60 tokens of an agent's user text. */
const agentText = (seed: number): string =>
  `Task ${seed}: find ${Array.from({ length: 40 }, (_, i) => WORDS[(seed * 13 + i * 7) % WORDS.length]).join(" ")}.`;

const p95 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * 0.95))]!;
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

export interface RoutingResult {
  turns: Turn[];
  seconds: Record<Strategy, number[]>;
  agentSeconds: Record<Strategy, number[]>;
  moved: { moved: number; of: number };
  keyMicros: number;
}

export async function benchRouting(opts: { rounds?: number } = {}): Promise<RoutingResult> {
  const rounds = opts.rounds ?? 3;
  const cp = await ensureTestCluster();
  installCrd(cp);
  const kc = kubeConfigFor(cp);
  const core = kc.makeApiClient(CoreV1Api);
  const ns = await createTestNamespace(kc, "bench-routing");
  const hub = await startHubServer({ host: "0.0.0.0" });
  await hub.register({
    org: "HuggingFaceTB",
    repo: "SmolLM2-135M-Instruct-GGUF",
    files: { "SmolLM2-135M-Instruct-Q4_K_M.gguf": await smollm2Path() },
  });
  const op = await startTestOperator(
    cp,
    podsOperatorConfig({ namespace: ns, hubPort: hub.port, lease: "bench-routing" }),
  );
  const gw = await startTestGateway(cp, {
    limits: { requestsPerSecond: 0, burst: 1, concurrent: 0 },
    watchNamespace: ns,
  });
  const apply = (name: string, strategy: Strategy, replicas: number) =>
    kubectl(
      cp,
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "gantry.dev/v1alpha1",
        kind: "ModelApp",
        metadata: { name, namespace: ns },
        spec: {
          model: MODEL,
          auth: "public",
          resources: { profile: "cpu", cpu: "1" },
          // Six sequences a replica: room for the conversations the ring gives it (12 over 3, unevenly); an agent's
          // turn 6 is about 2.5k tokens; evicted prompts kept in RAM, bounded (six pods share this machine).
          server: { parallel: 6, contextLength: 4096, promptCacheRam: "512Mi" },
          scaling: { minReplicas: replicas, maxReplicas: replicas },
          // GANTRY_BENCH_MEAN_LOAD_FACTOR: PrefixHash's bound (KubeAI's default 125), to measure other settings.
          loadBalancing: {
            strategy,
            ...(process.env.GANTRY_BENCH_MEAN_LOAD_FACTOR
              ? { prefixHash: { meanLoadFactor: Number(process.env.GANTRY_BENCH_MEAN_LOAD_FACTOR) } }
              : {}),
          },
        },
      }),
    );
  const ready = async (name: string, n: number) => {
    for (;;) {
      const slices = JSON.parse(
        kubectl(cp, ["-n", ns, "get", "endpointslices", "-l", `kubernetes.io/service-name=${name}`, "-o", "json"]),
      ) as { items: { endpoints?: { conditions?: { ready?: boolean } }[] }[] };
      const up = slices.items.flatMap((i) => i.endpoints ?? []).filter((e) => e.conditions?.ready === true).length;
      if (up === n) return;
      await new Promise((r) => setTimeout(r, 500));
    }
  };
  try {
    const app = { LeastLoad: "least", PrefixHash: "prefix" } as const;
    for (const s of STRATEGIES) apply(app[s], s, 3);
    for (const s of STRATEGIES) await ready(app[s], 3);
    // One request per pod before measuring: the model is mapped and warm everywhere.
    for (const s of STRATEGIES)
      for (let i = 0; i < 6; i++) await chatTurn(gw, ns, app[s], [{ role: "user", content: `warm ${i}` }]);
    const turns: Turn[] = [];
    const seconds: Record<Strategy, number[]> = { LeastLoad: [], PrefixHash: [] };
    const agentSeconds: Record<Strategy, number[]> = { LeastLoad: [], PrefixHash: [] };
    for (let r = 0; r < rounds; r++) {
      for (const s of r % 2 ? [...STRATEGIES].reverse() : STRATEGIES) {
        process.stderr.write(`bench routing: round ${r + 1} of ${rounds}, ${s}\n`);
        const t0 = performance.now();
        const all = await Promise.all(
          Array.from({ length: CONVERSATIONS }, (_, c) => conversation(gw, ns, app[s], s, `r${r}c${c}`, 1, TURNS)),
        );
        seconds[s].push((performance.now() - t0) / 1000);
        turns.push(...all.flat());
      }
    }
    for (let r = 0; r < rounds; r++) {
      for (const s of r % 2 ? [...STRATEGIES].reverse() : STRATEGIES) {
        process.stderr.write(`bench routing: agents, round ${r + 1} of ${rounds}, ${s}\n`);
        const t0 = performance.now();
        const all = await Promise.all(
          Array.from({ length: AGENTS }, (_, c) =>
            conversation(gw, ns, app[s], s, `a${r}c${c}`, 1, TURNS, { system: AGENT_SYSTEM, text: agentText }),
          ),
        );
        agentSeconds[s].push((performance.now() - t0) / 1000);
        turns.push(...all.flat());
      }
    }
    // A fourth PrefixHash replica between two turns of 36 conversations (one at a time, so no load passes one on):
    // the share that changed pods.
    process.stderr.write("bench routing: a fourth replica\n");
    apply("grow", "PrefixHash", 3);
    await ready("grow", 3);
    const grown = Array.from({ length: GROWN }, (_, c) => `g${c}`);
    const before: string[] = [];
    for (const id of grown) before.push((await conversation(gw, ns, "grow", "PrefixHash", id, 1, 1))[0]!.pod);
    apply("grow", "PrefixHash", 4);
    await ready("grow", 4);
    let moved = 0;
    for (const [c, id] of grown.entries())
      if ((await conversation(gw, ns, "grow", "PrefixHash", id, 2, 2))[0]!.pod !== before[c]) moved++;
    return { turns, seconds, agentSeconds, moved: { moved, of: GROWN }, keyMicros: keyCost() };
  } finally {
    await gw.stop();
    await op.stop();
    await core.deleteNamespace({ name: ns }).catch(() => undefined);
    await hub.close();
  }
}

type Message = OpenAI.Chat.Completions.ChatCompletionMessageParam;

/** One streamed turn through the gateway: time to the first token, usage, and the pod the access log names. */
async function chatTurn(gw: TestGateway, ns: string, app: string, messages: Message[]) {
  const requestId = randomUUID();
  const client = new OpenAI({ baseURL: `${gw.url}/${ns}/${app}/v1`, apiKey: "unused", maxRetries: 0 });
  const t0 = performance.now();
  const stream = await client.chat.completions.create(
    { model: MODEL, messages, max_tokens: ANSWER_TOKENS, stream: true, stream_options: { include_usage: true } },
    { headers: { "x-request-id": requestId } },
  );
  let ttftMs = Number.NaN,
    text = "",
    usage: OpenAI.CompletionUsage | undefined;
  for await (const chunk of stream) {
    const delta = chunk.choices[0]?.delta.content;
    if (delta && Number.isNaN(ttftMs)) ttftMs = performance.now() - t0;
    text += delta ?? "";
    usage = chunk.usage ?? usage;
  }
  let line: string | undefined;
  while (
    !(line = gw
      .logs()
      .split("\n")
      .find((l) => l.includes(`"requestId":"${requestId}"`) && l.includes('"pod"')))
  )
    await new Promise((r) => setTimeout(r, 20));
  const logged = JSON.parse(line) as { pod: string; choice: string };
  return { ttftMs, text, usage, pod: logged.pod, choice: logged.choice };
}

/** Turns `from`..`to` of a conversation (the earlier ones replayed as history, with the same texts). */
async function conversation(
  gw: TestGateway,
  ns: string,
  app: string,
  strategy: Strategy,
  id: string,
  from: number,
  to: number,
  agent?: { system: string; text: (seed: number) => string },
): Promise<Turn[]> {
  const seed = [...id].reduce((h, ch) => (h * 31 + ch.charCodeAt(0)) % 100_003, 7);
  const history: Message[] = agent ? [{ role: "system", content: agent.system }] : [];
  const out: Turn[] = [];
  for (let t = 1; t <= to; t++) {
    history.push({ role: "user", content: (agent?.text ?? userText)(seed + t) });
    if (t < from) {
      history.push({ role: "assistant", content: historyOf.get(`${id}#${t}`) ?? "" });
      continue;
    }
    const r = await chatTurn(gw, ns, app, history);
    historyOf.set(`${id}#${t}`, r.text);
    history.push({ role: "assistant", content: r.text });
    out.push({
      workload: agent ? "agents" : "chat",
      strategy,
      turn: t,
      ttftMs: r.ttftMs,
      prompt: r.usage?.prompt_tokens ?? 0,
      cached: r.usage?.prompt_tokens_details?.cached_tokens ?? 0,
      completion: r.usage?.completion_tokens ?? 0,
      pod: r.pod,
      choice: r.choice,
      conversation: id,
    });
  }
  return out;
}
const historyOf = new Map<string, string>();

/** µs per request of PrefixHash's routing work on a 32 KB chat body: the body's parse, the key, the ring's pick. */
function keyCost(): number {
  const messages: Message[] = [{ role: "system", content: "You are a helpful assistant. ".repeat(20) }];
  while (JSON.stringify(messages).length < 32 * 1024)
    messages.push(
      { role: "user", content: userText(messages.length) },
      { role: "assistant", content: "Sure. ".repeat(40) },
    );
  const body = Buffer.from(JSON.stringify({ model: MODEL, messages, stream: true, max_tokens: 32 }));
  const ring = new PrefixRing(["10.0.0.1:11434", "10.0.0.2:11434", "10.0.0.3:11434"], 256);
  const batch = () => {
    const t0 = performance.now();
    for (let i = 0; i < 2000; i++) {
      const parsed = parseBody(body);
      const key = parsed !== "too-deep" && parsed.json ? prefixKey({ list: "messages" }, parsed.json, 100) : undefined;
      ring.pick(key!, () => 0, 1.25);
    }
    return ((performance.now() - t0) * 1000) / 2000;
  };
  batch(); // warm-up (JIT)
  return median(Array.from({ length: 9 }, batch));
}

/** The tables of a result. */
export function routingTables(r: RoutingResult): Array<{ title: string; header: string[]; rows: string[][] }> {
  const load = `load average ${os.loadavg()[0]!.toFixed(1)} on ${os.cpus().length} CPUs`;
  const by = (s: Strategy) => r.turns.filter((t) => t.strategy === s && t.workload === "chat");
  const agentsBy = (s: Strategy) => r.turns.filter((t) => t.strategy === s && t.workload === "agents");
  const f = (n: number) => (Number.isFinite(n) ? n.toFixed(0) : "-");
  const ttft = {
    title: `Routing: time to first token per turn, ms (12 conversations × 6 turns, 3 replicas of SmolLM2-135M, ${load})`,
    header: [
      "turn",
      ...STRATEGIES.flatMap((s) => [`${s} mean`, `${s} p95`, `${s} cached ÷ prompt`]),
      "LeastLoad ÷ PrefixHash (median)",
    ],
    rows: Array.from({ length: TURNS }, (_, i) => {
      const at = (s: Strategy) => by(s).filter((t) => t.turn === i + 1);
      const of = (s: Strategy) => at(s).map((t) => t.ttftMs);
      const cached = (s: Strategy) =>
        (at(s).reduce((a, t) => a + t.cached, 0) / at(s).reduce((a, t) => a + t.prompt, 0)).toFixed(2);
      return [
        String(i + 1),
        ...STRATEGIES.flatMap((s) => [f(mean(of(s))), f(p95(of(s))), cached(s)]),
        (median(of("LeastLoad")) / median(of("PrefixHash"))).toFixed(2),
      ];
    }),
  };
  const summary = {
    title: "Routing: cache reuse, throughput and spread (all rounds)",
    header: [
      "strategy",
      "cached ÷ prompt tokens",
      "tokens/s",
      "median TTFT turns 3–6 ms",
      "requests per pod",
      "max off even",
      "ring's first choice",
    ],
    rows: STRATEGIES.map((s) => {
      const ts = by(s);
      const perPod = new Map<string, number>();
      for (const t of ts) perPod.set(t.pod, (perPod.get(t.pod) ?? 0) + 1);
      const even = ts.length / perPod.size;
      const off = Math.max(...[...perPod.values()].map((n) => Math.abs(n / even - 1)));
      const completion = ts.reduce((a, t) => a + t.completion, 0);
      return [
        s,
        (ts.reduce((a, t) => a + t.cached, 0) / ts.reduce((a, t) => a + t.prompt, 0)).toFixed(2),
        (completion / r.seconds[s].reduce((a, b) => a + b, 0)).toFixed(1),
        f(median(ts.filter((t) => t.turn >= 3).map((t) => t.ttftMs))),
        [...perPod.values()].sort((a, b) => b - a).join(" / "),
        `${(off * 100).toFixed(0)}%`,
        s === "PrefixHash"
          ? `${((ts.filter((t) => t.choice === "ring_first").length / ts.length) * 100).toFixed(0)}%`
          : "-",
      ];
    }),
  };
  const extra = {
    title: "Routing: a fourth replica between turns 3 and 4 (PrefixHash), and the routing work per request",
    header: ["measure", "value"],
    rows: [
      [
        "conversations that changed pods",
        `${r.moved.moved} of ${r.moved.of} (${((r.moved.moved / r.moved.of) * 100).toFixed(0)}%)`,
      ],
      ["key + ring pick on a 32 KB chat body, µs (median of 9 × 2000)", r.keyMicros.toFixed(1)],
    ],
  };
  const agents = {
    title: `Routing, agents: ${AGENTS} conversations × ${TURNS} turns sharing a 2k-token system prompt and tool list (${load})`,
    header: ["strategy", "cached ÷ prompt tokens", "tokens/s", "median TTFT turns 3–6 ms", "median TTFT turn 1 ms"],
    rows: STRATEGIES.map((s) => {
      const ts = agentsBy(s);
      return [
        s,
        (ts.reduce((a, t) => a + t.cached, 0) / ts.reduce((a, t) => a + t.prompt, 0)).toFixed(2),
        (ts.reduce((a, t) => a + t.completion, 0) / r.agentSeconds[s].reduce((a, b) => a + b, 0)).toFixed(1),
        f(median(ts.filter((t) => t.turn >= 3).map((t) => t.ttftMs))),
        f(median(ts.filter((t) => t.turn === 1).map((t) => t.ttftMs))),
      ];
    }),
  };
  return [ttft, summary, agents, extra];
}

if (import.meta.main) {
  const { printTable } = await import("./table.ts");
  const result = await benchRouting({ rounds: Number(process.env.GANTRY_BENCH_ROUNDS ?? 3) });
  for (const t of routingTables(result)) printTable(t.title, t.header, t.rows);
}
