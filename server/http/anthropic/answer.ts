// Chat completion answers as Anthropic Messages answers: the whole message (content blocks: thinking, text, tool_use;
// stop_reason; usage), or its stream of named events as the Anthropic SDKs read them: message_start, ping, then per
// block content_block_start, content_block_delta (text_delta, thinking_delta, input_json_delta), content_block_stop,
// then message_delta (stop_reason, usage) and message_stop; an error after the headers is an `error` event.
import type { Response } from "express";
import { anthropicErrorBody, type AppError } from "../../common/errors.ts";
import { PieceStream, readAnswer, type ChatPiece, type ChatUsage, type FinishReason } from "../chat-answer.ts";
import type { AnswerAdapter } from "../respond.ts";
import { startNamedSse } from "../streams.ts";

/** Anthropic's stop_reason for a chat finish_reason. */
export function stopReason(finish: FinishReason): "end_turn" | "max_tokens" | "tool_use" {
  if (finish === "length") return "max_tokens";
  if (finish === "tool_calls") return "tool_use";
  return "end_turn";
}

/**
 * Anthropic's usage: `input_tokens` are the prompt's tokens evaluated now, `cache_read_input_tokens` those found in the
 * sequence's KV cache (their sum is the prompt, as Anthropic's clients add them up).
 */
function usageOf(u: ChatUsage) {
  const cached = Math.min(u.prompt_tokens_details?.cached_tokens ?? 0, u.prompt_tokens);
  return {
    input_tokens: u.prompt_tokens - cached,
    output_tokens: u.completion_tokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: cached,
  };
}

/** A tool call's arguments as the tool_use block's input object ({} when they are not a JSON object). */
function inputOf(args: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(args);
    return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

export function messagesAdapter(id: string, model: string): AnswerAdapter {
  return {
    full(answer) {
      const a = readAnswer(answer);
      const content: object[] = [];
      if (a.thinking) content.push({ type: "thinking", thinking: a.thinking, signature: "" });
      if (a.text || a.toolCalls.length === 0) content.push({ type: "text", text: a.text });
      for (const t of a.toolCalls)
        content.push({ type: "tool_use", id: t.id, name: t.name, input: inputOf(t.arguments) });
      return {
        id,
        type: "message",
        role: "assistant",
        model,
        content,
        stop_reason: stopReason(a.finishReason),
        stop_sequence: null,
        usage: usageOf(a.usage),
      };
    },
    stream: (res) => new MessageEvents(res, id, model),
  };
}

type Block = { kind: "thinking" | "text" } | { kind: "tool"; index: number };

/** The event stream of one answer: a content block per run of thinking, text, or one tool call's arguments. */
class MessageEvents extends PieceStream {
  private readonly out: ReturnType<typeof startNamedSse>;
  private started = false;
  private block: Block | undefined;
  private blocks = 0;

  private readonly id: string;
  private readonly model: string;

  constructor(res: Response, id: string, model: string) {
    super();
    this.out = startNamedSse(res);
    this.id = id;
    this.model = model;
  }

  protected start(): void {
    if (this.started) return;
    this.started = true;
    const message = {
      id: this.id,
      type: "message",
      role: "assistant",
      model: this.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 0, output_tokens: 0 },
    };
    this.out.write("message_start", { type: "message_start", message });
    this.out.write("ping", { type: "ping" });
  }

  private close(): void {
    if (!this.block) return;
    this.out.write("content_block_stop", { type: "content_block_stop", index: this.blocks - 1 });
    this.block = undefined;
  }

  private open(block: Block, content_block: object): void {
    this.close();
    this.block = block;
    this.out.write("content_block_start", { type: "content_block_start", index: this.blocks++, content_block });
  }

  private delta(delta: object): void {
    this.out.write("content_block_delta", { type: "content_block_delta", index: this.blocks - 1, delta });
  }

  protected piece(p: ChatPiece): void {
    if (p.kind === "tool") {
      if (this.block?.kind !== "tool" || this.block.index !== p.index)
        this.open(
          { kind: "tool", index: p.index },
          { type: "tool_use", id: p.id ?? "", name: p.name ?? "", input: {} },
        );
      if (p.arguments) this.delta({ type: "input_json_delta", partial_json: p.arguments });
      return;
    }
    if (this.block?.kind !== p.kind)
      this.open(
        { kind: p.kind },
        p.kind === "text" ? { type: "text", text: "" } : { type: "thinking", thinking: "", signature: "" },
      );
    this.delta(p.kind === "text" ? { type: "text_delta", text: p.text } : { type: "thinking_delta", thinking: p.text });
  }

  fail(e: AppError): void {
    this.start();
    this.out.write("error", anthropicErrorBody(e));
    this.failed = true;
  }

  end(): void {
    if (this.started && !this.failed) {
      this.close();
      const delta = { stop_reason: stopReason(this.finish), stop_sequence: null };
      const usage = usageOf(this.usage ?? { prompt_tokens: 0, completion_tokens: 0 });
      this.out.write("message_delta", { type: "message_delta", delta, usage });
      this.out.write("message_stop", { type: "message_stop" });
    }
    this.out.end();
  }
}
