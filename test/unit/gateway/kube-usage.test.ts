// The usage store's writes (KubeUsage) against a stand-in apiserver that refuses them for a while, as during an
// apiserver outage: the usage is kept for the next flush, and the log says so without a warning per org and flush.
import assert from "node:assert/strict";
import { test } from "node:test";
import { createLogger } from "../../../server/common/logger.ts";
import { KubeUsage } from "../../../server/gateway/kube/usage-store.ts";
import { logRecords, standInApiserver } from "../../support/stand-in-apiserver.ts";

test("failing usage writes warn at the first failures only, then say when writes work again; nothing is lost", async () => {
  let refuse = true;
  const written: string[] = [];
  const api = await standInApiserver((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      if (req.url?.includes("watch=true")) return void res.writeHead(200, { "content-type": "application/json" });
      if (req.method === "GET") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          JSON.stringify({ kind: "ConfigMapList", apiVersion: "v1", metadata: { resourceVersion: "1" }, items: [] }),
        );
        return;
      }
      if (refuse) {
        res.writeHead(503, { "content-type": "application/json" });
        res.end(JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", code: 503, message: "down" }));
        return;
      }
      written.push(body);
      res.writeHead(201, { "content-type": "application/json" });
      res.end(JSON.stringify({ ...(JSON.parse(body) as object), metadata: { resourceVersion: "2" } }));
    });
  });
  const log = logRecords();
  const store = new KubeUsage(api.kc, {
    flushMs: 3_600_000, // flushed by hand here
    retentionDays: 7,
    logger: createLogger({ level: "debug", destination: log.destination }),
  });
  await store.start();
  const usage = { app: "chat", keyId: "k1", status: 200, promptTokens: 3, completionTokens: 5, durationMs: 1 };
  const at = Date.now(); // one hour's row per org
  for (let i = 0; i < 6; i++) {
    store.record({ ...usage, org: "acme", at });
    store.record({ ...usage, org: "other", at });
    await store.flush();
  }
  const failed = log.lines.filter((l) => l.msg.startsWith("usage write failed"));
  assert.equal(failed.length, 12, "each org's failed write is logged");
  assert.equal(failed.filter((l) => l.level === "warn").length, 3, failed.map((l) => l.level).join(" "));
  refuse = false;
  await store.flush();
  assert.equal(written.length, 2);
  for (const w of written) {
    const rows = JSON.parse((JSON.parse(w) as { data: Record<string, string> }).data["usage.json"]!) as unknown[];
    assert.deepEqual(rows.length, 1);
    assert.equal(
      (rows[0] as { promptTokens: number }).promptTokens,
      18,
      "the six requests of each org are all written",
    );
  }
  assert.equal(log.lines.filter((l) => l.msg === "usage writes recovered" && l.level === "info").length, 1);
  await store.stop();
  await api.close();
});
