// `npm run bench routing`: LeastLoad against PrefixHash on the test control plane, as issue 32 sets it: two apps of 3
// replicas each (pods that really run `gantry serve` on SmolLM2-135M, one inference thread each), identical but for
// spec.loadBalancing, called through `gantry gateway` by 12 concurrent conversations of 6 turns (about 150 tokens of
// user text a turn, answers capped at 32 tokens, streamed), the strategies interleaved over rounds (A B, then B A),
// each round with new conversations. Per strategy: time to first token per turn (mean, p95), the share of prompt
// tokens found in a pod's cache, aggregate tokens/s, requests per pod, the pods' RAM prompt cache counters. A second
// workload, agents (issue 38): 8 conversations of 6 turns that share a 2k-token system prompt with a tool list (about
// 60 tokens of user text a turn), on the same apps. Then a fourth replica is added to a PrefixHash app between turns 1
// and 2 of 36 conversations: the share that moved, and that stayed with their history (decision 0019); and the key and
// the ring's pick on a 32 KB body, in process. The pods keep up to 512 MiB of evicted prompts in RAM
// (spec.server.promptCacheRam).
// GANTRY_BENCH_ROUTING=chat,agents,grow picks the workloads (default all; each one's tables print when it is done),
// GANTRY_BENCH_ROUNDS the rounds (default 3), GANTRY_BENCH_REQUEST_SECONDS a request's deadline to its last token
// (default 300: a request past it ends the run with its conversation, turn and what it was waiting for),
// GANTRY_BENCH_MEAN_LOAD_FACTOR PrefixHash's bound, GANTRY_BENCH_THINK_MS a pause between a conversation's turns (mean,
// default 0; GANTRY_BENCH_THINK=exponential|fixed, seeded per conversation: routing-think.ts). Also runnable:
// `node test/bench/routing.ts`.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { CoreV1Api } from "@kubernetes/client-node";
import { createTestNamespace, ensureTestCluster, kubeConfigFor } from "../cluster/test-cluster.ts";
import type { ControlPlane } from "../cluster/control-plane.ts";
import { prefixKey } from "../../server/gateway/3-route/prefix-key.ts";
import { PrefixRing } from "../../server/gateway/3-route/prefix-ring.ts";
import { parseBody } from "../../server/gateway/3-route/request-body.ts";
import { startTestGateway } from "../support/gateway.ts";
import { startHubServer } from "../support/hub-server.ts";
import { smollm2Path } from "../support/models.ts";
import { installCrd, kubectl, podsOperatorConfig, startTestOperator, sumMetric } from "../support/operator.ts";
import {
  extraTable,
  STRATEGIES,
  workloadTables,
  NO_COUNTS,
  type Grown,
  type PodCounts,
  type Strategy,
  type Table,
  type Turn,
  type Workload,
  type WorkloadResult,
} from "./routing-tables.ts";
import {
  AGENT_SYSTEM,
  agentText,
  BenchAbort,
  Client,
  conversation,
  MODEL,
  userText,
  type Message,
} from "./routing-client.ts";
import { median } from "./table.ts";
import { BenchRoutingThinkSchema, type Think } from "./routing-think.ts";
import { parseEnv } from "../../server/common/config.ts";

const GROWN = 36;
const CONVERSATIONS = 12,
  TURNS = 6,
  AGENTS = 8;
const APPS = { LeastLoad: "least", PrefixHash: "prefix" } as const satisfies Record<Strategy, string>;

export interface RoutingOptions {
  rounds?: number;
  workloads?: ReadonlyArray<Workload | "grow">;
  /** A request's deadline to its last token. */
  requestSeconds?: number;
  /** A pause between a conversation's turns (chat and agents); default none. */
  think?: Think;
  /** Each table, as soon as its workload is done. */
  onTable?: (t: Table) => void;
}

const progress = (line: string) => process.stderr.write(`bench routing: ${line}\n`);

/** Runs the workloads asked for, printing each one's tables when it is done; returns what was measured. */
export async function benchRouting(opts: RoutingOptions = {}): Promise<{ results: WorkloadResult[]; tables: Table[] }> {
  const rounds = opts.rounds ?? 3;
  const workloads = opts.workloads ?? ["chat", "agents", "grow"];
  const deadlineMs = (opts.requestSeconds ?? 300) * 1000;
  const tables: Table[] = [];
  const emit = (t: Table) => {
    tables.push(t);
    opts.onTable?.(t);
  };
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
  const apps = new Apps(cp, ns);
  const results: WorkloadResult[] = [];
  try {
    for (const s of STRATEGIES) apps.apply(APPS[s], s, 3);
    for (const s of STRATEGIES) await apps.ready(APPS[s], 3);
    progress("apps ready; one request per pod to warm them");
    const client = new Client(gw, ns, deadlineMs);
    for (const s of STRATEGIES)
      for (let i = 0; i < 6; i++) await client.turn(APPS[s], [{ role: "user", content: `warm ${i}` }], `warm${i}`, 1);
    for (const workload of workloads) {
      if (workload === "grow") continue;
      const w = await runWorkload(client, apps, workload, rounds, opts.think ?? parseEnv(BenchRoutingThinkSchema, {}));
      results.push(w);
      // Every turn (pod, choice, cached tokens), for a closer look than the tables give.
      const file = path.join(os.tmpdir(), `bench-routing-${workload}-${Date.now()}.json`);
      fs.writeFileSync(file, JSON.stringify(w));
      progress(`${workload}: every turn in ${file}`);
      for (const t of workloadTables(w)) emit(t);
    }
    const moved = workloads.includes("grow") ? await grow(client, apps) : undefined;
    emit(extraTable(moved, keyCost()));
    return { results, tables };
  } finally {
    await gw.stop();
    await op.stop();
    await core.deleteNamespace({ name: ns }).catch(() => undefined);
    await hub.close();
  }
}

/** One workload's rounds: every conversation at once, the strategies interleaved (A B, then B A). */
async function runWorkload(
  client: Client,
  apps: Apps,
  workload: Workload,
  rounds: number,
  think: Think,
): Promise<WorkloadResult> {
  const n = workload === "chat" ? CONVERSATIONS : AGENTS;
  const agent = workload === "agents" ? { system: AGENT_SYSTEM, text: agentText } : undefined;
  const w: WorkloadResult = {
    workload,
    conversations: n,
    turns: TURNS,
    rows: [],
    seconds: { LeastLoad: [], PrefixHash: [] },
    pods: Object.fromEntries(STRATEGIES.map((s) => [s, { ...NO_COUNTS }])) as Record<Strategy, PodCounts>,
    load: [os.loadavg()[0]!, 0],
    think,
  };
  for (let r = 0; r < rounds; r++) {
    for (const s of r % 2 ? [...STRATEGIES].reverse() : STRATEGIES) {
      const phase = `${workload}, round ${r + 1} of ${rounds}, ${s}`;
      progress(`${phase}: ${n} conversations (load ${os.loadavg()[0]!.toFixed(1)})`);
      const before = await apps.podCounts(APPS[s]);
      const done = new Map<number, Turn[]>();
      const t0 = performance.now();
      const onTurn = (t: Turn) => {
        const at = [...(done.get(t.turn) ?? []), t];
        done.set(t.turn, at);
        if (at.length < n) return;
        const cached = at.reduce((a, x) => a + x.cached, 0) / at.reduce((a, x) => a + x.prompt, 0);
        progress(
          `${phase}: turn ${t.turn} done at ${((performance.now() - t0) / 1000).toFixed(0)} s, ` +
            `median TTFT ${median(at.map((x) => x.ttftMs)).toFixed(0)} ms, cached ${cached.toFixed(2)}`,
        );
      };
      const stop = new AbortController();
      const all = await Promise.all(
        Array.from({ length: n }, (_, c) =>
          conversation(client, APPS[s], s, `${workload[0]}${r}c${c}`, 1, TURNS, { agent, onTurn, stop, think }).catch(
            (err: unknown) => {
              // One failure ends the phase: the others stop at their next request instead of running on unmeasured.
              stop.abort(err);
              throw err;
            },
          ),
        ),
      );
      w.seconds[s].push((performance.now() - t0) / 1000);
      w.rows.push(...all.flat());
      const after = await apps.podCounts(APPS[s]);
      for (const k of Object.keys(NO_COUNTS) as Array<keyof PodCounts>) w.pods[s][k] += after[k] - before[k];
    }
  }
  w.load[1] = os.loadavg()[0]!;
  return w;
}

/**
 * A fourth PrefixHash replica between two turns of 36 conversations (one at a time, so no load passes one on): how
 * many changed pods.
 */
async function grow(client: Client, apps: Apps): Promise<Grown> {
  progress("a fourth replica");
  apps.apply("grow", "PrefixHash", 3);
  await apps.ready("grow", 3);
  const grown = Array.from({ length: GROWN }, (_, c) => `g${c}`);
  const before: string[] = [];
  for (const id of grown) before.push((await conversation(client, "grow", "PrefixHash", id, 1, 1))[0]!.pod);
  apps.apply("grow", "PrefixHash", 4);
  await apps.ready("grow", 4);
  let moved = 0,
    kept = 0;
  for (const [c, id] of grown.entries()) {
    const t = (await conversation(client, "grow", "PrefixHash", id, 2, 2))[0]!;
    if (t.pod !== before[c]) moved++;
    // Kept on the pod of its last turn though the ring now names another (the new pod took its key).
    if (t.choice === "ring_kept") kept++;
  }
  return { moved, kept, of: GROWN };
}

/** The bench's ModelApps, their readiness and their pods' counters. */
class Apps {
  private readonly cp: ControlPlane;
  private readonly ns: string;

  constructor(cp: ControlPlane, ns: string) {
    this.cp = cp;
    this.ns = ns;
  }

  apply(name: string, strategy: Strategy, replicas: number): void {
    kubectl(
      this.cp,
      ["apply", "-f", "-"],
      JSON.stringify({
        apiVersion: "gantry.dev/v1alpha1",
        kind: "ModelApp",
        metadata: { name, namespace: this.ns },
        spec: {
          model: MODEL,
          auth: "public",
          resources: { profile: "cpu", cpu: "1" },
          // Six sequences a replica: room for the conversations the ring gives it (12 over 3, unevenly); an agent's
          // turn 6 is about 2.5k tokens; evicted prompts kept in RAM, bounded (six pods share this machine).
          server: { parallel: 6, contextLength: 4096, promptCacheRam: "512Mi" },
          scaling: { minReplicas: replicas, maxReplicas: replicas },
          loadBalancing: {
            strategy,
            ...(process.env.GANTRY_BENCH_MEAN_LOAD_FACTOR
              ? { prefixHash: { meanLoadFactor: Number(process.env.GANTRY_BENCH_MEAN_LOAD_FACTOR) } }
              : {}),
          },
        },
      }),
    );
  }

  /** The ready endpoints (address:port) of an app's Service. */
  endpoints(name: string): string[] {
    const slices = JSON.parse(
      kubectl(this.cp, [
        "-n",
        this.ns,
        "get",
        "endpointslices",
        "-l",
        `kubernetes.io/service-name=${name}`,
        "-o",
        "json",
      ]),
    ) as {
      items: { ports?: { port?: number }[]; endpoints?: { addresses: string[]; conditions?: { ready?: boolean } }[] }[];
    };
    return slices.items.flatMap((i) =>
      (i.endpoints ?? [])
        .filter((e) => e.conditions?.ready === true)
        .map((e) => `${e.addresses[0]}:${i.ports?.[0]?.port ?? 11434}`),
    );
  }

  async ready(name: string, n: number, seconds = 300): Promise<void> {
    const until = performance.now() + seconds * 1000;
    for (;;) {
      const up = this.endpoints(name).length;
      if (up === n) return;
      if (performance.now() > until)
        throw new BenchAbort(`app ${name}: ${up} of ${n} replicas ready after ${seconds} s`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }

  /** The RAM prompt cache counters of an app's pods, summed. */
  async podCounts(name: string): Promise<PodCounts> {
    const texts = await Promise.all(
      this.endpoints(name).map((ep) =>
        fetch(`http://${ep}/metrics`, { signal: AbortSignal.timeout(30_000) }).then((r) => r.text()),
      ),
    );
    const sum = (metric: string, labels: Record<string, string> = {}) =>
      texts.reduce((a, t) => a + sumMetric(t, metric, labels), 0);
    return {
      hits: sum("gantry_prompt_cache_requests_total", { result: "hit" }),
      misses: sum("gantry_prompt_cache_requests_total", { result: "miss" }),
      failed: sum("gantry_prompt_cache_requests_total", { result: "failed" }),
      restored: sum("gantry_prompt_cache_restored_tokens_total"),
      ttftSeconds: sum("gantry_time_to_first_token_seconds_sum"),
      ttftCount: sum("gantry_time_to_first_token_seconds_count"),
      generationSeconds: sum("gantry_decode_seconds_total", { call: "generation" }),
      promptSeconds: sum("gantry_decode_seconds_total", { call: "prompt" }),
      idleSeconds: sum("gantry_decode_idle_seconds_total"),
      generationCalls: sum("gantry_decode_calls_total", { call: "generation" }),
      promptCalls: sum("gantry_decode_calls_total", { call: "prompt" }),
    };
  }
}

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

/** GANTRY_BENCH_ROUTING: the workloads asked for. */
export function routingWorkloads(env = process.env.GANTRY_BENCH_ROUTING): Array<Workload | "grow"> {
  const known = ["chat", "agents", "grow"] as const;
  if (!env) return [...known];
  const asked = env.split(",").map((s) => s.trim());
  const bad = asked.filter((s) => !(known as readonly string[]).includes(s));
  if (bad.length)
    throw new Error(`GANTRY_BENCH_ROUTING: unknown workload ${bad.join(", ")} (known: ${known.join(", ")})`);
  return asked as Array<Workload | "grow">;
}

/** `npm run bench routing` and `node test/bench/routing.ts`: the tables as they come. */
export async function runRoutingBench(): Promise<void> {
  const { printTable } = await import("./table.ts");
  try {
    await benchRouting({
      rounds: Number(process.env.GANTRY_BENCH_ROUNDS ?? 3),
      workloads: routingWorkloads(),
      requestSeconds: Number(process.env.GANTRY_BENCH_REQUEST_SECONDS ?? 300),
      think: parseEnv(BenchRoutingThinkSchema),
      onTable: (t) => printTable(t.title, t.header, t.rows),
    });
  } catch (err) {
    // A request past its deadline: the tables of the workloads done are printed; this says which request and why.
    if (!(err instanceof BenchAbort)) throw err;
    console.error(`bench routing stopped: ${err.message}`);
    process.exitCode = 1;
  }
}

if (import.meta.main) await runRoutingBench();
