// More conversations than sequences (`npm run bench serving`, issue 38): one `gantry serve` with 4 sequences and 16
// conversations taking turns (one request at a time, conversation 1 to 16, then their next turns), so each turn finds
// its sequence taken by others since. Side by side, turn by turn: a server with the RAM prompt cache (default size)
// and one without (GANTRY_PROMPT_CACHE_RAM=0), where the same prompt is evaluated cold; the ratio is per (turn,
// conversation) pair, measured seconds apart. Also, in process: what saving and restoring a sequence's state costs
// per 1k tokens of SmolLM2-135M (this machine's CPU; a GPU copies through host memory the same way, unmeasured here).
import os from "node:os";
import OpenAI from "openai";
import type { Token } from "node-llama-cpp";
import { silentLogger } from "../../server/common/logger.ts";
import { llamaRuntime } from "../../server/engine/llama-runtime.ts";
import { nativeContextOf } from "../../server/engine/native/node-llama-cpp.ts";
import { testEngineBuild } from "../support/engine-build.ts";
import { createModel, startTestServer, type TestServer } from "../support/server.ts";
import { median } from "./table.ts";

const CONVERSATIONS = 16,
  SEQUENCES = 4,
  ANSWER_TOKENS = 24;
const WORDS = (
  "harbour lighthouse orchard meadow canyon glacier volcano desert prairie lagoon reef delta plateau fjord marsh " +
  "tundra savanna estuary archipelago peninsula"
).split(" ");

/** About 150 tokens of user text, different per conversation and turn. */
const userText = (c: number, t: number): string =>
  `Conversation ${c}, turn ${t}: ` +
  Array.from({ length: 110 }, (_, i) => WORDS[(c * 131 + t * 17 + i * i) % WORDS.length]).join(" ") +
  ". Summarize.";

export interface ConversationTurn {
  turn: number;
  warmMs: number;
  coldMs: number;
  prompt: number;
  warmCached: number;
  coldCached: number;
}

export interface ConversationsResult {
  turns: ConversationTurn[];
  load: string;
  /** Wall ms of a save and of a restore, and CPU ms of both (what a busy machine's scheduler does not inflate). */
  state: { tokens: number; bytes: number; saveMs: number; restoreMs: number; cpuMs: number };
}

type Message = OpenAI.Chat.Completions.ChatCompletionMessageParam;

async function turnOn(srv: TestServer, messages: Message[]) {
  const client = new OpenAI({ baseURL: `${srv.url}/v1`, apiKey: "unused", maxRetries: 0 });
  const t0 = performance.now();
  const stream = await client.chat.completions.create({
    model: "smollm2",
    messages,
    max_tokens: ANSWER_TOKENS,
    temperature: 0,
    stream: true,
    stream_options: { include_usage: true },
  });
  let ttft = Number.NaN,
    text = "",
    usage: OpenAI.CompletionUsage | undefined;
  for await (const chunk of stream) {
    const delta = chunk.choices[0]?.delta.content;
    if (delta && Number.isNaN(ttft)) ttft = performance.now() - t0;
    text += delta ?? "";
    usage = chunk.usage ?? usage;
  }
  return { ttft, text, prompt: usage?.prompt_tokens ?? 0, cached: usage?.prompt_tokens_details?.cached_tokens ?? 0 };
}

export async function benchConversations(
  modelPath: string,
  opts: { turns?: number } = {},
): Promise<ConversationsResult> {
  const turns = opts.turns ?? 6;
  const env = (cache: string) => ({
    GANTRY_NUM_PARALLEL: String(SEQUENCES),
    // One thread: no barriers for a busy machine's scheduler to stall (the routing bench's pods run one too).
    GANTRY_THREADS: "1",
    GANTRY_CONTEXT_LENGTH: "2048",
    GANTRY_KEEP_ALIVE: "-1",
    GANTRY_LOG_LEVEL: "warn",
    GANTRY_PROMPT_CACHE_RAM: cache,
  });
  const [warm, cold] = [await startTestServer({ env: env("1gb") }), await startTestServer({ env: env("0") })];
  const out: ConversationTurn[] = [];
  try {
    for (const srv of [warm, cold]) {
      await createModel(srv.url, "smollm2", modelPath);
      await turnOn(srv, [{ role: "user", content: "warm up" }]);
    }
    const histories = Array.from({ length: CONVERSATIONS }, () => [] as Message[]);
    for (let t = 1; t <= turns; t++) {
      process.stderr.write(`bench conversations: turn ${t} of ${turns}\n`);
      for (let c = 0; c < CONVERSATIONS; c++) {
        const messages = [...histories[c]!, { role: "user" as const, content: userText(c, t) }];
        // Neither side always first.
        const first = (t + c) % 2 === 0;
        const a = first ? await turnOn(warm, messages) : undefined;
        const b = await turnOn(cold, messages);
        const w = a ?? (await turnOn(warm, messages));
        // Greedy: both answer the same; the warm side's answer continues the conversation.
        histories[c] = [...messages, { role: "assistant", content: w.text }];
        out.push({
          turn: t,
          warmMs: w.ttft,
          coldMs: b.ttft,
          prompt: w.prompt,
          warmCached: w.cached,
          coldCached: b.cached,
        });
      }
    }
  } finally {
    await warm.stop();
    await cold.stop();
  }
  const load = `load average ${os.loadavg()[0]!.toFixed(1)} on ${os.cpus().length} CPUs`;
  return { turns: out, load, state: await stateCost(modelPath) };
}

/** Median ms to save and to restore the state of a 1024-token sequence of the model, in process, and its bytes. */
export async function stateCost(modelPath: string): Promise<ConversationsResult["state"]> {
  const { llama } = await llamaRuntime(1, silentLogger, testEngineBuild());
  const model = await llama.loadModel({ modelPath });
  const context = await model.createContext({ contextSize: 2048, sequences: 2, threads: 1 });
  try {
    const native = nativeContextOf(context, model);
    if (!native.saveSequence || !native.restoreSequence) throw new Error("the patched addon is required");
    const tokens = Array.from({ length: 1024 }, (_, i) => (100 + (i % 5000)) as Token);
    for (let at = 0; at < tokens.length; at += 512) {
      const part = tokens.slice(at, at + 512);
      native.initBatch(part.length);
      native.addToBatch(0, at, Uint32Array.from(part), new Uint32Array(0));
      await native.decodeBatch();
    }
    const save: number[] = [],
      restore: number[] = [],
      cpu: number[] = [];
    let bytes = 0;
    for (let i = 0; i < 15; i++) {
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      const state = native.saveSequence(0);
      const t1 = performance.now();
      if (!native.restoreSequence(1, state)) throw new Error("restore refused");
      const t2 = performance.now();
      const c = process.cpuUsage(c0);
      cpu.push((c.user + c.system) / 1000);
      bytes = state.byteLength;
      save.push(t1 - t0);
      restore.push(t2 - t1);
    }
    return { tokens: tokens.length, bytes, saveMs: median(save), restoreMs: median(restore), cpuMs: median(cpu) };
  } finally {
    await context.dispose();
    await model.dispose();
  }
}

/** The tables of a result. */
export function conversationTables(
  r: ConversationsResult,
): Array<{ title: string; header: string[]; rows: string[][] }> {
  const byTurn = Array.from(new Set(r.turns.map((t) => t.turn)));
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  return [
    {
      title: `Conversations: ${CONVERSATIONS} taking turns on ${SEQUENCES} sequences of one gantry serve (SmolLM2-135M, greedy, ${ANSWER_TOKENS}-token answers), TTFT with the RAM prompt cache vs the same prompt cold (cache off), ${r.load}`,
      header: [
        "turn",
        "prompt tokens (median)",
        "cached ÷ prompt, cache",
        "cached ÷ prompt, off",
        "TTFT ms cache",
        "TTFT ms cold",
        "cache ÷ cold (median of pairs)",
      ],
      rows: byTurn.map((turn) => {
        const ts = r.turns.filter((t) => t.turn === turn);
        return [
          String(turn),
          median(ts.map((t) => t.prompt)).toFixed(0),
          (sum(ts.map((t) => t.warmCached)) / sum(ts.map((t) => t.prompt))).toFixed(2),
          (sum(ts.map((t) => t.coldCached)) / sum(ts.map((t) => t.prompt))).toFixed(2),
          median(ts.map((t) => t.warmMs)).toFixed(0),
          median(ts.map((t) => t.coldMs)).toFixed(0),
          median(ts.map((t) => t.warmMs / t.coldMs)).toFixed(2),
        ];
      }),
    },
    {
      title: `Prompt cache: a sequence's KV state to host memory and back, SmolLM2-135M, in process (this machine's CPU), ${r.load}`,
      header: [
        "tokens",
        "state MB",
        "save ms",
        "restore ms",
        "save + restore ms per 1k tokens",
        "CPU ms of both per 1k",
      ],
      rows: [
        [
          String(r.state.tokens),
          (r.state.bytes / 1024 ** 2).toFixed(1),
          r.state.saveMs.toFixed(2),
          r.state.restoreMs.toFixed(2),
          (((r.state.saveMs + r.state.restoreMs) * 1000) / r.state.tokens).toFixed(2),
          ((r.state.cpuMs * 1000) / r.state.tokens).toFixed(2),
        ],
      ],
    },
  ];
}

if (import.meta.main) {
  const { printTable } = await import("./table.ts");
  const { smollm2Path } = await import("../support/models.ts");
  const result = await benchConversations(await smollm2Path(), { turns: Number(process.env.GANTRY_BENCH_TURNS ?? 6) });
  for (const t of conversationTables(result)) printTable(t.title, t.header, t.rows);
}
