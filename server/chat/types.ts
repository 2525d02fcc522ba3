// The chat data every template dialect renders and every output parser produces: messages with tool calls and
// thinking, function tools, and how a request wants tools and thinking used. Plain data, shared by the engine (which
// renders and parses) and the store (which asks a template what it can do).

/** A tool call as a conversation holds it: the arguments as an object (a client's JSON text is parsed first). */
export interface ToolCall {
  /** The call's id (OpenAI's `tool_calls[].id`); Ollama's calls may have none. */
  id?: string;
  name: string;
  arguments: Record<string, unknown>;
}

export interface ChatMessage {
  /** system, user, assistant, tool, or any other role a template knows (passed to it as it is, as Ollama does). */
  role: string;
  content: string;
  /** Raw image bytes (vision models only). */
  images?: Uint8Array[];
  /** Each image's field in the caller's request, for errors (absent: Ollama's `messages.<i>.images.<j>`). */
  imageFields?: string[];
  /** An assistant message's tool calls. */
  toolCalls?: ToolCall[];
  /** A tool message: the tool that answered (Ollama's `tool_name`), the call it answers (OpenAI's `tool_call_id`). */
  toolName?: string;
  toolCallId?: string;
  /** An assistant message's thinking, sent back. */
  thinking?: string;
}

/** A function the model may call: OpenAI's and Ollama's `{type: "function", function: {…}}`, unwrapped. */
export interface FunctionTool {
  name: string;
  description?: string;
  /** A JSON schema of an object: what the arguments must match. */
  parameters?: Record<string, unknown>;
}

/** Whether the model may call a tool ("auto"), must call one ("required"), or must call the one named. */
export type ToolChoice = "auto" | "required" | { name: string };

/** The tools of a request ("none" leaves them out: the model gets none). */
export interface ToolsRequest {
  tools: FunctionTool[];
  choice: ToolChoice;
  /** More than one call in an answer. */
  parallel: boolean;
}

/** Ollama's levels; "max" goes to templates that name it, to the others as "high" (jinja.ts). */
export type ThinkLevel = "low" | "medium" | "high" | "max";

/** `think`: on, off, or a level; undefined: the template's default. */
export type ThinkSetting = boolean | ThinkLevel;
