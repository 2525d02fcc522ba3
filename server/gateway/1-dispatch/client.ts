// Step 1, dispatch: who the client is, as far as the gateway can tell. Its socket's peer, unless that peer is one of
// the proxies the config trusts (trustProxy, express's `trust proxy` semantics through proxy-addr): then the
// X-Forwarded-For entries those proxies added are believed, and the client is the first address not among them; the
// scheme is the trusted proxy's X-Forwarded-Proto. Without trustProxy nothing a client sends changes either, and the
// X-Forwarded-For pods get is the address the gateway saw. Read by the console's sign-in throttle, the access log and
// the forwarded headers of 4-forward.
import type { IncomingMessage } from "node:http";
import proxyaddr from "proxy-addr";

export interface Client {
  /** The client's address (the socket's peer, or the first untrusted hop of X-Forwarded-For). */
  address: string;
  /** The X-Forwarded-For chain to pass on, client first: the client and the trusted hops, nothing a client made up. */
  forwardedFor: string;
  /** Whether the client reached the gateway (or the trusted proxy in front of it) over TLS. */
  tls: boolean;
}

export type ClientOf = (req: IncomingMessage) => Client;

/** How the gateway tells clients for a trustProxy list. */
export function clientOf(trustProxy: readonly string[]): ClientOf {
  if (trustProxy.length === 0) return peerOf;
  const trust = proxyaddr.compile([...trustProxy]);
  return (req) => {
    if (!req.socket.remoteAddress) return peerOf(req); // a request made inside the gateway (the queue's runs)
    const hops = proxyaddr.all(req, trust); // the socket's peer first, back to the first untrusted hop
    const peer = hops[0] ?? "";
    const encrypted = (req.socket as { encrypted?: boolean }).encrypted === true;
    const proto = trust(peer, 0) ? firstValue(req.headers["x-forwarded-proto"]) : undefined;
    return {
      address: hops[hops.length - 1] ?? peer,
      forwardedFor: hops.toReversed().join(", "),
      tls: proto === undefined ? encrypted : proto.toLowerCase() === "https",
    };
  };
}

/** The socket's peer and scheme, whatever the headers say. */
function peerOf(req: IncomingMessage): Client {
  const address = req.socket.remoteAddress ?? "";
  return { address, forwardedFor: address, tls: (req.socket as { encrypted?: boolean }).encrypted === true };
}

/** The first value of a header a proxy chain may have added to (`https, http`: the first proxy's). */
function firstValue(h: string | string[] | undefined): string | undefined {
  const v = (Array.isArray(h) ? h[0] : h)?.split(",")[0]?.trim();
  return v ? v : undefined;
}
