// The routing bench's client (test/bench/routing.ts): its conversations' texts, and streamed turns through the gateway,
// each with a deadline to its last token and the pod the gateway's access log names.
import { randomUUID } from "node:crypto";
import OpenAI from "openai";
import type { TestGateway } from "../support/gateway.ts";
import type { Strategy, Turn } from "./routing-tables.ts";
import { thinkPauses, type Think } from "./routing-think.ts";

export const MODEL = "hf.co/HuggingFaceTB/SmolLM2-135M-Instruct-GGUF:Q4_K_M";
const ANSWER_TOKENS = 32;

const WORDS = (
  "the river valley mountain harbour city market season winter summer garden library museum train station bridge " +
  "castle forest island village tower road school theatre festival kitchen recipe history engine journey letter"
).split(" ");
/** About 150 tokens of user text (a word is about 1.3 tokens of SmolLM2's vocabulary), different per seed. */
export function userText(seed: number): string {
  const words: string[] = [];
  for (let i = 0; i < 115; i++) words.push(WORDS[(seed * 7919 + i * i * 31 + i) % WORDS.length]!);
  return `Question ${seed}: tell me about ${words.join(" ")}.`;
}

/** An agent's system prompt: instructions and 15 tools, about 2k tokens (24 tools made 3.1k), the same for all. */
export const AGENT_SYSTEM = (() => {
  const tools = Array.from({ length: 15 }, (_, i) => ({
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
export const agentText = (seed: number): string =>
  `Task ${seed}: find ${Array.from({ length: 40 }, (_, i) => WORDS[(seed * 13 + i * 7) % WORDS.length]).join(" ")}.`;

/** A request past its deadline, or a workload stopped by another request's failure. */
export class BenchAbort extends Error {}

export type Message = OpenAI.Chat.Completions.ChatCompletionMessageParam;

/** Streamed turns through the gateway, each with a deadline to its last token. */
export class Client {
  /** How far gw.logs() has been read, and the pod and choice of each request id logged so far. */
  private read = 0;
  private readonly logged = new Map<string, { pod: string; choice: string }>();

  private readonly gw: TestGateway;
  private readonly ns: string;
  private readonly deadlineMs: number;

  constructor(gw: TestGateway, ns: string, deadlineMs: number) {
    this.gw = gw;
    this.ns = ns;
    this.deadlineMs = deadlineMs;
  }

  /** One turn: time to the first token, usage, the pod the access log names. */
  async turn(app: string, messages: Message[], conversation: string, turn: number, stop?: AbortSignal) {
    if (stop?.aborted) throw new BenchAbort(`${app} ${conversation} turn ${turn}: not sent, the phase stopped`);
    const requestId = randomUUID();
    const client = new OpenAI({ baseURL: `${this.gw.url}/${this.ns}/${app}/v1`, apiKey: "unused", maxRetries: 0 });
    const deadline = AbortSignal.timeout(this.deadlineMs);
    const t0 = performance.now();
    let head = Number.NaN,
      ttftMs = Number.NaN,
      text = "",
      usage: OpenAI.CompletionUsage | undefined;
    try {
      const { data: stream } = await client.chat.completions
        .create(
          { model: MODEL, messages, max_tokens: ANSWER_TOKENS, stream: true, stream_options: { include_usage: true } },
          { headers: { "x-request-id": requestId }, signal: stop ? AbortSignal.any([deadline, stop]) : deadline },
        )
        .withResponse();
      head = performance.now() - t0;
      for await (const chunk of stream) {
        const delta = chunk.choices[0]?.delta.content;
        if (delta && Number.isNaN(ttftMs)) ttftMs = performance.now() - t0;
        text += delta ?? "";
        usage = chunk.usage ?? usage;
      }
    } catch (err) {
      const waited = `${((performance.now() - t0) / 1000).toFixed(0)} s`;
      const what = Number.isNaN(head)
        ? "no response head"
        : `the head at ${(head / 1000).toFixed(0)} s, ${Number.isNaN(ttftMs) ? "no token" : "no end"}`;
      const why = deadline.aborted
        ? `past its deadline (${this.deadlineMs / 1000} s): ${what}`
        : stop?.aborted
          ? `stopped after ${waited}: another request failed`
          : `failed after ${waited} (${what}): ${String(err)}`;
      throw new BenchAbort(
        `${app} ${conversation} turn ${turn} (${messages.length} messages, request ${requestId}) ${why}`,
      );
    }
    return { ttftMs, text, usage, ...(await this.loggedRoute(requestId)) };
  }

  /** The access log's pod and choice for a request (the gateway logs it when the answer ends). */
  private async loggedRoute(requestId: string): Promise<{ pod: string; choice: string }> {
    const until = performance.now() + 30_000;
    for (;;) {
      const logs = this.gw.logs();
      const end = logs.lastIndexOf("\n") + 1;
      for (const line of logs.slice(this.read, end).split("\n")) {
        if (!line.includes('"pod"') || !line.includes('"requestId"')) continue;
        const l = JSON.parse(line) as { requestId?: string; pod?: string; choice?: string };
        if (l.requestId && l.pod) this.logged.set(l.requestId, { pod: l.pod, choice: l.choice ?? "" });
      }
      this.read = end;
      const found = this.logged.get(requestId);
      if (found) return found;
      if (performance.now() > until) throw new BenchAbort(`request ${requestId}: no access log line in 30 s`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

/** Turns `from`..`to` of a conversation (the earlier ones replayed as history, with the same texts). */
export async function conversation(
  client: Client,
  app: string,
  strategy: Strategy,
  id: string,
  from: number,
  to: number,
  o: {
    agent?: { system: string; text: (seed: number) => string } | undefined;
    onTurn?: (t: Turn) => void;
    stop?: AbortController;
    /** A pause before each turn after `from` (routing-think.ts). */
    think?: Think;
  } = {},
): Promise<Turn[]> {
  const seed = [...id].reduce((h, ch) => (h * 31 + ch.charCodeAt(0)) % 100_003, 7);
  const pauses = o.think ? thinkPauses(o.think, seed, to) : [];
  const history: Message[] = o.agent ? [{ role: "system", content: o.agent.system }] : [];
  const out: Turn[] = [];
  for (let t = 1; t <= to; t++) {
    history.push({ role: "user", content: (o.agent?.text ?? userText)(seed + t) });
    if (t < from) {
      history.push({ role: "assistant", content: historyOf.get(`${id}#${t}`) ?? "" });
      continue;
    }
    if (t > from && pauses[t - 1]) await new Promise((r) => setTimeout(r, pauses[t - 1]));
    const r = await client.turn(app, history, id, t, o.stop?.signal);
    historyOf.set(`${id}#${t}`, r.text);
    history.push({ role: "assistant", content: r.text });
    const turn: Turn = {
      workload: o.agent ? "agents" : "chat",
      strategy,
      turn: t,
      ttftMs: r.ttftMs,
      prompt: r.usage?.prompt_tokens ?? 0,
      cached: r.usage?.prompt_tokens_details?.cached_tokens ?? 0,
      completion: r.usage?.completion_tokens ?? 0,
      pod: r.pod,
      choice: r.choice,
      conversation: id,
    };
    out.push(turn);
    o.onTurn?.(turn);
  }
  return out;
}
const historyOf = new Map<string, string>();
