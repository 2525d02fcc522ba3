// POST /api/generate — Ollama-native completion, NDJSON streaming by default.
import { Router } from "express";
import { GenerateRequestSchema, type FinalMetrics } from "../../api/schemas.ts";
import { parseBody } from "../../common/validate.ts";
import { AppError } from "../../common/errors.ts";
import type { GenerationStats, OutputTokenLogprob } from "../../engine/types.ts";
import type { ServerDeps } from "../deps.ts";
import {
  draftAcceptanceRate,
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
import { logprobsRequest, ollamaLogprobs } from "../logprobs.ts";
import { respondGeneration } from "../respond.ts";
import type { Response } from "express";
import type { AnsweredCall } from "../answer.ts";

const thinkingField = (p: NativeParts): object => (p.thinking ? { thinking: p.thinking } : {});

export function finalMetrics(s: GenerationStats): FinalMetrics {
  return {
    done_reason: s.doneReason,
    total_duration: s.totalDurationNs,
    load_duration: s.loadDurationNs,
    prompt_eval_count: s.promptEvalCount,
    prompt_cached_count: s.promptCachedCount,
    prompt_eval_duration: s.promptEvalDurationNs,
    eval_count: s.evalCount,
    eval_duration: s.evalDurationNs,
    ...(s.draft
      ? {
          draft_count: s.draft.drafted,
          draft_accepted_count: s.draft.accepted,
          draft_acceptance_rate: draftAcceptanceRate(s.draft),
        }
      : {}),
  };
}

/**
 * Loading without a prompt (Ollama: empty prompt / empty messages loads the model; keep_alive 0 unloads it).
 * Answers `{..., done: true, done_reason: "load" | "unload"}` with the shape of the route's final object.
 */
export async function loadOrUnload(
  deps: ServerDeps,
  res: Response,
  plan: GenerationPlan,
  shape: (extra: object) => object,
): Promise<void> {
  if (plan.keepAliveMs === 0) {
    await deps.engine.unload(plan.model.name);
    res.json(shape({ done: true, done_reason: "unload" }));
    return;
  }
  const t0 = process.hrtime.bigint();
  const { loadDurationNs } = await deps.engine.load(plan.model, {
    keepAliveMs: plan.keepAliveMs,
    options: plan.options,
  });
  res.json(
    shape({
      done: true,
      done_reason: "load",
      total_duration: Number(process.hrtime.bigint() - t0),
      load_duration: loadDurationNs,
    }),
  );
}

/** Ollama's `logprobs` field of a response object, when the request asked for log probabilities. */
function logprobsField(plan: GenerationPlan, lps: readonly OutputTokenLogprob[] | undefined): object {
  return plan.logprobs && lps?.length ? { logprobs: ollamaLogprobs(lps, plan.logprobs.top) } : {};
}

/** What one native response object carries of the answer: content, and thinking and tool calls when there are any. */
export interface NativeParts {
  content: string;
  thinking?: string;
  toolCalls?: AnsweredCall[];
}

/**
 * Streams (NDJSON) or collects a generation; `piece(parts)` and `final(parts, stats)` build the route's objects. A
 * stream carries thinking and content as they come, and each tool call whole once it is complete (as Ollama streams
 * them).
 */
export async function respondNative(
  deps: ServerDeps,
  res: Response,
  plan: GenerationPlan,
  stream: boolean,
  piece: (parts: NativeParts) => object,
  final: (parts: NativeParts, stats: GenerationStats) => object,
): Promise<void> {
  await respondGeneration(deps, res, plan, stream, {
    api: "ollama",
    piece: (ev) => {
      if (ev.type === "text") return { ...piece({ content: ev.text }), ...logprobsField(plan, ev.logprobs) };
      if (ev.type === "thinking") return piece({ content: "", thinking: ev.text });
      // Only whole calls, as Ollama (a call cut short by num_predict is not one).
      if (ev.type === "tool_call" && !ev.cut)
        return piece({ content: "", toolCalls: [{ call: ev.call, argumentsText: ev.argumentsText }] });
      return undefined;
    },
    end: (stats) => [final({ content: "" }, stats)],
    full: (a, stats) => ({
      ...final(
        {
          content: a.content,
          ...(a.thinking ? { thinking: a.thinking } : {}),
          ...(a.toolCalls.some((c) => !c.cut) ? { toolCalls: a.toolCalls.filter((c) => !c.cut) } : {}),
        },
        stats,
      ),
      ...logprobsField(plan, a.logprobs),
    }),
  });
}

export function generateRoutes(deps: ServerDeps): Router {
  const r = Router();
  r.post("/generate", async (req, res) => {
    const body = parseBody(GenerateRequestSchema, req.body);
    if (body.raw && body.context?.length)
      throw new AppError("BAD_REQUEST", "raw mode does not support context", { param: "context" });
    const model = await deps.store.resolve(body.model);
    if (body.suffix) await requireCapability(deps, model, "insert", "suffix");
    if (wantsThinking(body.think)) await requireCapability(deps, model, "thinking", "think");
    const plan: GenerationPlan = {
      model,
      input: {
        kind: "prompt",
        prompt: body.prompt ?? "",
        system: body.system,
        template: body.template,
        raw: body.raw,
        images: decodeImages(deps, body.images, "images"),
        ...(body.context?.length ? { context: body.context } : {}),
      },
      options: samplingFrom(body.options),
      format: formatFrom(body.format),
      keepAliveMs: keepAliveFrom(body.keep_alive),
      logprobs: logprobsRequest(body.logprobs, body.top_logprobs),
      // Ollama returns the exchange's tokens (`context`) unless the prompt was raw.
      ...(body.raw ? {} : { returnTokens: true }),
      ...(body.think !== undefined ? { think: body.think } : {}),
      ...contextFrom(body),
    };
    const head = () => ({ model: body.model, created_at: nowIso() });
    if (!body.prompt && !body.images?.length) {
      await loadOrUnload(deps, res, plan, (extra) => ({ ...head(), response: "", ...extra }));
      return;
    }
    await respondNative(
      deps,
      res,
      plan,
      body.stream ?? true,
      (p) => ({ ...head(), response: p.content, ...thinkingField(p), done: false }),
      (p, stats) => ({
        ...head(),
        response: p.content,
        ...thinkingField(p),
        done: true,
        ...finalMetrics(stats),
        ...(stats.tokens ? { context: stats.tokens } : {}),
      }),
    );
  });
  return r;
}
