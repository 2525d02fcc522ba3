// Where an app's queue is (fal's queue API on the gateway): <gateway>/_queue/<org>/<app>, beside its URL
// <gateway>/<org>/<app>. A submission is POST {queueUrl}/<the app's path> (e.g. /v1/chat/completions). Pure.

export const QUEUE_PREFIX = "/_queue";

/** The queue URL of the app at `url`, or undefined when the URL does not end in /<org>/<app>. */
export function queueUrlOf(url: string, org: string, app: string): string | undefined {
  const tail = `/${org}/${app}`;
  const u = url.replace(/\/+$/, "");
  return u.endsWith(tail) ? `${u.slice(0, -tail.length)}${QUEUE_PREFIX}${tail}` : undefined;
}
