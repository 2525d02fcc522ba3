// The X-Request-Id values Gantry's processes take from a caller (the gateway passes them on to pods, which log them):
// a token of at most 128 characters from a safe set, so an id can go into a log line or a header as it is.
const REQUEST_ID = /^[\w.:@/+=-]{1,128}$/;

/** The request id a header gives, when it is one to keep (else undefined: the caller makes its own). */
export const givenRequestId = (header: string | string[] | undefined): string | undefined =>
  typeof header === "string" && REQUEST_ID.test(header) ? header : undefined;
