// POST /api/chat — Ollama-native chat, NDJSON streaming by default; tools and thinking as Ollama serves them.
import { Router } from "express";
import { ChatRequestSchema, type ChatMessageBody } from "../../api/schemas.ts";
import { parseBody } from "../../common/validate.ts";
import type { ChatMessage } from "../../engine/types.ts";
import type { AnsweredCall } from "../answer.ts";
import type { ServerDeps } from "../deps.ts";
import {
  contextFrom,
  decodeImages,
  formatFrom,
  keepAliveFrom,
  nowIso,
  requireCapability,
  samplingFrom,
  wantsThinking,
  type GenerationPlan,
} from "../generation.ts";
import { logprobsRequest } from "../logprobs.ts";
import { finalMetrics, loadOrUnload, respondNative, type NativeParts } from "./generate.ts";

/** A wire message as the engine takes it: tool calls with their arguments as objects, a tool result's tool. */
function chatMessage(deps: ServerDeps, m: ChatMessageBody, i: number): ChatMessage {
  return {
    role: m.role,
    content: m.content,
    ...(m.images ? { images: decodeImages(deps, m.images, `messages.${i}.images`) } : {}),
    ...(m.tool_calls?.length
      ? {
          toolCalls: m.tool_calls.map((c) => ({
            ...(c.id ? { id: c.id } : {}),
            name: c.function.name,
            arguments: c.function.arguments,
          })),
        }
      : {}),
    ...(m.tool_name !== undefined ? { toolName: m.tool_name } : {}),
    ...(m.tool_call_id !== undefined ? { toolCallId: m.tool_call_id } : {}),
    ...(m.thinking ? { thinking: m.thinking } : {}),
  };
}

/** Ollama's tool calls: the arguments as an object. */
const ollamaToolCalls = (calls: AnsweredCall[]) =>
  calls.map(({ call }) => ({ function: { name: call.name, arguments: call.arguments } }));

/** The assistant message of a response object. */
const message = (p: NativeParts) => ({
  role: "assistant",
  content: p.content,
  ...(p.thinking ? { thinking: p.thinking } : {}),
  ...(p.toolCalls?.length ? { tool_calls: ollamaToolCalls(p.toolCalls) } : {}),
});

export function chatRoutes(deps: ServerDeps): Router {
  const r = Router();
  r.post("/chat", async (req, res) => {
    const body = parseBody(ChatRequestSchema, req.body);
    const model = await deps.store.resolve(body.model);
    if (body.tools?.length) await requireCapability(deps, model, "tools", "tools");
    if (wantsThinking(body.think)) await requireCapability(deps, model, "thinking", "think");
    const messages = (body.messages ?? []).map((m, i) => chatMessage(deps, m, i));
    const plan: GenerationPlan = {
      model,
      input: { kind: "chat", messages },
      options: samplingFrom(body.options),
      format: formatFrom(body.format),
      keepAliveMs: keepAliveFrom(body.keep_alive),
      logprobs: logprobsRequest(body.logprobs, body.top_logprobs),
      ...(body.tools?.length
        ? { tools: { tools: body.tools.map((t) => t.function), choice: "auto", parallel: true } }
        : {}),
      ...(body.think !== undefined ? { think: body.think } : {}),
      ...contextFrom(body),
    };
    const head = () => ({ model: body.model, created_at: nowIso() });
    if (messages.length === 0) {
      await loadOrUnload(deps, res, plan, (extra) => ({
        ...head(),
        message: { role: "assistant", content: "" },
        ...extra,
      }));
      return;
    }
    await respondNative(
      deps,
      res,
      plan,
      body.stream ?? true,
      (p) => ({ ...head(), message: message(p), done: false }),
      (p, stats) => ({ ...head(), message: message(p), done: true, ...finalMetrics(stats) }),
    );
  });
  return r;
}
