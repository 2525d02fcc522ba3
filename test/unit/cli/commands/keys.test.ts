// `gantry keys` when the cluster says no: one clear line and exit code 1, never the client library's dump. The API
// server is a stand-in on loopback answering as kube-apiserver does for a namespace that does not exist.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { freePort, GANTRY } from "../../../support/server.ts";

const run = promisify(execFile);
let api: http.Server;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-keys-cli-"));

const kubeconfig = (server: string, name: string): string => {
  const file = path.join(dir, name);
  fs.writeFileSync(
    file,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "c", cluster: { server, "insecure-skip-tls-verify": true } }],
      users: [{ name: "u", user: { token: "t" } }],
      contexts: [{ name: "dev", context: { cluster: "c", user: "u" } }],
      "current-context": "dev",
    }),
  );
  return file;
};

before(async () => {
  api = http.createServer((req, res) => {
    req.resume();
    const ns = /^\/api\/v1\/namespaces\/([^/]+)\//.exec(req.url ?? "")?.[1] ?? "";
    res.writeHead(404, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        kind: "Status",
        apiVersion: "v1",
        status: "Failure",
        message: `namespaces "${ns}" not found`,
        reason: "NotFound",
        details: { name: ns, kind: "namespaces" },
        code: 404,
      }),
    );
  });
  await new Promise<void>((r) => api.listen(0, "127.0.0.1", () => r()));
});

after(() => api.close());

const keys = async (args: string[]) => {
  const env = { ...process.env, HOME: dir, KUBECONFIG: "" };
  return run(process.execPath, [GANTRY, "keys", ...args], { env }).then(
    (r) => ({ code: 0, ...r }),
    (e: { code: number; stdout: string; stderr: string }) => e,
  );
};

test("keys create in an org that does not exist: says so in one line, exit code 1", async () => {
  const file = kubeconfig(`http://127.0.0.1:${(api.address() as AddressInfo).port}`, "api.kubeconfig");
  const r = await keys(["create", "--org", "nope", "--kubeconfig", file]);
  assert.equal(r.code, 1);
  assert.equal(r.stdout, "");
  assert.match(r.stderr, /^Error: keys create: org "nope" does not exist/);
  assert.doesNotMatch(r.stderr, /HTTP-Code|Headers|audit-id/);
  assert.equal(r.stderr.trim().split("\n").length, 1);
});

test("keys list against a cluster that cannot be reached names the server and the context", async () => {
  const file = kubeconfig(`http://127.0.0.1:${await freePort()}`, "down.kubeconfig");
  const r = await keys(["list", "--org", "acme", "--kubeconfig", file]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /^Error: cannot reach the cluster at http:\/\/127\.0\.0\.1:\d+ \(context dev\)/);
});

test("keys with a context the kubeconfig does not have: says which it has", async () => {
  const file = kubeconfig("http://127.0.0.1:1", "ctx.kubeconfig");
  const r = await keys(["list", "--org", "acme", "--kubeconfig", file, "--context", "prod"]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /no context "prod" in the kubeconfig \(it has: dev\)/);
});

test("keys create with a --name over 253 characters or with a line break is refused before anything is written", async () => {
  let requests = 0;
  const count = () => requests++;
  api.on("request", count);
  const file = kubeconfig(`http://127.0.0.1:${(api.address() as AddressInfo).port}`, "name.kubeconfig");
  for (const [name, message] of [
    ["n".repeat(254), /^Error: keys create: --name is at most 253 characters/],
    ["ci\nsecond line", /^Error: keys create: --name may not hold control characters/],
  ] as const) {
    const r = await keys(["create", "--org", "acme", "--name", name, "--kubeconfig", file]);
    assert.equal(r.code, 2, "a usage error");
    assert.match(r.stderr, message);
  }
  api.off("request", count);
  assert.equal(requests, 0);
});
