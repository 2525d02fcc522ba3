// The data an Ollama-style Go template (a Modelfile TEMPLATE) renders, as Ollama builds it: .System, .Prompt,
// .Messages (.Role, .Content, .Thinking, .ToolCalls[].Function.Name/.Arguments, .ToolName), .Tools
// (.Type, .Function.Name/.Description/.Parameters{.Type, .Required, .Properties}), .Think, .ThinkLevel, .IsThinkSet.
// Templates reach fields by Go's names and print whole values with `json`, which writes the wire names: each value
// here has Go's field names and a toJSON that gives its wire form.
import type { ChatMessage, FunctionTool, ThinkSetting } from "./types.ts";

export interface GoTemplateData {
  System: string;
  Prompt: string;
  Response: string;
  Messages: Array<Record<string, unknown>>;
  Tools: Array<Record<string, unknown>>;
  Think: boolean;
  ThinkLevel: string;
  IsThinkSet: boolean;
}

/** `fields` (Go's names) whose `json` is `wire`. */
function goValue(fields: Record<string, unknown>, wire: unknown): Record<string, unknown> {
  Object.defineProperty(fields, "toJSON", { value: () => wire, enumerable: false });
  return fields;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** A JSON schema property as Ollama's ToolProperty: .Type, .Description, .Enum, .Items, .Properties. */
function goProperty(p: unknown): unknown {
  if (!isObject(p)) return p;
  return goValue(
    {
      Type: p.type,
      Description: p.description,
      Enum: p.enum,
      Items: p.items === undefined ? undefined : goProperty(p.items),
      Properties: isObject(p.properties)
        ? Object.fromEntries(Object.entries(p.properties).map(([k, v]) => [k, goProperty(v)]))
        : undefined,
      Required: p.required,
    },
    p,
  );
}

export function goTool(t: FunctionTool): Record<string, unknown> {
  const wire = { type: "function", function: t };
  return goValue(
    {
      Type: "function",
      Function: goValue(
        {
          Name: t.name,
          Description: t.description ?? "",
          Parameters: goProperty(t.parameters ?? { type: "object", properties: {} }),
        },
        t,
      ),
    },
    wire,
  );
}

function goMessage(m: ChatMessage): Record<string, unknown> {
  const calls = m.toolCalls?.map((c, i) =>
    goValue(
      { ID: c.id ?? "", Function: { Index: i, Name: c.name, Arguments: c.arguments } },
      { ...(c.id ? { id: c.id } : {}), function: { index: i, name: c.name, arguments: c.arguments } },
    ),
  );
  return {
    Role: m.role,
    Content: m.content,
    ...(m.thinking ? { Thinking: m.thinking } : {}),
    ...(calls?.length ? { ToolCalls: calls } : {}),
    ...(m.toolName !== undefined ? { ToolName: m.toolName } : {}),
    ...(m.toolCallId !== undefined ? { ToolCallID: m.toolCallId } : {}),
  };
}

/** .System = the system messages, .Prompt = the last user message, .Messages = the whole history. */
export function goTemplateData(
  history: ChatMessage[],
  tools: FunctionTool[] = [],
  think?: ThinkSetting,
): GoTemplateData {
  const lastUser = history.findLast((m) => m.role === "user");
  return {
    System: history
      .filter((m) => m.role === "system")
      .map((m) => m.content)
      .join("\n"),
    Prompt: lastUser?.content ?? "",
    Response: "",
    Messages: history.map(goMessage),
    Tools: tools.map(goTool),
    Think: think !== undefined && think !== false,
    ThinkLevel: typeof think === "string" ? think : "",
    IsThinkSet: think !== undefined,
  };
}
