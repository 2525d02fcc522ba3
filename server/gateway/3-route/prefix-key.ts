// Step 3, route: the key PrefixHash routes a request by. A key the client sends names the conversation itself
// (OpenAI's `prompt_cache_key`, then an `x-session-id` header, then OpenAI's `user`); without one, the key is the
// model, the start of the system text (system messages, Anthropic's system, Responses' instructions) and the start of
// the first user message (a completion's prompt), each cut at prefixCharLength characters, so every turn of a
// conversation has the same key and a long system prompt shared by an app's conversations does not give them all one
// key. Read from the request's one parsed body (request-body.ts); where the route's table entry names no fields, or
// the body has none of them, there is no key (the request goes by load). Pure.
import type { PrefixFields } from "../routes.ts";

/** The longest client-sent key used (longer ones are cut: a key only has to tell conversations apart). */
const MAX_CLIENT_KEY = 256;

/** What a message or a part list holds as text: a string, or the `text` of its parts (images leave no text). */
function textOf(c: unknown): string {
  if (typeof c === "string") return c;
  if (!Array.isArray(c)) return "";
  let s = "";
  for (const p of c)
    if (typeof p === "string") s += p;
    else if (p && typeof p === "object" && typeof (p as { text?: unknown }).text === "string")
      s += (p as { text: string }).text;
  return s;
}

/** Messages (or Responses input items) before the first user one into `lead`, the first user message's text. */
function conversationStart(list: unknown, chars: number): { lead: string; user: string | undefined } {
  if (typeof list === "string") return { lead: "", user: list.slice(0, chars) };
  let lead = "";
  if (!Array.isArray(list)) return { lead, user: undefined };
  for (const m of list) {
    if (typeof m === "string") return { lead, user: m.slice(0, chars) };
    if (!m || typeof m !== "object") continue;
    const { role, content } = m as { role?: unknown; content?: unknown };
    const r = typeof role === "string" ? role : "";
    if (r === "user") return { lead, user: textOf(content).slice(0, chars) || " " };
    lead = `${lead}${r}:${textOf(content)}\n`.slice(0, chars);
  }
  return { lead, user: undefined };
}

/** The routing key a client sent, in order of precedence; undefined without one. */
export function clientKey(json: Record<string, unknown>, sessionHeader: string | undefined): string | undefined {
  const given = [json.prompt_cache_key, sessionHeader, json.user].find((v) => typeof v === "string" && v !== "");
  return given === undefined ? undefined : `client\n${(given as string).slice(0, MAX_CLIENT_KEY)}`;
}

/**
 * The PrefixHash key of a request whose route reads `fields` from its parsed JSON object body, or undefined when the
 * body carries no conversation start. At most `chars` characters of each part are used.
 */
export function prefixKey(
  fields: PrefixFields,
  json: Record<string, unknown>,
  chars: number,
  sessionHeader?: string,
): string | undefined {
  const given = clientKey(json, sessionHeader);
  if (given !== undefined) return given;
  let lead = fields.lead ? textOf(json[fields.lead]).slice(0, chars) : "";
  let user: string | undefined;
  if (fields.list) {
    const start = conversationStart(json[fields.list], chars);
    lead = (lead + start.lead).slice(0, chars);
    user = start.user;
  } else if (fields.text) user = textOf(json[fields.text]).slice(0, chars);
  if (!lead && !user) return undefined;
  const model = typeof json.model === "string" ? json.model.slice(0, 256) : "";
  return `${model}\n${lead}\n${user ?? ""}`;
}
