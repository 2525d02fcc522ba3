// The Anthropic Messages API (/v1/messages, /v1/messages/count_tokens), served on chat completions: what Claude Code
// and the Anthropic SDKs send to a local model, as Ollama serves it. Errors in Anthropic's shape (app.ts).
import { randomBytes } from "node:crypto";
import { Router } from "express";
import { parseBody } from "../../common/validate.ts";
import type { ServerDeps } from "../deps.ts";
import { readAnswer } from "../chat-answer.ts";
import type { AnswerAdapter } from "../respond.ts";
import { serveOnChat } from "../served-on-chat.ts";
import { messagesAdapter } from "./answer.ts";
import { CountTokensRequestSchema, MessagesRequestSchema } from "./schemas.ts";
import { countTokensToChat, messagesToChat } from "./to-chat.ts";

/** count_tokens: the prompt tokens of a one-token answer (the prompt as the model's template renders it). */
const countTokens: AnswerAdapter = {
  full: (answer) => ({ input_tokens: readAnswer(answer).usage.prompt_tokens }),
  stream: () => {
    throw new Error("count_tokens does not stream");
  },
};

export function anthropicRoutes(deps: ServerDeps): Router {
  const r = Router();
  const serve = serveOnChat(deps);
  r.post("/", async (req, res) => {
    const body = parseBody(MessagesRequestSchema, req.body);
    await serve(res, messagesToChat(body), messagesAdapter(`msg_${randomBytes(12).toString("hex")}`, body.model));
  });
  r.post("/count_tokens", async (req, res) => {
    await serve(res, countTokensToChat(parseBody(CountTokensRequestSchema, req.body)), countTokens);
  });
  return r;
}
