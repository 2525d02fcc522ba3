// Step 1, dispatch: request ids the gateway makes for requests that come without an X-Request-Id: 32 hex characters
// (the form of nginx's $request_id), 64 random bits drawn once per process followed by a 64-bit count. Unique across
// requests of a process by the count and across gateway replicas by the random half, for a counter increment instead of
// a random UUID per request (docs/decisions/0004-gateway-cpu-per-request.md).
import { randomBytes } from "node:crypto";

export function requestIds(): () => string {
  const prefix = randomBytes(8).toString("hex");
  let n = 0;
  return () => prefix + (++n).toString(16).padStart(16, "0");
}
