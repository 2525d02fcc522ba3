// A generation's answer as the routes see it: the engine's output events (content, thinking, tool calls) and what
// they add up to, for the whole-answer responses and the last streamed objects.
import type { GenerationEvent, OutputTokenLogprob, ToolCall } from "../engine/types.ts";

/** Every event of a generation but the last (its stats). */
export type OutputEvent = Exclude<GenerationEvent, { type: "done" }>;

export interface AnsweredCall {
  call: ToolCall;
  /** The arguments as the model wrote them (OpenAI's `arguments` string). */
  argumentsText: string;
  /** Cut short by the token limit before it was whole. */
  cut?: boolean;
}

export interface Answer {
  content: string;
  thinking: string;
  toolCalls: AnsweredCall[];
  /** The output tokens' log probabilities, when they were asked for. */
  logprobs: OutputTokenLogprob[] | undefined;
}

export const emptyAnswer = (logprobs: boolean): Answer => ({
  content: "",
  thinking: "",
  toolCalls: [],
  logprobs: logprobs ? [] : undefined,
});

/** Adds an event to the answer. */
export function addToAnswer(a: Answer, ev: OutputEvent): void {
  if (ev.type === "text") {
    a.content += ev.text;
    if (ev.logprobs) a.logprobs?.push(...ev.logprobs);
  } else if (ev.type === "thinking") a.thinking += ev.text;
  else if (ev.type === "tool_call")
    a.toolCalls.push({ call: ev.call, argumentsText: ev.argumentsText, ...(ev.cut ? { cut: true } : {}) });
}
