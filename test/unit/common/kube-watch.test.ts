// KubeWatch against a stand-in apiserver on loopback that goes away: how soon the watch retries (a key created after a
// long apiserver outage must take effect within a second or two, not 30 s later) and what it logs meanwhile (no
// warning per retry).
import assert from "node:assert/strict";
import { test } from "node:test";
import type { V1Secret } from "@kubernetes/client-node";
import { KubeWatch } from "../../../server/common/kube-watch.ts";
import { createLogger } from "../../../server/common/logger.ts";
import { logRecords, standInApiserver } from "../../support/stand-in-apiserver.ts";

test("a watch whose apiserver is gone retries every 2 s at most, warning at the first failures only", async () => {
  const api = await standInApiserver((req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    if (req.url?.includes("watch=true")) return; // a watch that stays open and quiet
    res.end(JSON.stringify({ kind: "SecretList", apiVersion: "v1", metadata: { resourceVersion: "1" }, items: [] }));
  });
  const log = logRecords();
  const logger = createLogger({ level: "debug", destination: log.destination });
  const list = () => fetch(`${api.url}/api/v1/secrets`).then((r) => r.json() as Promise<{ items: V1Secret[] }>);
  const w = new KubeWatch<V1Secret>(api.kc, { name: "secrets", path: "/api/v1/secrets", list, logger });
  await w.start();
  await api.close(); // the open watch breaks, every retry is refused
  const failures = () => log.lines.filter((l) => l.msg === "watch failed; restarting").slice(0, 6);
  while (failures().length < 6) await new Promise((r) => setTimeout(r, 50));
  await w.stop();
  assert.deepEqual(
    failures().map((l) => l.retryMs),
    [500, 1000, 2000, 2000, 2000, 2000],
  );
  assert.deepEqual(
    failures().map((l) => l.level),
    ["warn", "warn", "warn", "debug", "debug", "debug"],
  );
});
