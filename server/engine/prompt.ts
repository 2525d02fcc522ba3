// Turns a PromptInput into tokens. Chat goes through the model's TEMPLATE override (Go template, rendered by the
// injected renderer) or the GGUF's Jinja chat template (server/chat), both with the request's tools and thinking
// setting; a model with neither gets node-llama-cpp's chat wrapper. Raw prompts are tokenized verbatim. A chat prompt
// comes with how to read the output (output-plan.ts): its thinking section and tool calls.
import {
  JinjaTemplateChatWrapper,
  LlamaText,
  type LlamaTextValue,
  type ChatHistoryItem,
  type ChatWrapper,
  type LlamaModel,
  type Token,
} from "node-llama-cpp";
import { templateFeatures } from "../chat/features.ts";
import { renderChat, type ChatTemplate, type GoRenderer } from "../chat/render.ts";
import { AppError, isAppError } from "../common/errors.ts";
import { outputPlan, type OutputPlan } from "./output-plan.ts";
import type { ChatMessage, ModelSpec, PromptInput, ThinkSetting, ToolsRequest } from "./types.ts";

/** Renders a Go template (a Modelfile TEMPLATE) with Ollama's template data. */
export type RenderTemplate = GoRenderer;

/** What a chat request adds to its messages: tools the model may call, and its thinking setting. */
export interface ChatOptions {
  tools?: ToolsRequest | undefined;
  think?: ThinkSetting | undefined;
}

export interface BuiltPrompt {
  /** The prompt's tokens (with images: empty, see `withImages`). */
  tokens: Token[];
  /** Plain-text stop triggers of the chat wrapper (in addition to end-of-generation tokens). */
  stopStrings: string[];
  /** A prompt with images: its text tokens around them (images.length + 1 runs) and the images in prompt order. */
  withImages?: { segments: Token[][]; images: RequestImage[] };
  /** How to read the output: thinking and tool calls (absent: it is all content). */
  output?: OutputPlan;
}

/** An image of a request, with the field it came from (for errors). */
export interface RequestImage {
  bytes: Uint8Array;
  param: string;
}

export interface PromptContext {
  model: LlamaModel;
  spec: ModelSpec;
  chatWrapper: ChatWrapper;
  renderTemplate: RenderTemplate | undefined;
  /** Tokens in the model's vocabulary (ids are 0 to vocabSize - 1). */
  vocabSize: number;
  /** A vision model's image marker (its projector's): images go into the text as markers. Absent: no images. */
  imageMarker?: string;
  /** The GGUF's own Jinja chat template (tokenizer.chat_template), when it has one. */
  jinjaTemplate?: string | undefined;
}

export function buildPrompt(ctx: PromptContext, input: PromptInput, chat: ChatOptions = {}): BuiltPrompt {
  const images = requestImages(input);
  if (images.length === 0) return buildText(ctx, input, chat);
  // Silently dropping images would make the model answer about nothing. The error names Ollama's images list (its
  // index dropped) or the first image's own field (an OpenAI content part's image_url).
  if (ctx.imageMarker === undefined)
    throw new AppError(
      "BAD_REQUEST",
      `model "${ctx.spec.name}" does not support images: it has no vision projector (mmproj); send images to a vision model`,
      { param: images[0]!.param.replace(/(^|\.)images\.\d+$/, "$1images") },
    );
  // Each image goes in as the projector's marker, the images of a message before its text (as Ollama does); markers
  // written in the text itself are dropped, so that markers and images always pair up.
  const marker = ctx.imageMarker;
  const mark = (text: string, n: number) => (n > 0 ? `${marker.repeat(n)}\n` : "") + text.split(marker).join("");
  const marked: PromptInput =
    input.kind === "chat"
      ? { ...input, messages: input.messages.map((m) => ({ ...m, content: mark(m.content, m.images?.length ?? 0) })) }
      : { ...input, prompt: mark(input.prompt, input.images?.length ?? 0) };
  const built = buildText({ ...ctx, splitAt: marker }, marked, chat);
  const segments = built.withImages!.segments;
  if (segments.length !== images.length + 1)
    throw new AppError(
      "BAD_REQUEST",
      `the prompt template placed ${segments.length - 1} of the request's ${images.length} images; the template must include every message's content`,
      { param: "images" },
    );
  return {
    tokens: [],
    stopStrings: built.stopStrings,
    withImages: { segments, images },
    ...(built.output ? { output: built.output } : {}),
  };
}

/** The request's images in prompt order, each named by its field. */
function requestImages(input: PromptInput): RequestImage[] {
  if (input.kind === "prompt") return (input.images ?? []).map((bytes, j) => ({ bytes, param: `images.${j}` }));
  return input.messages.flatMap((m, i) =>
    (m.images ?? []).map((bytes, j) => ({ bytes, param: m.imageFields?.[j] ?? `messages.${i}.images.${j}` })),
  );
}

/** Tokenizing with `splitAt`: the text is split there (an image's place) into runs of tokens, BOS on the first. */
type TokenizeContext = PromptContext & { splitAt?: string };

function buildText(ctx: TokenizeContext, input: PromptInput, chat: ChatOptions): BuiltPrompt {
  if (input.kind === "chat") {
    const history = withDefaultSystem([...ctx.spec.messages, ...input.messages], ctx.spec.system);
    return renderConversation(ctx, history, chatTemplate(ctx, undefined), chat);
  }
  const built = formatPrompt(ctx, input, chat.think);
  return input.context?.length ? afterContext(ctx, input.context, built) : built;
}

/** The template a prompt is rendered with: a Go template (the request's, the model's TEMPLATE), else the GGUF's. */
function chatTemplate(ctx: PromptContext, requestTemplate: string | undefined): ChatTemplate | undefined {
  const go = requestTemplate ?? ctx.spec.template;
  if (go !== undefined) return { kind: "go", text: go };
  return ctx.jinjaTemplate ? { kind: "jinja", text: ctx.jinjaTemplate } : undefined;
}

/** A conversation through its template, with the tools and thinking setting, and how to read what comes out. */
function renderConversation(
  ctx: TokenizeContext,
  history: ChatMessage[],
  t: ChatTemplate | undefined,
  chat: ChatOptions,
): BuiltPrompt {
  if (t === undefined) return fromChatWrapper(ctx, history);
  if (t.kind === "go" && !ctx.renderTemplate)
    throw new AppError("TEMPLATE_ERROR", "TEMPLATE overrides are not supported: no template renderer configured");
  const features = templateFeatures(t);
  const tools = chat.tools && features.tools ? chat.tools : undefined;
  const render = (messages: ChatMessage[]) =>
    renderChat(
      t,
      {
        messages,
        tools: tools?.tools,
        think: chat.think,
        addGenerationPrompt: true,
        bosToken: ctx.model.tokens.bosString ?? "",
        eosToken: ctx.model.tokens.eosString ?? "",
      },
      ctx.renderTemplate,
    );
  let text: string;
  try {
    text = render(history);
  } catch (e) {
    if (isAppError(e)) throw e;
    // A template without a system role (Gemma's raises an error): the system text opens the first user message, as
    // llama.cpp does for such templates.
    const merged = t.kind === "jinja" ? systemIntoFirstUser(history) : undefined;
    try {
      if (!merged) throw e;
      text = render(merged);
    } catch {
      throw new AppError("TEMPLATE_ERROR", `template error: ${e instanceof Error ? e.message : String(e)}`, {
        cause: e,
      });
    }
  }
  const { output, prefill } = outputPlan(features, text, { tools, think: chat.think });
  return {
    ...fromRuns(
      tokenizeRuns(ctx, text + prefill, (tokens) => withBos(ctx.model, tokens)),
      t.kind === "jinja" && features.turnEnd ? [features.turnEnd] : [],
    ),
    ...(output ? { output } : {}),
  };
}

/** A prompt from its runs of tokens: one run = a text prompt; more = the runs around images. */
function fromRuns(runs: Token[][], stopStrings: string[]): BuiltPrompt {
  return runs.length === 1
    ? { tokens: runs[0]!, stopStrings }
    : { tokens: [], stopStrings, withImages: { segments: runs, images: [] } };
}

/** Tokenizes text (control tokens parsed) into runs split at ctx.splitAt; `first` adjusts the first run (BOS). */
function tokenizeRuns(ctx: TokenizeContext, text: string, first: (tokens: Token[]) => Token[]): Token[][] {
  const parts = ctx.splitAt === undefined ? [text] : text.split(ctx.splitAt);
  return parts.map((part, i) => {
    const tokens = part === "" ? [] : ctx.model.tokenize(part, true);
    return i === 0 ? first(tokens) : tokens;
  });
}

/** An earlier exchange's tokens, then the prompt (without a second BOS). Ids outside the vocabulary: BAD_REQUEST. */
function afterContext(ctx: TokenizeContext, context: number[], built: BuiltPrompt): BuiltPrompt {
  const bad = context.find((t) => !Number.isInteger(t) || t < 0 || t >= ctx.vocabSize);
  if (bad !== undefined)
    throw new AppError(
      "BAD_REQUEST",
      `invalid context: token id ${bad} is not in the model's vocabulary (0 to ${ctx.vocabSize - 1})`,
      { param: "context" },
    );
  const bos = ctx.model.tokens.bos;
  const withContext = (tokens: Token[]) => [
    ...(context as Token[]),
    ...(bos !== null && tokens[0] === bos ? tokens.slice(1) : tokens),
  ];
  if (built.withImages) {
    const [first, ...rest] = built.withImages.segments;
    return { ...built, withImages: { ...built.withImages, segments: [withContext(first!), ...rest] } };
  }
  return { tokens: withContext(built.tokens), stopStrings: built.stopStrings };
}

function formatPrompt(
  ctx: TokenizeContext,
  input: Extract<PromptInput, { kind: "prompt" }>,
  think: ThinkSetting | undefined,
): BuiltPrompt {
  if (input.raw)
    return fromRuns(
      tokenizeRuns(ctx, input.prompt, (t) => withBos(ctx.model, t)),
      [],
    );
  const history = withDefaultSystem(
    [
      ...(input.system !== undefined ? [{ role: "system" as const, content: input.system }] : []),
      { role: "user", content: input.prompt },
    ],
    ctx.spec.system,
  );
  return renderConversation(ctx, history, chatTemplate(ctx, input.template), { think });
}

/** The history with its system messages put in front of the first user message's text (undefined: none to move). */
export function systemIntoFirstUser(history: ChatMessage[]): ChatMessage[] | undefined {
  const system = history.filter((m) => m.role === "system").map((m) => m.content);
  const first = history.findIndex((m) => m.role === "user");
  if (system.length === 0 || first < 0) return undefined;
  return history
    .map((m, i) => (i === first ? { ...m, content: `${system.join("\n\n")}\n\n${m.content}` } : m))
    .filter((m) => m.role !== "system");
}

/** The model's SYSTEM applies when the conversation has no system message of its own. */
export function withDefaultSystem(history: ChatMessage[], system: string | undefined): ChatMessage[] {
  if (system === undefined || system === "" || history.some((m) => m.role === "system")) return history;
  return [{ role: "system", content: system }, ...history];
}

function fromChatWrapper(ctx: TokenizeContext, history: ChatMessage[]): BuiltPrompt {
  const chatHistory: ChatHistoryItem[] = history.map(toHistoryItem);
  // The last item is the (empty) model turn to be completed.
  chatHistory.push({ type: "model", response: [] });
  const state = ctx.chatWrapper.generateContextState({ chatHistory });
  const stopStrings = state.stopGenerationTriggers
    .filter((t) => t.values.every((v) => typeof v === "string"))
    // The Jinja wrapper ends a turn at "<|im_end|>\n" (the template's text after the marker); the marker alone ends it.
    .map((t) => t.values.join("").trimEnd())
    .filter((s) => s.length > 0);
  const runs = splitText(state.contextText, ctx.splitAt).map((part) => part.tokenize(ctx.model.tokenizer));
  runs[0] = bosAsLlamaCpp(ctx, runs[0]!);
  return fromRuns(runs, stopStrings);
}

/** The rendered text split at `at` in its plain-text values (special tokens never hold it). */
function splitText(text: LlamaText, at: string | undefined): LlamaText[] {
  if (at === undefined) return [text];
  const parts: LlamaTextValue[][] = [[]];
  for (const value of text.values) {
    if (typeof value !== "string") {
      parts.at(-1)!.push(value);
      continue;
    }
    value.split(at).forEach((piece, i) => {
      if (i > 0) parts.push([]);
      if (piece !== "") parts.at(-1)!.push(piece);
    });
  }
  return parts.map((values) => LlamaText(values));
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
