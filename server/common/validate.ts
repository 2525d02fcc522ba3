// zod → AppError: the message names the offending field so clients can fix the request.
import type { z } from "zod";
import { AppError } from "./errors.ts";

export function formatIssue(issue: z.core.$ZodIssue): string {
  const field = issue.path.length ? issue.path.map(String).join(".") : "";
  const missing = (issue.code === "invalid_type" || issue.code === "invalid_union") && issue.input === undefined;
  if (missing) return field ? `${field} is required` : issue.message;
  return field ? `invalid ${field}: ${issue.message}` : issue.message;
}

/**
 * The issue a union's failure comes down to: when exactly one branch got past the value's own type (an array of content
 * parts, say, whose third part lacks a field), that branch's issue, with the full path; else the union's own.
 */
export function deepestIssue(issue: z.core.$ZodIssue): z.core.$ZodIssue {
  if (issue.code !== "invalid_union" || issue.errors.length === 0) return issue;
  const deeper = issue.errors.filter(
    (b) => b.length > 0 && !(b[0]!.code === "invalid_type" && b[0]!.path.length === 0),
  );
  if (deeper.length !== 1) return issue;
  const inner = deeper[0]![0]!;
  return deepestIssue({ ...inner, path: [...issue.path, ...inner.path] } as z.core.$ZodIssue);
}

export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  if (body === undefined || body === null || typeof body !== "object" || Array.isArray(body)) {
    throw new AppError("BAD_REQUEST", "request body must be a JSON object");
  }
  // reportInput: an issue carries the offending value, so a wrong type is told apart from a missing field.
  const r = schema.safeParse(body, { reportInput: true });
  if (!r.success) {
    const issue = deepestIssue(r.error.issues[0]!);
    throw new AppError("BAD_REQUEST", formatIssue(issue), { param: issue.path.map(String).join(".") || null });
  }
  return r.data;
}
