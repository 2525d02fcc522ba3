// A Responses request as the chat completion it is served on, as Ollama's middleware turns it into its chat request:
// instructions → a system message, a string input → a user message, message items → messages (input_image →
// image_url parts), function_call items → the assistant's tool_calls (consecutive assistant items make one assistant
// turn), function_call_output items → tool messages, reasoning items → the next assistant turn's reasoning_content;
// tools, tool_choice, text.format, reasoning.effort and the sampling fields → their chat names. A function_call_output
// must answer a function_call before it. Pure; the FieldNames tell the chat completion's errors in the caller's words.
import { AppError } from "../../common/errors.ts";
import { FieldNames, type ChatTranslation } from "../field-names.ts";
import type { ResponsesContent, ResponsesItem, ResponsesRequest } from "./responses-schemas.ts";

type ChatPart = { type: "text"; text: string } | { type: "image_url"; image_url: { url: string; detail?: string } };
interface ChatMessage {
  role: "system" | "developer" | "user" | "assistant" | "tool";
  content: string | ChatPart[];
  tool_call_id?: string;
  tool_calls?: Array<{ id: string; type: "function"; function: { name: string; arguments: string } }>;
  reasoning_content?: string;
}

const bad = (param: string, message: string) => new AppError("BAD_REQUEST", `invalid ${param}: ${message}`, { param });

/** Content parts as chat parts, each recorded under the caller's name. */
function parts(content: ResponsesContent[], at: string, chatAt: string, names: FieldNames): ChatPart[] {
  return content.map((c, j): ChatPart => {
    names.set(`${chatAt}.content.${j}`, `${at}.${j}`);
    if (c.type === "input_image")
      return { type: "image_url", image_url: { url: c.image_url, ...(c.detail ? { detail: c.detail } : {}) } };
    return { type: "text", text: c.type === "refusal" ? c.refusal : c.type === "input_file" ? "" : c.text };
  });
}

const textOf = (p: ChatPart[]): string => p.map((x) => (x.type === "text" ? x.text : "")).join("");

/** A reasoning item's text: its reasoning content, else its summary. */
function reasoningText(item: Extract<ResponsesItem, { type: "reasoning" }>): string {
  const content = item.content?.map((c) => c.text).join("") ?? "";
  return content || (item.summary?.map((s) => s.text).join("\n") ?? "");
}

function chatMessages(req: ResponsesRequest, names: FieldNames): ChatMessage[] {
  const out: ChatMessage[] = [];
  const push = (m: ChatMessage, at: string) => {
    names.set(`messages.${out.length}`, at);
    out.push(m);
  };
  if (req.instructions) push({ role: "system", content: req.instructions }, "instructions");
  if (typeof req.input === "string") {
    push({ role: "user", content: req.input }, "input");
    return out;
  }
  const calls = new Set<string>();
  let reasoning = "";
  /** The assistant turn the next assistant items join: the last message, while it is the assistant's. */
  const assistantTurn = (at: string): ChatMessage => {
    const last = out.at(-1);
    if (last?.role === "assistant") return last;
    push({ role: "assistant", content: "" }, at);
    return out.at(-1)!;
  };
  const withReasoning = (m: ChatMessage) => {
    if (reasoning) m.reasoning_content = (m.reasoning_content ?? "") + reasoning;
    reasoning = "";
  };
  for (const [i, item] of req.input.entries()) {
    const at = `input.${i}`;
    const k = `messages.${out.length}`;
    switch (item.type) {
      case "reasoning":
        reasoning += reasoningText(item);
        break;
      case "message": {
        const content =
          typeof item.content === "string" ? item.content : parts(item.content, `${at}.content`, k, names);
        if (item.role !== "assistant") {
          push({ role: item.role, content }, at);
          break;
        }
        const turn = assistantTurn(at);
        turn.content = (turn.content as string) + (typeof content === "string" ? content : textOf(content));
        withReasoning(turn);
        break;
      }
      case "function_call": {
        if (calls.has(item.call_id))
          throw bad(`${at}.call_id`, `call_id "${item.call_id}" is used by two function calls`);
        calls.add(item.call_id);
        const turn = assistantTurn(at);
        const t = `messages.${out.indexOf(turn)}.tool_calls.${turn.tool_calls?.length ?? 0}`;
        names
          .set(t, at)
          .set(`${t}.id`, `${at}.call_id`)
          .set(`${t}.function.name`, `${at}.name`)
          .set(`${t}.function.arguments`, `${at}.arguments`)
          .set(`${t}.function`, at);
        (turn.tool_calls ??= []).push({
          id: item.call_id,
          type: "function",
          function: { name: item.name, arguments: item.arguments },
        });
        withReasoning(turn);
        break;
      }
      case "function_call_output": {
        if (!calls.has(item.call_id))
          throw bad(
            `${at}.call_id`,
            `no function_call with call_id "${item.call_id}" before this function_call_output (Gantry is stateless: send the function_call item too)`,
          );
        const content = typeof item.output === "string" ? item.output : parts(item.output, `${at}.output`, k, names);
        names.set(`${k}.tool_call_id`, `${at}.call_id`);
        push({ role: "tool", tool_call_id: item.call_id, content }, at);
        break;
      }
      case "item_reference":
        break; // refused by the schema
    }
  }
  return out;
}

function chatFormat(req: ResponsesRequest): unknown {
  const f = req.text?.format;
  if (!f || f.type === "text") return undefined;
  if (f.type === "json_object") return { type: "json_object" };
  const { type: _, ...json_schema } = f;
  return { type: "json_schema", json_schema: { name: "response", ...json_schema } };
}

export function responsesToChat(req: ResponsesRequest): ChatTranslation {
  const names = new FieldNames()
    .set("max_completion_tokens", "max_output_tokens")
    .set("reasoning_effort", "reasoning.effort")
    .set("response_format.json_schema.schema", "text.format.schema")
    .set("response_format", "text.format")
    .set("tool_choice.function.name", "tool_choice.name")
    .set("tool_choice.function", "tool_choice");
  const tools = req.tools?.map((t, i) => {
    names.set(`tools.${i}.function`, `tools.${i}`).set(`tools.${i}`, `tools.${i}`);
    const { type: _, ...fn } = t;
    return { type: "function", function: fn };
  });
  const format = chatFormat(req);
  const toolChoice =
    typeof req.tool_choice === "object"
      ? { type: "function", function: { name: req.tool_choice.name } }
      : req.tool_choice;
  const stream = req.stream ?? false;
  return {
    names,
    chat: {
      model: req.model,
      messages: chatMessages(req, names),
      ...(tools ? { tools } : {}),
      ...(toolChoice !== undefined ? { tool_choice: toolChoice } : {}),
      ...(req.parallel_tool_calls !== undefined ? { parallel_tool_calls: req.parallel_tool_calls } : {}),
      ...(req.max_output_tokens !== undefined ? { max_completion_tokens: req.max_output_tokens } : {}),
      ...(req.temperature !== undefined ? { temperature: req.temperature } : {}),
      ...(req.top_p !== undefined ? { top_p: req.top_p } : {}),
      ...(format !== undefined ? { response_format: format } : {}),
      ...(req.reasoning?.effort !== undefined ? { reasoning_effort: req.reasoning.effort } : {}),
      ...(req.user !== undefined ? { user: req.user } : {}),
      // OpenAI's `truncation`: "disabled" (its default) refuses a prompt longer than the context, "auto" cuts it.
      truncate: req.truncation === "auto",
      stream,
      ...(stream ? { stream_options: { include_usage: true } } : {}),
    },
  };
}
