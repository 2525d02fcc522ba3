// Chat completion answers as Responses API answers: the response object (output items: reasoning, message,
// function_call; usage), or its stream of typed events as the `openai` SDK's responses.create({stream: true}) and
// responses.stream() read them: response.created, response.in_progress, then per item response.output_item.added,
// its content part or arguments (response.content_part.added, response.output_text.delta / .done,
// response.reasoning_text.delta / .done, response.function_call_arguments.delta / .done, response.content_part.done),
// response.output_item.done, and response.completed (response.incomplete when max_output_tokens cut it); an error after
// the headers is an `error` event. Every event carries its sequence_number.
import { randomBytes } from "node:crypto";
import type { Response } from "express";
import { openaiErrorBody, type AppError } from "../../common/errors.ts";
import { PieceStream, readAnswer, type ChatPiece, type ChatUsage, type FinishReason } from "../chat-answer.ts";
import type { AnswerAdapter } from "../respond.ts";
import { startNamedSse, type NamedEventStream } from "../streams.ts";
import type { ResponsesRequest } from "./responses-schemas.ts";

const itemId = (prefix: string): string => `${prefix}_${randomBytes(12).toString("hex")}`;

/** The request's settings a response object repeats, and its id and time. */
export interface ResponseHead {
  id: string;
  created_at: number;
  request: ResponsesRequest;
}

function responseObject(
  head: ResponseHead,
  status: "in_progress" | "completed" | "incomplete",
  output: object[],
  usage: ChatUsage | undefined,
): object {
  const r = head.request;
  return {
    id: head.id,
    object: "response",
    created_at: head.created_at,
    status,
    completed_at: status === "in_progress" ? null : Math.floor(Date.now() / 1000),
    error: null,
    incomplete_details: status === "incomplete" ? { reason: "max_output_tokens" } : null,
    instructions: r.instructions ?? null,
    max_output_tokens: r.max_output_tokens ?? null,
    model: r.model,
    output,
    parallel_tool_calls: r.parallel_tool_calls ?? true,
    previous_response_id: null,
    reasoning: { effort: r.reasoning?.effort ?? null, summary: r.reasoning?.summary ?? null },
    store: false,
    temperature: r.temperature ?? 1,
    text: { format: r.text?.format ?? { type: "text" } },
    tool_choice: r.tool_choice ?? "auto",
    tools: r.tools ?? [],
    top_p: r.top_p ?? 1,
    truncation: r.truncation ?? "disabled",
    usage: usage
      ? {
          input_tokens: usage.prompt_tokens,
          input_tokens_details: { cached_tokens: usage.prompt_tokens_details?.cached_tokens ?? 0 },
          output_tokens: usage.completion_tokens,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: usage.prompt_tokens + usage.completion_tokens,
        }
      : null,
    user: r.user ?? null,
    metadata: r.metadata ?? {},
  };
}

const statusOf = (finish: FinishReason) => (finish === "length" ? "incomplete" : "completed");

const textPart = (text: string) => ({ type: "output_text", text, annotations: [], logprobs: [] });
const messageItem = (id: string, status: string, text: string | undefined) => ({
  id,
  type: "message",
  status,
  role: "assistant",
  content: text === undefined ? [] : [textPart(text)],
});
const reasoningItem = (id: string, text: string | undefined) => ({
  id,
  type: "reasoning",
  summary: [],
  content: text === undefined ? [] : [{ type: "reasoning_text", text }],
});
const callItem = (id: string, status: string, callId: string, name: string, args: string) => ({
  id,
  type: "function_call",
  status,
  call_id: callId,
  name,
  arguments: args,
});

export function responsesAdapter(head: ResponseHead): AnswerAdapter {
  return {
    full(answer) {
      const a = readAnswer(answer);
      const status = statusOf(a.finishReason);
      const output: object[] = [];
      if (a.thinking) output.push(reasoningItem(itemId("rs"), a.thinking));
      if (a.text || a.toolCalls.length === 0) output.push(messageItem(itemId("msg"), status, a.text));
      for (const t of a.toolCalls) output.push(callItem(itemId("fc"), "completed", t.id, t.name, t.arguments));
      return responseObject(head, status, output, a.usage);
    },
    stream: (res) => new ResponseEvents(res, head),
  };
}

/** The item being streamed: its output index, id and text (or arguments) so far. */
type Open =
  | { kind: "thinking" | "text"; index: number; id: string; text: string }
  | { kind: "tool"; index: number; id: string; text: string; tool: number; callId: string; name: string };

/** The event stream of one answer: an output item per run of thinking, text, or one tool call. */
class ResponseEvents extends PieceStream {
  private readonly out: NamedEventStream;
  private readonly head: ResponseHead;
  private seq = 0;
  private started = false;
  private readonly done: Array<{ type: string }> = [];
  private open: Open | undefined;

  constructor(res: Response, head: ResponseHead) {
    super();
    this.out = startNamedSse(res);
    this.head = head;
  }

  private event(type: string, fields: object): void {
    this.out.write(type, { type, sequence_number: this.seq++, ...fields });
  }

  protected start(): void {
    if (this.started) return;
    this.started = true;
    this.event("response.created", { response: responseObject(this.head, "in_progress", [], undefined) });
    this.event("response.in_progress", { response: responseObject(this.head, "in_progress", [], undefined) });
  }

  private close(status: "completed" | "incomplete"): void {
    const o = this.open;
    if (!o) return;
    this.open = undefined;
    const at = { item_id: o.id, output_index: o.index };
    let item: { type: string };
    if (o.kind === "tool") {
      this.event("response.function_call_arguments.done", { ...at, name: o.name, arguments: o.text });
      item = callItem(o.id, "completed", o.callId, o.name, o.text);
    } else if (o.kind === "text") {
      this.event("response.output_text.done", { ...at, content_index: 0, text: o.text, logprobs: [] });
      this.event("response.content_part.done", { ...at, content_index: 0, part: textPart(o.text) });
      item = messageItem(o.id, status, o.text);
    } else {
      this.event("response.reasoning_text.done", { ...at, content_index: 0, text: o.text });
      const part = { type: "reasoning_text", text: o.text };
      this.event("response.content_part.done", { ...at, content_index: 0, part });
      item = reasoningItem(o.id, o.text);
    }
    this.event("response.output_item.done", { output_index: o.index, item });
    this.done.push(item);
  }

  private begin(o: Open, item: object, part?: object): void {
    this.close("completed");
    this.open = o;
    this.event("response.output_item.added", { output_index: o.index, item });
    if (part)
      this.event("response.content_part.added", { item_id: o.id, output_index: o.index, content_index: 0, part });
  }

  protected piece(p: ChatPiece): void {
    const index = this.done.length + (this.open ? 1 : 0);
    if (p.kind === "tool") {
      if (this.open?.kind !== "tool" || this.open.tool !== p.index) {
        const [id, callId, name] = [itemId("fc"), p.id ?? "", p.name ?? ""];
        this.begin(
          { kind: "tool", index, id, text: "", tool: p.index, callId, name },
          callItem(id, "in_progress", callId, name, ""),
        );
      }
      this.open!.text += p.arguments;
      if (p.arguments)
        this.event("response.function_call_arguments.delta", {
          item_id: this.open!.id,
          output_index: this.open!.index,
          delta: p.arguments,
        });
      return;
    }
    if (this.open?.kind !== p.kind) {
      const id = itemId(p.kind === "text" ? "msg" : "rs");
      if (p.kind === "text")
        this.begin({ kind: "text", index, id, text: "" }, messageItem(id, "in_progress", undefined), textPart(""));
      else
        this.begin({ kind: "thinking", index, id, text: "" }, reasoningItem(id, undefined), {
          type: "reasoning_text",
          text: "",
        });
    }
    const o = this.open!;
    o.text += p.text;
    const at = { item_id: o.id, output_index: o.index, content_index: 0, delta: p.text };
    if (p.kind === "text") this.event("response.output_text.delta", { ...at, logprobs: [] });
    else this.event("response.reasoning_text.delta", at);
  }

  fail(e: AppError): void {
    this.start();
    const { message, code, param } = openaiErrorBody(e).error;
    this.event("error", { code, message, param });
    this.failed = true;
  }

  end(): void {
    if (!this.failed) {
      this.start();
      const status = statusOf(this.finish);
      this.close(status);
      // An answer without text or calls still has its (empty) message, as the whole answer does.
      if (!this.done.some((i) => i.type !== "reasoning")) {
        const id = itemId("msg");
        const o: Open = { kind: "text", index: this.done.length, id, text: "" };
        this.begin(o, messageItem(id, "in_progress", undefined), textPart(""));
        this.close(status);
      }
      const type = status === "incomplete" ? "response.incomplete" : "response.completed";
      this.event(type, { response: responseObject(this.head, status, this.done, this.usage) });
    }
    this.out.end();
  }
}
