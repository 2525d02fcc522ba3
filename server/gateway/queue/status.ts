// A queued request's status as fal's clients read it: 202 IN_QUEUE (queue_position) or IN_PROGRESS (logs), 200
// COMPLETED (logs, metrics, and error/error_type when it failed). `logs` is always present (fal-client reads it) and
// null unless ?logs=1; the gateway keeps no app logs, so a list is empty. Pure.
import type { z } from "zod";
import type { RequestRowSchema } from "../management/schemas.ts";
import type { QueueJob } from "./broker.ts";

/** A request as the console's Requests list shows it. */
export type RequestRow = z.infer<typeof RequestRowSchema>;

/** The console's row of a request in BullMQ state `state`. Pure. */
export function requestRow(
  job: Pick<QueueJob, "id" | "data" | "returnvalue" | "failedReason" | "finishedOn">,
  state: string,
): RequestRow {
  const base = { id: job.id!, submittedAt: new Date(job.data.submittedAt).toISOString() };
  const r = job.returnvalue;
  if (state === "completed" && r)
    return {
      ...base,
      state: r.error ? "failed" : "completed",
      latencyMs: r.finishedAt - job.data.submittedAt,
      status: r.status,
      ...(r.error ? { error: r.error } : {}),
    };
  if (state === "failed")
    return {
      ...base,
      state: "failed",
      ...(job.finishedOn ? { latencyMs: job.finishedOn - job.data.submittedAt } : {}),
      error: job.failedReason || "the request failed",
    };
  return { ...base, state: state === "active" ? "running" : "queued" };
}

export interface StatusView {
  http: 200 | 202;
  body: {
    status: "IN_QUEUE" | "IN_PROGRESS" | "COMPLETED";
    request_id: string;
    queue_position?: number;
    logs?: unknown[] | null;
    metrics?: { inference_time: number | null };
    error?: string;
    error_type?: string;
    /** Runs again after a replica died, and the most allowed. */
    retries: number;
    max_retries: number;
  };
}

export function statusOf(
  job: Pick<QueueJob, "id" | "data" | "returnvalue" | "failedReason" | "attemptsStarted" | "opts">,
  state: string,
  position: number,
  withLogs: boolean,
  maxRetries: number,
): StatusView {
  const logs = withLogs ? [] : null;
  const retries = Math.max(0, job.attemptsStarted - 1);
  const base = { request_id: job.id!, retries, max_retries: job.data.noRetry ? 0 : maxRetries };
  const completed = (inference_time: number | null, error?: { error: string; error_type: string }): StatusView => ({
    http: 200,
    body: { ...base, status: "COMPLETED", logs, metrics: { inference_time }, ...error },
  });
  if (state === "completed" && job.returnvalue) {
    const r = job.returnvalue;
    const error = r.error ? { error: r.error, error_type: r.errorType ?? "internal_error" } : undefined;
    return completed((r.finishedAt - r.startedAt) / 1000, error);
  }
  if (state === "failed")
    return completed(null, { error: job.failedReason || "the request failed", error_type: "internal_error" });
  if (job.data.cancelled && state !== "active")
    return completed(null, { error: "Request was cancelled", error_type: "request_cancelled" });
  if (state === "active") return { http: 202, body: { ...base, status: "IN_PROGRESS", logs } };
  return { http: 202, body: { ...base, status: "IN_QUEUE", queue_position: position } };
}
