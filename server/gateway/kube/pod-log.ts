// One container's log from the API server, line by line, until it ends or the caller aborts. The request is made as
// client-node's Log makes it (its RequestContext applies the kubeconfig's credentials and TLS; undici's fetch), but
// the body is read here: Log pipes it into the caller's stream without an error handler, so aborting a followed log
// (a browser leaving the page) would end the gateway with an uncaught AbortError.
import { HttpMethod, RequestContext, type KubeConfig } from "@kubernetes/client-node";
import { fetch } from "undici";
import { AppError } from "../../common/errors.ts";

export async function streamPodLog(
  kc: KubeConfig,
  o: { namespace: string; pod: string; container: string; follow: boolean; tailLines: number },
  onLine: (line: string) => void,
  signal: AbortSignal,
): Promise<void> {
  const server = kc.getCurrentCluster()?.server;
  if (!server) throw new AppError("UPSTREAM_FAILED", "the gateway's kubeconfig has no cluster");
  const url = new URL(`${server}/api/v1/namespaces/${o.namespace}/pods/${o.pod}/log`);
  url.searchParams.set("container", o.container);
  url.searchParams.set("tailLines", String(o.tailLines));
  if (o.follow) url.searchParams.set("follow", "true");
  const ctx = new RequestContext(url.toString(), HttpMethod.GET);
  await kc.applySecurityAuthentication(ctx);
  try {
    const res = await fetch(url, { headers: ctx.getHeaders(), dispatcher: ctx.getDispatcher(), signal });
    if (res.status !== 200) {
      const text = await res.text().catch(() => "");
      let message = text;
      try {
        message = (JSON.parse(text) as { message?: string }).message ?? text;
      } catch {
        // not a Status object
      }
      throw new AppError("UPSTREAM_FAILED", `the log of pod ${o.pod} could not be read: ${message || res.status}`);
    }
    const body = res.body as ReadableStream<Uint8Array> | null;
    if (!body) return;
    const decoder = new TextDecoder();
    let partial = "";
    for await (const chunk of body) {
      const parts = (partial + decoder.decode(chunk, { stream: true })).split("\n");
      partial = parts.pop()!;
      for (const l of parts) onLine(l);
    }
    if (partial) onLine(partial);
  } catch (e) {
    if (signal.aborted) return; // the caller left: not an error
    if (e instanceof AppError) throw e;
    throw new AppError("UPSTREAM_FAILED", `the log of pod ${o.pod} broke off: ${(e as Error).message}`);
  }
}
