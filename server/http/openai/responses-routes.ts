// The OpenAI Responses API (/v1/responses), stateless as Ollama serves it, on chat completions.
import { randomBytes } from "node:crypto";
import { Router } from "express";
import { parseBody } from "../../common/validate.ts";
import type { ServerDeps } from "../deps.ts";
import { serveOnChat } from "../served-on-chat.ts";
import { responsesAdapter } from "./responses-answer.ts";
import { ResponsesRequestSchema } from "./responses-schemas.ts";
import { responsesToChat } from "./responses-to-chat.ts";
import { unixNow } from "./translate.ts";

export function responsesRoutes(deps: ServerDeps): Router {
  const r = Router();
  const serve = serveOnChat(deps);
  r.post("/responses", async (req, res) => {
    const request = parseBody(ResponsesRequestSchema, req.body);
    const head = { id: `resp_${randomBytes(12).toString("hex")}`, created_at: unixNow(), request };
    await serve(res, responsesToChat(request), responsesAdapter(head));
  });
  return r;
}
