// How a chat answer is read, decided with its prompt: the thinking section the template has (the output starts inside
// it when the prompt opened it), thinking turned off (a section written anyway is dropped), and the request's tool
// calls in the template's format, constrained by their grammar from the first token when a call is required (the
// prompt then ends with the call marker: `prefill`) or from the marker on. Pure.
import type { TemplateFeatures, ToolCallFormat } from "../chat/features.ts";
import type { OutputParserOptions } from "../chat/output-parser.ts";
import type { ThinkSetting, ToolsRequest } from "../chat/types.ts";

export interface OutputPlan {
  parser: OutputParserOptions;
  /** The tool calls' grammar: its format and tools, applied from the first token or once a call begins. */
  tools?: { format: ToolCallFormat; request: ToolsRequest; fromStart: boolean };
}

export function outputPlan(
  features: TemplateFeatures,
  prompt: string,
  chat: { tools?: ToolsRequest | undefined; think?: ThinkSetting | undefined },
): { output: OutputPlan | undefined; prefill: string } {
  const format = chat.tools ? features.toolCalls : undefined;
  const thinking = features.thinking;
  if (!format && !thinking) return { output: undefined, prefill: "" };
  const fromStart = chat.tools !== undefined && chat.tools.choice !== "auto";
  const prefill = format && fromStart ? format.start : "";
  const parser: OutputParserOptions = {
    ...(thinking ? { thinking: { open: thinking.open, close: thinking.close } } : {}),
    startInThinking: thinking !== undefined && prefill === "" && prompt.trimEnd().endsWith(thinking.open),
    dropThinking: chat.think === false,
    ...(format ? { tools: format } : {}),
    startInCall: prefill !== "",
  };
  return {
    output: { parser, ...(format && chat.tools ? { tools: { format, request: chat.tools, fromStart } } : {}) },
    prefill,
  };
}
