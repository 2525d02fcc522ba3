// Reading the JSON body of a request to the gateway's own APIs (management, console), bounded, and checking it
// against its zod schema: errors are AppErrors naming the field, answered in the OpenAI envelope.
import type { z } from "zod";
import { AppError } from "../../common/errors.ts";
import { formatIssue } from "../../common/validate.ts";
import { readRequestBody } from "../3-route/request-body.ts";
import type { IncomingMessage } from "node:http";

export function parse<S extends z.ZodType>(schema: S, input: unknown): z.infer<S> {
  const r = schema.safeParse(input, { reportInput: true });
  if (!r.success) {
    const issue = r.error.issues[0]!;
    throw new AppError("BAD_REQUEST", formatIssue(issue), { param: issue.path.map(String).join(".") || null });
  }
  return r.data;
}

export async function readJson(req: IncomingMessage, max: number): Promise<unknown> {
  const body = await readRequestBody(req, max);
  if (body === "too-large") throw new AppError("PAYLOAD_TOO_LARGE", `request body is larger than ${max} bytes`);
  if (body === "aborted") throw new AppError("BAD_REQUEST", "the client closed the connection");
  const text = (body ?? Buffer.alloc(0)).toString("utf8").trim();
  if (!text) return {};
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new AppError("INVALID_JSON", `invalid JSON body: ${(e as Error).message}`);
  }
}
