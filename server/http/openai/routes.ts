// OpenAI-compatible API under /v1: a translator onto the same generation core as the native API.
import { randomBytes } from "node:crypto";
import { Router, type Response } from "express";
import { AppError } from "../../common/errors.ts";
import { parseBody } from "../../common/validate.ts";
import type { GenerationStats } from "../../engine/types.ts";
import type { Answer, OutputEvent } from "../answer.ts";
import type { ServerDeps } from "../deps.ts";
import { contextFrom, requireCapability, wantsThinking, type GenerationPlan } from "../generation.ts";
import { DEFAULT_IMAGE_INPUT } from "../images.ts";
import { logprobsRequest, openaiChatLogprobs, openaiCompletionLogprobs } from "../logprobs.ts";
import { respondGeneration, type AnswerAdapter } from "../respond.ts";
import { clientAbortSignal } from "../streams.ts";
import { embedInputs, truncateDims } from "../routes/embed.ts";
import {
  ChatCompletionRequestSchema,
  CompletionRequestSchema,
  EmbeddingsRequestSchema,
  type ChatCompletionRequest,
} from "./schemas.ts";
import {
  finishReason,
  formatFromOpenAI,
  newId,
  samplingFromOpenAI,
  thinkFromOpenAI,
  toChatMessages,
  toolsFromOpenAI,
  unixNow,
  usage,
} from "./translate.ts";

interface Shapes {
  /** Serves another API on these answers (/v1/responses, /v1/messages). */
  adapter?: AnswerAdapter | undefined;
  /** The streamed object of an output event (undefined: nothing streams for it). */
  chunk(ev: OutputEvent, first: boolean): object | undefined;
  lastChunk(stats: GenerationStats, answer: Answer): object;
  usageChunk(stats: GenerationStats): object;
  full(answer: Answer, stats: GenerationStats): object;
}

/** The OpenAI translator: chunks, then the finish chunk and (stream_options.include_usage) the usage chunk. */
const respond = (
  deps: ServerDeps,
  res: Response,
  plan: GenerationPlan,
  stream: boolean,
  includeUsage: boolean,
  shapes: Shapes,
): Promise<void> =>
  respondGeneration(
    deps,
    res,
    plan,
    stream,
    {
      api: "openai",
      piece: shapes.chunk,
      end: (stats, answer) => [shapes.lastChunk(stats, answer), ...(includeUsage ? [shapes.usageChunk(stats)] : [])],
      full: shapes.full,
    },
    shapes.adapter,
  );

/** A streamed chat delta of an output event; `id(index)` names each tool call (the same id in every chunk of it). */
function chatDelta(ev: OutputEvent, id: (index: number) => string): object | undefined {
  switch (ev.type) {
    case "text":
      return { content: ev.text };
    case "thinking":
      return { reasoning_content: ev.text };
    case "tool_call_begin":
      return {
        tool_calls: [
          { index: ev.index, id: id(ev.index), type: "function", function: { name: ev.name, arguments: "" } },
        ],
      };
    case "tool_call_arguments":
      return { tool_calls: [{ index: ev.index, function: { arguments: ev.text } }] };
    default:
      return undefined;
  }
}

/**
 * Serves a parsed chat completion request: the /v1/chat/completions route, and the APIs served on its answers
 * (`adapter`: /v1/responses, /v1/messages).
 */
export function chatCompletions(deps: ServerDeps) {
  return async (res: Response, body: ChatCompletionRequest, adapter?: AnswerAdapter): Promise<void> => {
    const model = await deps.store.resolve(body.model);
    const tools = toolsFromOpenAI(body);
    const think = thinkFromOpenAI(body);
    // Tools the model may not call (tool_choice "none") need no tool support: they are left out of the prompt.
    if (tools) await requireCapability(deps, model, "tools", "tools");
    if (wantsThinking(think))
      await requireCapability(
        deps,
        model,
        "thinking",
        body.reasoning_effort !== undefined ? "reasoning_effort" : "reasoning",
      );
    const plan: GenerationPlan = {
      model,
      input: { kind: "chat", messages: await toChatMessages(body.messages, deps.config.images ?? DEFAULT_IMAGE_INPUT) },
      options: samplingFromOpenAI(body),
      format: formatFromOpenAI(body),
      logprobs: logprobsRequest(body.logprobs, body.top_logprobs),
      ...(tools ? { tools } : {}),
      ...(think !== undefined ? { think } : {}),
      ...contextFrom(body),
    };
    const id = newId("chatcmpl"),
      created = unixNow();
    const head = { id, created, model: body.model, system_fingerprint: "fp_gantry" };
    const callIds: string[] = [];
    const callId = (index: number) => (callIds[index] ??= `call_${randomBytes(12).toString("hex")}`);
    await respond(deps, res, plan, body.stream ?? false, body.stream_options?.include_usage ?? false, {
      adapter,
      chunk: (ev, first) => {
        const delta = chatDelta(ev, callId);
        if (!delta) return undefined;
        return {
          ...head,
          object: "chat.completion.chunk",
          choices: [
            {
              index: 0,
              delta: first ? { role: "assistant", ...delta, refusal: null } : delta,
              logprobs: ev.type === "text" && ev.logprobs ? openaiChatLogprobs(ev.logprobs) : null,
              finish_reason: null,
            },
          ],
        };
      },
      lastChunk: (s, a) => ({
        ...head,
        object: "chat.completion.chunk",
        choices: [{ index: 0, delta: {}, finish_reason: finishReason(s.doneReason, a.toolCalls.length > 0) }],
      }),
      usageChunk: (s) => ({ ...head, object: "chat.completion.chunk", choices: [], usage: usage(s) }),
      full: (a, s) => ({
        ...head,
        object: "chat.completion",
        choices: [
          {
            index: 0,
            message: {
              role: "assistant",
              content: a.toolCalls.length && !a.content ? null : a.content,
              ...(a.thinking ? { reasoning_content: a.thinking } : {}),
              ...(a.toolCalls.length
                ? {
                    tool_calls: a.toolCalls.map((c, i) => ({
                      id: callId(i),
                      type: "function",
                      function: { name: c.call.name, arguments: c.argumentsText },
                    })),
                  }
                : {}),
              refusal: null,
              annotations: [],
            },
            logprobs: a.logprobs ? openaiChatLogprobs(a.logprobs) : null,
            finish_reason: finishReason(s.doneReason, a.toolCalls.length > 0),
          },
        ],
        usage: usage(s),
      }),
    });
  };
}

export function openaiRoutes(deps: ServerDeps): Router {
  const r = Router();
  const chat = chatCompletions(deps);

  r.post("/chat/completions", (req, res) => chat(res, parseBody(ChatCompletionRequestSchema, req.body)));

  r.post("/completions", async (req, res) => {
    const body = parseBody(CompletionRequestSchema, req.body);
    const model = await deps.store.resolve(body.model);
    if (body.suffix) await requireCapability(deps, model, "insert", "suffix");
    const prompt = Array.isArray(body.prompt) ? body.prompt[0]! : body.prompt;
    const plan: GenerationPlan = {
      model,
      input: { kind: "prompt", prompt },
      options: samplingFromOpenAI(body),
      // The legacy API's `logprobs` is the number of alternatives; any number asks for log probabilities.
      logprobs: logprobsRequest(body.logprobs !== undefined, body.logprobs),
      ...contextFrom(body),
    };
    const id = newId("cmpl"),
      created = unixNow();
    const head = { id, created, model: body.model, system_fingerprint: "fp_gantry", object: "text_completion" };
    // Where the next streamed piece starts in the completion (the logprobs' text_offset).
    let offset = 0;
    await respond(deps, res, plan, body.stream ?? false, body.stream_options?.include_usage ?? false, {
      chunk: (ev) => {
        if (ev.type !== "text") return undefined;
        const logprobs = ev.logprobs ? openaiCompletionLogprobs(ev.logprobs, offset) : null;
        offset += ev.text.length;
        return { ...head, choices: [{ index: 0, text: ev.text, logprobs, finish_reason: null }] };
      },
      lastChunk: (s) => ({
        ...head,
        choices: [{ index: 0, text: "", logprobs: null, finish_reason: finishReason(s.doneReason) }],
      }),
      usageChunk: (s) => ({ ...head, choices: [], usage: usage(s) }),
      full: (a, s) => ({
        ...head,
        choices: [
          {
            index: 0,
            text: a.content,
            logprobs: a.logprobs ? openaiCompletionLogprobs(a.logprobs, 0) : null,
            finish_reason: finishReason(s.doneReason),
          },
        ],
        usage: usage(s),
      }),
    });
  });

  r.get("/models", async (_req, res) => {
    const named = await listedModels(deps);
    res.json({ object: "list", data: await Promise.all(named.map((m) => openaiModel(deps, m))) });
  });

  r.get("/models/*id", async (req, res) => {
    const raw = (req.params as { id: string | string[] }).id;
    const id = Array.isArray(raw) ? raw.join("/") : raw;
    const m = (await listedModels(deps)).find((x) => x.name === id || x.name === `${id}:latest`);
    if (!m) throw new AppError("MODEL_NOT_FOUND", `model "${id}" not found`, { param: "model" });
    res.json(await openaiModel(deps, m));
  });

  r.post("/embeddings", async (req, res) => {
    const body = parseBody(EmbeddingsRequestSchema, req.body);
    const model = await deps.store.resolve(body.model);
    const input = embedInputs(body.input);
    const out =
      input.length === 0
        ? { embeddings: [], promptEvalCount: 0 }
        : await deps.engine.embed({ model, input, truncate: true, options: {}, signal: clientAbortSignal(res) });
    res.json({
      object: "list",
      model: body.model,
      data: out.embeddings.map((e, index) => {
        const v = truncateDims(e, body.dimensions);
        return {
          object: "embedding",
          index,
          embedding: body.encoding_format === "base64" ? Buffer.from(new Float32Array(v).buffer).toString("base64") : v,
        };
      }),
      usage: { prompt_tokens: out.promptEvalCount, total_tokens: out.promptEvalCount },
    });
  });

  return r;
}

/**
 * The names /v1/models lists: each model, then the other names that select it (an app's name), so clients that take
 * the first id get the model's own name.
 */
async function listedModels(deps: ServerDeps): Promise<Array<{ name: string; modifiedAt: Date }>> {
  return (await deps.store.list()).flatMap((m) => [m, ...deps.store.aliasesOf(m.name).map((name) => ({ ...m, name }))]);
}

/** A model as /v1/models lists it, with what it can do (capabilities: "completion", "vision", "embedding"). */
async function openaiModel(deps: ServerDeps, m: { name: string; modifiedAt: Date }) {
  const capabilities = await deps.store
    .resolve(m.name)
    .then((spec) => deps.store.capabilities(spec))
    .catch(() => undefined);
  return {
    id: m.name,
    object: "model",
    created: Math.floor(m.modifiedAt.getTime() / 1000),
    owned_by: "library",
    ...(capabilities ? { capabilities } : {}),
  };
}
