// zod → AppError: the message names the offending field so clients can fix the request.
import type { z } from "zod";
import { AppError } from "./errors.ts";

export function formatIssue(issue: z.core.$ZodIssue): string {
  const field = issue.path.length ? issue.path.map(String).join(".") : "";
  if (issue.code === "invalid_type" && issue.input === undefined) return field ? `${field} is required` : issue.message;
  return field ? `invalid ${field}: ${issue.message}` : issue.message;
}

export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  if (body === undefined || body === null || typeof body !== "object" || Array.isArray(body)) {
    throw new AppError("BAD_REQUEST", "request body must be a JSON object");
  }
  // reportInput: an issue carries the offending value, so a wrong type is told apart from a missing field.
  const r = schema.safeParse(body, { reportInput: true });
  if (!r.success) {
    const issue = r.error.issues[0]!;
    throw new AppError("BAD_REQUEST", formatIssue(issue), { param: issue.path.map(String).join(".") || null });
  }
  return r.data;
}
