// KubeWatch against a stand-in apiserver on loopback that goes away and comes back: how soon the watch retries
// (a key created after a long apiserver outage must take effect within a second or two, not 30 s later) and what it
// logs meanwhile (no warning per retry).
import assert from "node:assert/strict";
import http from "node:http";
import type net from "node:net";
import { test } from "node:test";
import { KubeConfig, type V1Secret } from "@kubernetes/client-node";
import { KubeWatch } from "../../../server/common/kube-watch.ts";
import { createLogger } from "../../../server/common/logger.ts";

test("a watch whose apiserver is gone retries every 2 s at most, warning at the first failures only", async () => {
  const api = http.createServer((req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    if (req.url?.includes("watch=true")) return; // a watch that stays open and quiet
    res.end(JSON.stringify({ kind: "SecretList", apiVersion: "v1", metadata: { resourceVersion: "1" }, items: [] }));
  });
  await new Promise<void>((r) => api.listen(0, "127.0.0.1", () => r()));
  const port = (api.address() as net.AddressInfo).port;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "c", server: `http://127.0.0.1:${port}` }],
    users: [{ name: "u" }],
    contexts: [{ name: "x", cluster: "c", user: "u" }],
    currentContext: "x",
  });
  const lines: Array<{ level: string; msg: string; retryMs?: number }> = [];
  const logger = createLogger({
    level: "debug",
    destination: { write: (s: string) => void lines.push(JSON.parse(s) as (typeof lines)[number]) },
  });
  const list = () =>
    fetch(`http://127.0.0.1:${port}/api/v1/secrets`).then((r) => r.json() as Promise<{ items: V1Secret[] }>);
  const w = new KubeWatch<V1Secret>(kc, { name: "secrets", path: "/api/v1/secrets", list, logger });
  await w.start();
  // The apiserver goes away: the open watch breaks, every retry is refused.
  api.closeAllConnections();
  await new Promise<void>((r) => api.close(() => r()));
  const failures = () => lines.filter((l) => l.msg === "watch failed; restarting");
  while (failures().length < 6) await new Promise((r) => setTimeout(r, 50));
  await w.stop();
  const retries = failures().map((l) => l.retryMs);
  assert.deepEqual(retries.slice(0, 6), [500, 1000, 2000, 2000, 2000, 2000]);
  assert.deepEqual(
    failures()
      .slice(0, 6)
      .map((l) => l.level),
    ["warn", "warn", "warn", "debug", "debug", "debug"],
  );
});
