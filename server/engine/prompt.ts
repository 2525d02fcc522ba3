// Turns a PromptInput into tokens. Chat goes through the model's TEMPLATE override (Go template, rendered by the
// injected
// renderer) or the GGUF chat template (node-llama-cpp chat wrapper, resolved once per loaded model). Raw prompts are
// tokenized verbatim.
import {
  JinjaTemplateChatWrapper,
  type ChatHistoryItem,
  type ChatWrapper,
  type LlamaModel,
  type Token,
} from "node-llama-cpp";
import { AppError, isAppError } from "../common/errors.ts";
import type { ChatMessage, ModelSpec, PromptInput } from "./types.ts";

/** Ollama's template data. */
export interface TemplateData {
  System: string;
  Prompt: string;
  Response: string;
  Messages: Array<{ Role: string; Content: string }>;
}

export type RenderTemplate = (template: string, data: TemplateData) => string;

export interface BuiltPrompt {
  tokens: Token[];
  /** Plain-text stop triggers of the chat wrapper (in addition to end-of-generation tokens). */
  stopStrings: string[];
}

export interface PromptContext {
  model: LlamaModel;
  spec: ModelSpec;
  chatWrapper: ChatWrapper;
  renderTemplate: RenderTemplate | undefined;
  /** Tokens in the model's vocabulary (ids are 0 to vocabSize - 1). */
  vocabSize: number;
}

export function buildPrompt(ctx: PromptContext, input: PromptInput): BuiltPrompt {
  const hasImages =
    input.kind === "chat" ? input.messages.some((m) => (m.images?.length ?? 0) > 0) : (input.images?.length ?? 0) > 0;
  // node-llama-cpp has no image input; silently dropping images would make the model answer about nothing.
  if (hasImages)
    throw new AppError("BAD_REQUEST", `model "${ctx.spec.name}" does not support images`, { param: "images" });
  if (input.kind === "chat") {
    const history = withDefaultSystem([...ctx.spec.messages, ...input.messages], ctx.spec.system);
    if (ctx.spec.template !== undefined) return renderToTokens(ctx, ctx.spec.template, templateData(history));
    return fromChatWrapper(ctx, history);
  }
  const built = formatPrompt(ctx, input);
  return input.context?.length ? afterContext(ctx, input.context, built) : built;
}

/** An earlier exchange's tokens, then the prompt (without a second BOS). Ids outside the vocabulary: BAD_REQUEST. */
function afterContext(ctx: PromptContext, context: number[], built: BuiltPrompt): BuiltPrompt {
  const bad = context.find((t) => !Number.isInteger(t) || t < 0 || t >= ctx.vocabSize);
  if (bad !== undefined)
    throw new AppError(
      "BAD_REQUEST",
      `invalid context: token id ${bad} is not in the model's vocabulary (0 to ${ctx.vocabSize - 1})`,
      { param: "context" },
    );
  const bos = ctx.model.tokens.bos;
  const rest = bos !== null && built.tokens[0] === bos ? built.tokens.slice(1) : built.tokens;
  return { tokens: [...(context as Token[]), ...rest], stopStrings: built.stopStrings };
}

function formatPrompt(ctx: PromptContext, input: Extract<PromptInput, { kind: "prompt" }>): BuiltPrompt {
  if (input.raw) return { tokens: withBos(ctx.model, ctx.model.tokenize(input.prompt, true)), stopStrings: [] };
  const history = withDefaultSystem(
    [
      ...(input.system !== undefined ? [{ role: "system" as const, content: input.system }] : []),
      { role: "user", content: input.prompt },
    ],
    ctx.spec.system,
  );
  const template = input.template ?? ctx.spec.template;
  if (template !== undefined) return renderToTokens(ctx, template, templateData(history));
  return fromChatWrapper(ctx, history);
}

/** The model's SYSTEM applies when the conversation has no system message of its own. */
export function withDefaultSystem(history: ChatMessage[], system: string | undefined): ChatMessage[] {
  if (system === undefined || system === "" || history.some((m) => m.role === "system")) return history;
  return [{ role: "system", content: system }, ...history];
}

/** .System = the system messages, .Prompt = the last user message, .Messages = the whole history. */
export function templateData(history: ChatMessage[]): TemplateData {
  const lastUser = history.findLast((m) => m.role === "user");
  return {
    System: history
      .filter((m) => m.role === "system")
      .map((m) => m.content)
      .join("\n"),
    Prompt: lastUser?.content ?? "",
    Response: "",
    Messages: history.map((m) => ({ Role: m.role, Content: m.content })),
  };
}

function renderToTokens(ctx: PromptContext, template: string, data: TemplateData): BuiltPrompt {
  if (!ctx.renderTemplate)
    throw new AppError("TEMPLATE_ERROR", "TEMPLATE overrides are not supported: no template renderer configured");
  let text: string;
  try {
    text = ctx.renderTemplate(template, data);
  } catch (e) {
    if (isAppError(e)) throw e;
    throw new AppError("TEMPLATE_ERROR", `template error: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
  return { tokens: withBos(ctx.model, ctx.model.tokenize(text, true)), stopStrings: [] };
}

function fromChatWrapper(ctx: PromptContext, history: ChatMessage[]): BuiltPrompt {
  const chatHistory: ChatHistoryItem[] = history.map(toHistoryItem);
  // The last item is the (empty) model turn to be completed.
  chatHistory.push({ type: "model", response: [] });
  const state = ctx.chatWrapper.generateContextState({ chatHistory });
  const stopStrings = state.stopGenerationTriggers
    .filter((t) => t.values.every((v) => typeof v === "string"))
    // The Jinja wrapper ends a turn at "<|im_end|>\n" (the template's text after the marker); the marker alone ends it.
    .map((t) => t.values.join("").trimEnd())
    .filter((s) => s.length > 0);
  return { tokens: bosAsLlamaCpp(ctx, state.contextText.tokenize(ctx.model.tokenizer)), stopStrings };
}

/**
 * BOS as llama.cpp puts it in front of a rendered chat: the template's text as written, plus BOS when the model asks
 * for one (add_bos_token). node-llama-cpp's built-in wrappers (ChatML, Llama 3…) always open with BOS instead, which a
 * model that does not want one must not get — for SmolLM2, whose BOS is <|im_start|>, the prompt would start with two.
 */
function bosAsLlamaCpp(ctx: PromptContext, tokens: Token[]): Token[] {
  if (ctx.chatWrapper instanceof JinjaTemplateChatWrapper) return withBos(ctx.model, tokens);
  const bos = ctx.model.tokens.bos;
  if (ctx.model.tokens.shouldPrependBosToken || bos === null || tokens[0] !== bos) return tokens;
  return tokens.slice(1);
}

function toHistoryItem(m: ChatMessage): ChatHistoryItem {
  switch (m.role) {
    case "system":
      return { type: "system", text: m.content };
    case "assistant":
      return { type: "model", response: [m.content] };
    default:
      // Tool results have no slot of their own in generic chat wrappers; they are shown to the model as user turns.
      return { type: "user", text: m.content };
  }
}

/** Adds BOS when the model wants one and the text did not already start with it. */
function withBos(model: LlamaModel, tokens: Token[]): Token[] {
  const bos = model.tokens.bos;
  if (bos === null || !model.tokens.shouldPrependBosToken || tokens[0] === bos) return tokens;
  return [bos, ...tokens];
}
