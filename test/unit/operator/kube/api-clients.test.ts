import assert from "node:assert/strict";
import { test } from "node:test";
import { HttpMethod, KubeConfig, RequestContext } from "@kubernetes/client-node";
import { PooledAuthentication } from "../../../../operator/kube/api-clients.ts";

// A kubeconfig with a CA and a client certificate: client-node then builds an undici Agent (a connection pool) per
// request. The PEM text is never parsed until a connection is made, so placeholders do.
const kc = new KubeConfig();
kc.loadFromOptions({
  clusters: [{ name: "c", server: "https://127.0.0.1:6443", caData: Buffer.from("ca").toString("base64") }],
  users: [
    {
      name: "u",
      certData: Buffer.from("cert").toString("base64"),
      keyData: Buffer.from("key").toString("base64"),
    },
  ],
  contexts: [{ name: "x", cluster: "c", user: "u" }],
  currentContext: "x",
});
const request = () => new RequestContext("https://127.0.0.1:6443/api/v1/namespaces", HttpMethod.GET);

test("client-node alone gives each request its own Agent; the pooled authentication one Agent for all", async () => {
  const [a, b] = [request(), request()];
  await kc.applySecurityAuthentication(a);
  await kc.applySecurityAuthentication(b);
  assert.ok(a.getDispatcher() && a.getDispatcher() !== b.getDispatcher(), "client-node: a new Agent per request");

  const pooled = new PooledAuthentication(kc);
  const [c, d] = [request(), request()];
  await pooled.applySecurityAuthentication(c);
  await pooled.applySecurityAuthentication(d);
  assert.ok(c.getDispatcher());
  assert.equal(c.getDispatcher(), d.getDispatcher());
});
