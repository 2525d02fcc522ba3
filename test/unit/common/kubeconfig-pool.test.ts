// API requests through loadKubeConfig's KubeConfig share connections: against a real HTTPS server with client
// certificates (the test control plane's PKI), ten requests reuse one or two TLS connections, where client-node's own
// KubeConfig opens ten (a new undici Agent per request).
import assert from "node:assert/strict";
import fs from "node:fs";
import https from "node:https";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { loadKubeConfig } from "../../../server/common/kubeconfig.ts";
import { generatePki, kubeconfigYaml } from "../../cluster/pki.ts";

let server: https.Server,
  kubeconfig: string,
  connections = 0;

before(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-kc-pool-"));
  const pki = generatePki(path.join(dir, "pki"), "127.0.0.1");
  server = https.createServer(
    {
      cert: fs.readFileSync(pki.apiserverCrt),
      key: fs.readFileSync(pki.apiserverKey),
      ca: fs.readFileSync(pki.caCrt),
      requestCert: true,
    },
    (_req, res) => {
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ apiVersion: "v1", kind: "Namespace", metadata: { name: "acme" } }));
    },
  );
  server.on("secureConnection", () => connections++);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  kubeconfig = path.join(dir, "kubeconfig");
  fs.writeFileSync(kubeconfig, kubeconfigYaml(pki, `https://127.0.0.1:${port}`));
});

after(() => {
  server.closeAllConnections();
  server.close();
});

async function connectionsFor(kc: KubeConfig): Promise<number> {
  const before = connections;
  const core = kc.makeApiClient(CoreV1Api);
  for (let i = 0; i < 10; i++) assert.equal((await core.readNamespace({ name: "acme" })).metadata?.name, "acme");
  return connections - before;
}

test("ten API requests of loadKubeConfig's config reuse its connections", async () => {
  const plain = new KubeConfig();
  plain.loadFromFile(kubeconfig);
  assert.equal(await connectionsFor(plain), 10, "client-node's own KubeConfig: one connection per request");
  // undici may open a second before the first is free again; never one per request.
  assert.ok((await connectionsFor(loadKubeConfig({ file: kubeconfig }))) <= 2);
});
