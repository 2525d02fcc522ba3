// The APIs served on chat completions (/v1/responses, /v1/messages), as Ollama's middleware serves them: the request
// translated into a chat completion request, checked by its schema and answered by the same code as
// /v1/chat/completions, its answer translated back by the API's AnswerAdapter. Errors name the caller's fields.
import type { Response } from "express";
import { parseBody } from "../common/validate.ts";
import type { ServerDeps } from "./deps.ts";
import type { ChatTranslation } from "./field-names.ts";
import { chatCompletions } from "./openai/routes.ts";
import { ChatCompletionRequestSchema } from "./openai/schemas.ts";
import type { AnswerAdapter } from "./respond.ts";

export type ServeOnChat = (res: Response, t: ChatTranslation, adapter: AnswerAdapter) => Promise<void>;

export function serveOnChat(deps: ServerDeps): ServeOnChat {
  const chat = chatCompletions(deps);
  return async (res, t, adapter) => {
    try {
      await chat(res, parseBody(ChatCompletionRequestSchema, t.chat), adapter);
    } catch (e) {
      throw t.names.rename(e);
    }
  };
}
