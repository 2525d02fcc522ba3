// Who the client is: X-Forwarded-For and X-Forwarded-Proto are believed from trusted proxies only (trustProxy, as
// express's `trust proxy`), and what the pods are told carries nothing a client made up.
import assert from "node:assert/strict";
import type { IncomingMessage } from "node:http";
import { test } from "node:test";
import { clientOf } from "../../../server/gateway/1-dispatch/client.ts";
import { parseGatewayConfig } from "../../../server/gateway/config.ts";

const req = (peer: string, headers: Record<string, string> = {}, encrypted = false) =>
  ({
    socket: { remoteAddress: peer, encrypted },
    connection: { remoteAddress: peer },
    headers,
  }) as unknown as IncomingMessage;
const spoof = { "x-forwarded-for": "6.6.6.6, 7.7.7.7", "x-forwarded-proto": "https" };

test("without trustProxy: the socket's peer and scheme, whatever the headers say", () => {
  const of = clientOf([]);
  assert.deepEqual(of(req("10.0.0.5", spoof)), { address: "10.0.0.5", forwardedFor: "10.0.0.5", tls: false });
  assert.equal(of(req("10.0.0.5", {}, true)).tls, true);
});

test("behind trusted proxies: the first untrusted hop is the client; the chain passed on holds the trusted hops", () => {
  const of = clientOf(["10.0.0.0/8"]);
  // ingress 10.0.0.5 saw 203.0.113.9 (which claimed 6.6.6.6): the claim is the client's own and not believed past it.
  const c = of(req("10.0.0.5", { "x-forwarded-for": "6.6.6.6, 203.0.113.9", "x-forwarded-proto": "https, http" }));
  assert.deepEqual(c, { address: "203.0.113.9", forwardedFor: "203.0.113.9, 10.0.0.5", tls: true });
  // Two trusted hops.
  const two = of(req("10.0.0.5", { "x-forwarded-for": "198.51.100.1, 10.1.1.1" }));
  assert.deepEqual([two.address, two.forwardedFor], ["198.51.100.1", "198.51.100.1, 10.1.1.1, 10.0.0.5"]);
  // A client outside the trusted range that sends the headers itself changes nothing.
  assert.deepEqual(of(req("203.0.113.9", spoof)), { address: "203.0.113.9", forwardedFor: "203.0.113.9", tls: false });
  // A trusted proxy that says nothing: the socket's scheme.
  assert.equal(of(req("10.0.0.5", {}, true)).tls, true);
  assert.equal(clientOf(["loopback"])(req("127.0.0.1", { "x-forwarded-for": "192.0.2.1" })).address, "192.0.2.1");
});

test("trustProxy entries are checked when the config is read", () => {
  assert.deepEqual(parseGatewayConfig({ trustProxy: ["10.0.0.0/8", "::1", "uniquelocal"] }).trustProxy, [
    "10.0.0.0/8",
    "::1",
    "uniquelocal",
  ]);
  assert.throws(() => parseGatewayConfig({ trustProxy: ["10.0.0.0/99"] }), /trustProxy.*CIDR/s);
  assert.throws(() => parseGatewayConfig({ trustProxy: ["the ingress"] }), /trustProxy/);
  assert.deepEqual(parseGatewayConfig({}).trustProxy, []);
});
