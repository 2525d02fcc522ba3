// What a chat template can do, found by rendering it (as Ollama and llama.cpp find out): it renders tools when a tool
// given to it shows up in the prompt; how the model writes a call is read off the template's own rendering of an
// assistant message with a call (the marker before the JSON, the closing marker, the arguments' key, an array of calls,
// an id); it has a thinking section when it holds a known pair of thinking tags. Pure; memoized per template text.
import { renderChat, type ChatTemplate } from "./render.ts";
import type { ChatMessage } from "./types.ts";

/** How a model of this template writes tool calls. */
export interface ToolCallFormat {
  /** The text that opens a call (or the array of calls); "" = a JSON object at the start of the answer. */
  start: string;
  /** Other texts that open a call the same way (Llama 3.1's <|python_tag|>). */
  alsoStart: string[];
  /** The text that closes a call, "" for none. */
  end: string;
  /** The calls are a JSON array after `start` (Mistral's [TOOL_CALLS][…]). */
  array: boolean;
  /** The keys of a call object: the function's name, its arguments, and whether it carries an id. */
  nameKey: string;
  argumentsKey: string;
  idKey: boolean;
}

export interface ThinkingTags {
  open: string;
  close: string;
  /** The template can turn thinking off (Qwen3's enable_thinking, Ollama's .Think). */
  switchable: boolean;
}

export interface TemplateFeatures {
  /** The template renders tools given to it. */
  tools: boolean;
  /** How calls are written (set when `tools`). */
  toolCalls?: ToolCallFormat;
  thinking?: ThinkingTags;
  /** The text that ends an assistant's turn (ChatML's <|im_end|>): a stop string besides the end-of-turn tokens. */
  turnEnd?: string;
}

/** The thinking tags of the families that have them. */
const THINKING_TAGS: ReadonlyArray<[string, string]> = [
  ["<think>", "</think>"],
  ["<|START_THINKING|>", "<|END_THINKING|>"],
  ["[THINK]", "[/THINK]"],
  ["<seed:think>", "</seed:think>"],
];

/** A call in the JSON of Hermes and Qwen: what a template that shows no call of its own gets parsed as. */
export const DEFAULT_TOOL_CALL_FORMAT: ToolCallFormat = {
  start: "",
  alsoStart: [],
  end: "",
  array: false,
  nameKey: "name",
  argumentsKey: "arguments",
  idKey: false,
};

const PROBE_TOOL = "gantry_probe_tool";
const PROBE_ARG = "gantry_probe_arg";
const PROBE_ID = "gAntRy123";
const PROBE_USER: ChatMessage = { role: "user", content: "gantry probe" };

const memo = new Map<string, TemplateFeatures>();
const MAX_MEMO = 64;

export function templateFeatures(t: ChatTemplate): TemplateFeatures {
  const key = `${t.kind}\u0000${t.text}`;
  let f = memo.get(key);
  if (!f) {
    f = findFeatures(t);
    if (memo.size >= MAX_MEMO) memo.delete(memo.keys().next().value!);
    memo.set(key, f);
  }
  return f;
}

function findFeatures(t: ChatTemplate): TemplateFeatures {
  const thinking = thinkingTags(t);
  const tools = rendersTools(t);
  const turnEnd = turnEndOf(t);
  return {
    tools,
    ...(tools ? { toolCalls: toolCallFormat(t, thinking) ?? DEFAULT_TOOL_CALL_FORMAT } : {}),
    ...(thinking ? { thinking } : {}),
    ...(turnEnd ? { turnEnd } : {}),
  };
}

/** What the template writes right after an assistant's answer, up to the first whitespace. */
function turnEndOf(t: ChatTemplate): string | undefined {
  const answer = "gantry probe answer";
  const out = tryRender(() =>
    renderChat(t, {
      messages: [PROBE_USER, { role: "assistant", content: answer }],
      addGenerationPrompt: false,
    }),
  );
  const at = out?.lastIndexOf(answer) ?? -1;
  if (at < 0) return undefined;
  return /^\S*/.exec(out!.slice(at + answer.length))![0] || undefined;
}

function thinkingTags(t: ChatTemplate): ThinkingTags | undefined {
  const pair = THINKING_TAGS.find(([open, close]) => t.text.includes(open) && t.text.includes(close));
  if (!pair) return undefined;
  const switchable = t.kind === "jinja" ? t.text.includes("enable_thinking") : /\.(Think|IsThinkSet)\b/.test(t.text);
  return { open: pair[0], close: pair[1], switchable };
}

const tryRender = (fn: () => string): string | undefined => {
  try {
    return fn();
  } catch {
    return undefined;
  }
};

const PROBE_TOOLS = [{ name: PROBE_TOOL, description: "probe", parameters: { type: "object", properties: {} } }];

function rendersTools(t: ChatTemplate): boolean {
  const out = tryRender(() => renderChat(t, { messages: [PROBE_USER], tools: PROBE_TOOLS, addGenerationPrompt: true }));
  return out?.includes(PROBE_TOOL) ?? false;
}

/** The assistant's turn with one call, as the template writes it (the text after the prompt that opens the turn). */
function renderedCall(t: ChatTemplate): string | undefined {
  const call: ChatMessage = {
    role: "assistant",
    content: "",
    toolCalls: [{ id: PROBE_ID, name: PROBE_TOOL, arguments: { [PROBE_ARG]: 1 } }],
  };
  // With the tools given, as some templates (Hermes' tool_use) always iterate them.
  const tools = PROBE_TOOLS;
  const opened = tryRender(() => renderChat(t, { messages: [PROBE_USER], tools, addGenerationPrompt: true }));
  const withCall = tryRender(() => renderChat(t, { messages: [PROBE_USER, call], tools, addGenerationPrompt: false }));
  if (opened === undefined || withCall === undefined) return undefined;
  let i = 0;
  while (i < opened.length && opened[i] === withCall[i]) i++;
  return withCall.slice(i);
}

function toolCallFormat(t: ChatTemplate, thinking: ThinkingTags | undefined): ToolCallFormat | undefined {
  let turn = renderedCall(t);
  if (turn === undefined) return undefined;
  // A thinking template may open the turn with an (empty) thinking section.
  if (thinking && turn.trimStart().startsWith(thinking.open)) {
    const close = turn.indexOf(thinking.close);
    if (close >= 0) turn = turn.slice(close + thinking.close.length);
  }
  const nameAt = turn.indexOf(`"${PROBE_TOOL}"`);
  if (nameAt < 0) return undefined;
  const objectAt = turn.lastIndexOf("{", nameAt);
  const nameKey = /^\{\s*"([^"]+)"\s*:\s*$/.exec(turn.slice(objectAt, nameAt))?.[1];
  if (objectAt < 0 || nameKey === undefined) return undefined;
  const objectEnd = jsonValueEnd(turn, objectAt);
  if (objectEnd < 0) return undefined;
  let call: Record<string, unknown>;
  try {
    call = JSON.parse(turn.slice(objectAt, objectEnd)) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const argumentsKey = Object.keys(call).find((k) => {
    const v = call[k];
    return typeof v === "object" && v !== null && PROBE_ARG in v;
  });
  if (argumentsKey === undefined) return undefined;
  const before = turn.slice(0, objectAt).trimEnd();
  const array = before.endsWith("[");
  const start = (array ? before.slice(0, -1) : before).trim();
  let after = turn.slice(objectEnd).trimStart();
  if (array) after = after.startsWith("]") ? after.slice(1).trimStart() : after;
  const end = /^(<\/[^<>\s]+>|<\|\/[^|\s]+\|>|\[\/[A-Z_]+\])/.exec(after)?.[1] ?? "";
  return {
    start,
    alsoStart: start === "" && t.text.includes("<|python_tag|>") ? ["<|python_tag|>"] : [],
    end,
    array,
    nameKey,
    argumentsKey,
    idKey: call.id === PROBE_ID,
  };
}

/** Where the JSON object or array opening at `from` ends (the index after it), or -1 when it does not. */
export function jsonValueEnd(text: string, from: number): number {
  let depth = 0;
  let inString = false;
  for (let i = from; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === "{" || c === "[") depth++;
    else if (c === "}" || c === "]") {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}
