// POST /api/chat — Ollama-native chat, NDJSON streaming by default.
import { Router } from "express";
import { ChatRequestSchema } from "../../api/schemas.ts";
import { parseBody } from "../../common/validate.ts";
import type { ChatMessage } from "../../engine/types.ts";
import type { ServerDeps } from "../deps.ts";
import {
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
import { finalMetrics, loadOrUnload, respondNative } from "./generate.ts";

export function chatRoutes(deps: ServerDeps): Router {
  const r = Router();
  r.post("/chat", async (req, res) => {
    const body = parseBody(ChatRequestSchema, req.body);
    const model = await deps.store.resolve(body.model);
    if (body.tools?.length) await requireCapability(deps, model, "tools", "tools");
    if (wantsThinking(body.think)) await requireCapability(deps, model, "thinking", "think");
    const messages: ChatMessage[] = (body.messages ?? []).map((m, i) => ({
      role: m.role,
      content: m.content,
      images: decodeImages(deps, m.images, `messages.${i}.images`),
    }));
    const plan: GenerationPlan = {
      model,
      input: { kind: "chat", messages },
      options: samplingFrom(body.options),
      format: formatFrom(body.format),
      keepAliveMs: keepAliveFrom(body.keep_alive),
      logprobs: logprobsRequest(body.logprobs, body.top_logprobs),
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
      (text) => ({ ...head(), message: { role: "assistant", content: text }, done: false }),
      (text, stats) => ({
        ...head(),
        message: { role: "assistant", content: text },
        done: true,
        ...finalMetrics(stats),
      }),
    );
  });
  return r;
}
