// Reads the chat completion objects of /v1/chat/completions (OpenAI's wire format: `content`, `reasoning_content`,
// `tool_calls`, `finish_reason`, `usage`) for the APIs served on them (/v1/responses, /v1/messages): a streamed chunk
// as the pieces it adds, a whole answer as its parts; PieceStream is what their event streams share.
import type { AppError } from "../common/errors.ts";
import type { AdaptedStream } from "./respond.ts";

/** A streamed piece of an answer, in the order the model wrote it. */
export type ChatPiece =
  | { kind: "thinking"; text: string }
  | { kind: "text"; text: string }
  /** A tool call's first piece has its id and name; the arguments (a JSON text) come in fragments. */
  | { kind: "tool"; index: number; id?: string; name?: string; arguments: string };

export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  /** Of prompt_tokens, those found in the sequence's KV cache. */
  prompt_tokens_details?: { cached_tokens?: number };
}

/** What a chat completion ended with: "stop", "length", "tool_calls". */
export type FinishReason = string;

export interface ChatToolCall {
  id: string;
  name: string;
  /** The arguments as a JSON text. */
  arguments: string;
}

export interface ChatAnswer {
  thinking: string;
  text: string;
  toolCalls: ChatToolCall[];
  finishReason: FinishReason;
  usage: ChatUsage;
}

interface WireToolCall {
  index?: number;
  id?: string;
  function?: { name?: string; arguments?: string };
}

interface WireChoice {
  delta?: { content?: string | null; reasoning_content?: string | null; tool_calls?: WireToolCall[] };
  message?: { content?: string | null; reasoning_content?: string | null; tool_calls?: WireToolCall[] };
  finish_reason?: string | null;
}

interface WireCompletion {
  choices?: WireChoice[];
  usage?: ChatUsage;
}

/** A chunk's pieces (thinking, then text, then tool calls, as a chunk carries them), its finish reason and usage. */
export function readChunk(chunk: object): { pieces: ChatPiece[]; finishReason?: FinishReason; usage?: ChatUsage } {
  const c = chunk as WireCompletion;
  const choice = c.choices?.[0];
  const pieces: ChatPiece[] = [];
  const d = choice?.delta;
  if (d?.reasoning_content) pieces.push({ kind: "thinking", text: d.reasoning_content });
  if (d?.content) pieces.push({ kind: "text", text: d.content });
  for (const [i, t] of (d?.tool_calls ?? []).entries())
    pieces.push({
      kind: "tool",
      index: t.index ?? i,
      ...(t.id !== undefined ? { id: t.id } : {}),
      ...(t.function?.name !== undefined ? { name: t.function.name } : {}),
      arguments: t.function?.arguments ?? "",
    });
  return {
    pieces,
    ...(choice?.finish_reason ? { finishReason: choice.finish_reason } : {}),
    ...(c.usage ? { usage: c.usage } : {}),
  };
}

/** A whole chat completion's parts. */
export function readAnswer(answer: object): ChatAnswer {
  const c = answer as WireCompletion;
  const choice = c.choices?.[0];
  const m = choice?.message;
  return {
    thinking: m?.reasoning_content ?? "",
    text: m?.content ?? "",
    toolCalls: (m?.tool_calls ?? []).map((t) => ({
      id: t.id ?? "",
      name: t.function?.name ?? "",
      arguments: t.function?.arguments ?? "",
    })),
    finishReason: choice?.finish_reason ?? "stop",
    usage: c.usage ?? { prompt_tokens: 0, completion_tokens: 0 },
  };
}

/**
 * An API's event stream made from a chat completion's chunks: each piece goes to `piece` after `start`; the finish
 * reason and usage are kept for `end`, which writes nothing more after `fail`.
 */
export abstract class PieceStream implements AdaptedStream {
  protected finish: FinishReason = "stop";
  protected usage: ChatUsage | undefined;
  protected failed = false;

  /** Writes the stream's opening events (once). */
  protected abstract start(): void;
  protected abstract piece(p: ChatPiece): void;
  abstract fail(e: AppError): void;
  abstract end(): void;

  write(chunk: object): void {
    this.start();
    const c = readChunk(chunk);
    for (const p of c.pieces) this.piece(p);
    if (c.finishReason) this.finish = c.finishReason;
    if (c.usage) this.usage = c.usage;
  }
}
