// KubeWatch against a stand-in apiserver on loopback that goes away: how soon the watch retries (a key created after a
// long apiserver outage must take effect within a second or two, not 30 s later) and what it logs meanwhile (no
// warning per retry).
import assert from "node:assert/strict";
import { test } from "node:test";
import { CoreV1Api, type V1Secret } from "@kubernetes/client-node";
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

test("a watch lists page by page (limit, continue), trims each page before asking for the next, and watches from the list's version", async () => {
  const names = ["a", "b", "c", "d", "e"];
  const asked: Array<{ limit: string | null; continue: string | null; trimmedBefore: number }> = [];
  let watchedFrom: string | null = null;
  const trimmed: string[] = [];
  const api = await standInApiserver((req, res) => {
    const q = new URL(req.url!, "http://x").searchParams;
    res.writeHead(200, { "content-type": "application/json" });
    if (q.get("watch") === "true") {
      watchedFrom = q.get("resourceVersion");
      return; // open and quiet
    }
    asked.push({ limit: q.get("limit"), continue: q.get("continue"), trimmedBefore: trimmed.length });
    const from = Number(q.get("continue") ?? 0);
    const more = from + 2 < names.length;
    const items = names.slice(from, from + 2).map((name) => ({
      metadata: { name, namespace: "n", managedFields: [{ manager: "m" }] },
      data: { k: "dg==" },
    }));
    // Every page of one list is the same snapshot: the same resourceVersion.
    const metadata = { resourceVersion: "7", ...(more ? { continue: String(from + 2) } : {}) };
    res.end(JSON.stringify({ kind: "SecretList", apiVersion: "v1", metadata, items }));
  });
  const core = api.kc.makeApiClient(CoreV1Api);
  const w = new KubeWatch<V1Secret>(api.kc, {
    name: "secrets",
    path: "/api/v1/secrets",
    list: (page) => core.listSecretForAllNamespaces(page), // a typed list: its token arrives as `_continue`
    logger: createLogger({ level: "silent" }),
    pageSize: 2,
    trim: (s) => {
      trimmed.push(s.metadata!.name!);
      delete s.data;
    },
  });
  await w.start();
  while (watchedFrom === null) await new Promise((r) => setTimeout(r, 10));
  await w.stop();
  await api.close();
  assert.deepEqual(asked, [
    { limit: "2", continue: null, trimmedBefore: 0 },
    { limit: "2", continue: "2", trimmedBefore: 2 },
    { limit: "2", continue: "4", trimmedBefore: 4 },
  ]);
  assert.equal(watchedFrom, "7");
  const cached = w.informer.list();
  assert.deepEqual(cached.map((s) => s.metadata!.name).sort(), names);
  assert.ok(cached.every((s) => s.metadata!.managedFields === undefined && s.data === undefined));
});
