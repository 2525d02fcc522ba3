// `gantry gateway` on the test control plane with pods that really run (`gantry serve` on the tiny generated model),
// as a user of the hosted deployment meets it: two gateway replicas and the operator run on the host (and a third
// replica whose load reports reach no operator, so what only it holds cannot wake an app), keys are made
// with `gantry keys` from the kubeconfig, and the `openai` and `ollama` npm clients and curl call
// {gateway}/<org>/<app>/... with the key. Apps are reused across tests where that is what a user would do (the auth
// mode of one app is switched between rounds of the auth matrix) to keep the file to two apps.
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { AppsV1Api, CoreV1Api, type V1Pod } from "@kubernetes/client-node";
import { Ollama } from "ollama";
import OpenAI from "openai";
import { PROCESS_RUNTIME_LABEL } from "../../cluster/kwok-config.ts";
import { POD_GATEWAY } from "../../cluster/runtime/pod-network.ts";
import { createTestNamespace } from "../../cluster/test-cluster.ts";
import { startTestGateway, type TestGateway } from "../../support/gateway.ts";
import { startHubServer, type HubServer } from "../../support/hub-server.ts";
import { tinyModelPath } from "../../support/models.ts";
import { kubectl, loadReportToken, startTestOperator, sumMetric, type TestOperator } from "../../support/operator.ts";
import { freePort, GANTRY } from "../../support/server.ts";
import {
  createApp,
  eventually,
  modelApp,
  operatorCluster,
  readApp,
  waitForCondition,
  type OperatorCluster,
} from "../operator/helpers.ts";

const run = promisify(execFile);
let c: OperatorCluster, op: TestOperator, hub: HubServer, gw1: TestGateway, gw2: TestGateway, gw3: TestGateway;
let config: Record<string, unknown>;
/** An operator address where nothing listens: load reports sent there fail (connection refused). */
let nowhere: string;
let orgA: string, orgB: string, core: CoreV1Api;
/** Keys by role; every secret made here, to check none ever shows up in logs or Secrets. */
const keys: Record<string, { id: string; key: string }> = {};
const secrets: string[] = [];

const MODEL = "hf.co/acme/tiny-chat-GGUF:Q8_0";
/** Tokens of a stream that must still run while the test acts on it (the tiny model is fast on an idle machine). */
const LONG = 30_000;

before(async () => {
  c = await operatorCluster();
  core = c.kc.makeApiClient(CoreV1Api);
  orgA = await createTestNamespace(c.kc, "org-gw");
  orgB = await createTestNamespace(c.kc, "org-gw-other");
  hub = await startHubServer({ host: "0.0.0.0" });
  await hub.register({
    org: "acme",
    repo: "tiny-chat-GGUF",
    // Long streams must outlast a load report on a fast machine: a context far beyond the default 512.
    files: { "tiny-chat-Q8_0.gguf": await tinyModelPath({ controlLogit: -8, contextLength: 131_072 }) },
  });
  const gw1Port = await freePort();
  op = await startTestOperator(c.cp, {
    watchNamespace: orgA,
    hubUrl: `http://${POD_GATEWAY}:${hub.port}`,
    podLabels: { [PROCESS_RUNTIME_LABEL]: "true" },
    gatewayUrl: `http://127.0.0.1:${gw1Port}`,
    autoscaler: { intervalSeconds: 0.5, reportTtlSeconds: 10 },
    leaderElection: {
      name: "gantry-operator-gateway-test",
      leaseDurationSeconds: 4,
      renewDeadlineSeconds: 3,
      retryPeriodSeconds: 1,
    },
  });
  const tokenFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "gantry-gw-token-")), "token");
  fs.writeFileSync(tokenFile, loadReportToken(c.cp));
  config = {
    operatorUrls: [op.url],
    operatorTokenFile: tokenFile,
    maxBodyBytes: 65536,
    usage: { flushSeconds: 1, retentionDays: 7 },
    limits: { requestsPerSecond: 50, burst: 100, concurrent: 16, orgs: { [orgB]: { requestsPerSecond: 1, burst: 2 } } },
  };
  nowhere = `http://127.0.0.1:${await freePort()}`;
  gw1 = await startTestGateway(c.cp, config, gw1Port);
  gw2 = await startTestGateway(c.cp, config);
  // The third's load reports reach no operator, so an app only it holds requests for stays at zero whatever the
  // machine's speed: it holds 1 request per app (the hold cap), here for at most 1 s (the warm-up timeout).
  gw3 = await startTestGateway(c.cp, quiet(1));
  await createApp(
    c,
    modelApp(orgA, "chat", {
      model: MODEL,
      modelfile: "PARAMETER temperature 0.7\n",
      auth: "private",
      resources: { profile: "cpu", cpu: "1" },
      server: { parallel: 4, contextLength: 131_072 },
      scaling: { minReplicas: 1, maxReplicas: 1 },
    }),
  );
});

/** The config of the replica whose reports reach no operator, holding 1 request per app for `timeoutSeconds`. */
const quiet = (timeoutSeconds: number) => ({
  ...config,
  operatorUrls: [nowhere],
  hold: { timeoutSeconds, maxPerApp: 1, keepAliveSeconds: 1 },
});

after(async () => {
  await gw1?.stop();
  await gw2?.stop();
  await gw3?.stop();
  await op?.stop();
  for (const ns of [orgA, orgB]) await core?.deleteNamespace({ name: ns }).catch(() => undefined);
  await hub?.close();
});

const gantry = async (args: string[]) => {
  const r = await run(process.execPath, [GANTRY, ...args], {
    env: { ...process.env, KUBECONFIG: c.cp.kubeconfig },
  });
  return { stdout: r.stdout, stderr: r.stderr };
};

const call = (base: string, org: string, app: string, rest: string, init: RequestInit = {}) =>
  fetch(`${base}/${org}/${app}${rest}`, init);
const auth = (key: string, scheme = "Key") => ({ authorization: `${scheme} ${key}` });
/** A JSON POST to org A's chat app with its api key. */
const postChat = (base: string, rest: string, body: unknown, signal?: AbortSignal) =>
  call(base, orgA, "chat", rest, {
    method: "POST",
    headers: { ...auth(keys.apiA!.key), "content-type": "application/json" },
    body: JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });

/** The rest of a streamed body, as text. */
async function readRest(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<string> {
  let text = "";
  const decoder = new TextDecoder();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return text;
    text += decoder.decode(value, { stream: true });
  }
}

const readyPod = (app: string): Promise<V1Pod> =>
  eventually(
    `a ready pod of ${app}`,
    async () =>
      (await core.listNamespacedPod({ namespace: orgA, labelSelector: `gantry.dev/modelapp=${app}` })).items.find(
        (p) =>
          !p.metadata?.deletionTimestamp &&
          p.status?.conditions?.some((x) => x.type === "Ready" && x.status === "True"),
      ),
    180_000,
  );

/** Reads an SSE or NDJSON body to its end; returns its lines. */
async function lines(r: Response): Promise<string[]> {
  return (await r.text()).split("\n");
}

test("gantry keys creates (printing the key once), lists and revokes keys from the kubeconfig; Secrets hold only a hash", async () => {
  const admin = JSON.parse(
    (await gantry(["keys", "create", "--org", orgA, "--scope", "admin", "--name", "console", "--output", "json"]))
      .stdout,
  ) as { id: string; key: string; org: string; scope: string; name: string; created: string };
  assert.equal(admin.org, orgA);
  assert.equal(admin.scope, "admin");
  assert.equal(admin.name, "console");
  assert.match(admin.key, new RegExp(`^${admin.id}:[A-Za-z0-9_-]{43}$`));
  keys.adminA = admin;
  const human = await gantry(["keys", "create", "--org", orgA, "--name", "ci"]);
  const apiKey = human.stdout.trim();
  assert.match(apiKey, /^[0-9a-f]{16}:[A-Za-z0-9_-]{43}$/);
  assert.match(human.stderr, /only time the key is shown/);
  keys.apiA = { id: apiKey.split(":")[0]!, key: apiKey };
  keys.adminB = JSON.parse(
    (await gantry(["keys", "create", "--org", orgB, "--scope", "admin", "--output", "json"])).stdout,
  ) as { id: string; key: string };
  keys.apiB = JSON.parse((await gantry(["keys", "create", "--org", orgB, "--output", "json"])).stdout) as {
    id: string;
    key: string;
  };
  for (const k of Object.values(keys)) secrets.push(k.key.split(":")[1]!);

  const listed = JSON.parse((await gantry(["keys", "list", "--org", orgA, "--output", "json"])).stdout) as {
    keys: Array<Record<string, unknown>>;
  };
  assert.deepEqual(listed.keys.map((k) => k.id).sort(), [keys.adminA.id, keys.apiA.id].sort());
  assert.ok(listed.keys.every((k) => !("key" in k) && !("hash" in k)));
  assert.match((await gantry(["keys", "list", "--org", orgA])).stdout, /ID\s+SCOPE\s+NAME/);

  const throwaway = JSON.parse((await gantry(["keys", "create", "--org", orgA, "--output", "json"])).stdout) as {
    id: string;
    key: string;
  };
  secrets.push(throwaway.key.split(":")[1]!);
  assert.deepEqual(
    JSON.parse((await gantry(["keys", "revoke", throwaway.id, "--org", orgA, "--output", "json"])).stdout),
    {
      id: throwaway.id,
      org: orgA,
      revoked: true,
    },
  );
  await assert.rejects(gantry(["keys", "revoke", throwaway.id, "--org", orgA]), /has no key/);
  await assert.rejects(gantry(["keys", "create", "--org", orgA, "--scope", "root"]), /--scope is api or admin/);

  const stored = kubectl(c.cp, ["get", "secrets", "-n", orgA, "-l", "gantry.dev/api-key", "-o", "json"]);
  const items = (JSON.parse(stored) as { items: Array<{ data: Record<string, string> }> }).items;
  assert.equal(items.length, 2);
  for (const it of items) assert.match(Buffer.from(it.data.hash!, "base64").toString(), /^hmac-sha256\$/);
  for (const s of secrets) {
    assert.ok(!stored.includes(s), "a secret is in a Secret");
    assert.ok(!stored.includes(Buffer.from(s).toString("base64")), "a secret is in a Secret (base64)");
  }
});

test("end to end: the openai and ollama clients and curl reach a Ready app through the gateway with a key", async () => {
  const app = await waitForCondition(c, orgA, "chat", "Ready", "True", "Serving", 180_000);
  assert.equal(app.status?.url, `${gw1.url}/${orgA}/chat`, "status.url points at the gateway");
  const openai = new OpenAI({ baseURL: `${app.status!.url}/v1`, apiKey: keys.apiA!.key });
  const models = await openai.models.list();
  assert.ok(
    models.data.some((m) => m.id === "chat:latest"),
    models.data.map((m) => m.id).join(", "),
  );
  const done = await openai.chat.completions.create({
    model: "chat:latest",
    messages: [{ role: "user", content: "Hello" }],
    max_tokens: 8,
    temperature: 0.7,
  });
  assert.equal(typeof done.choices[0]?.message.content, "string");
  assert.equal(done.usage?.completion_tokens, 8);

  let text = "",
    chunks = 0,
    usageChunks = 0;
  const stream = await openai.chat.completions.create({
    model: "chat:latest",
    messages: [{ role: "user", content: "Count" }],
    max_tokens: 12,
    stream: true,
  });
  for await (const chunk of stream) {
    chunks++;
    if (chunk.usage) usageChunks++;
    text += chunk.choices[0]?.delta.content ?? "";
  }
  // Several chunks, not one buffered answer (not one per token: a token that ends inside a UTF-8 character waits).
  assert.ok(chunks >= 4 && text.length > 0, `${chunks} chunks`);
  assert.equal(usageChunks, 0, "no usage chunk the client did not ask for (the gateway asked for one to meter)");

  const ollama = new Ollama({ host: `${gw1.url}/${orgA}/chat`, headers: auth(keys.apiA!.key) });
  const chat = await ollama.chat({
    model: "chat:latest",
    messages: [{ role: "user", content: "Hi" }],
    options: { num_predict: 5 },
  });
  assert.equal(chat.done, true);
  assert.equal(chat.eval_count, 5);
  let generated = 0;
  for await (const part of await ollama.generate({
    model: "chat:latest",
    prompt: "Once",
    stream: true,
    options: { num_predict: 6 },
  }))
    if (part.done) generated = part.eval_count;
  assert.equal(generated, 6);
  assert.ok((await ollama.list()).models.some((m) => m.name === "chat:latest"));

  // Exactly as the hosted document shows it.
  const curl = execFileSync(
    "curl",
    [
      "-sS",
      "-w",
      "\n%{http_code}",
      `${app.status!.url}/v1/chat/completions`,
      "-H",
      `Authorization: Key ${keys.apiA!.key}`,
      "-H",
      "Content-Type: application/json",
      "-d",
      JSON.stringify({
        model: "chat:latest",
        messages: [{ role: "user", content: "Hello" }],
        max_tokens: 8,
        temperature: 0.7,
      }),
    ],
    { encoding: "utf8" },
  );
  const [body, code] = [curl.slice(0, curl.lastIndexOf("\n")), curl.slice(curl.lastIndexOf("\n") + 1)];
  assert.equal(code, "200");
  assert.equal((JSON.parse(body) as { object: string }).object, "chat.completion");
  const models2 = execFileSync(
    "curl",
    ["-sS", `${app.status!.url}/v1/models`, "-H", `Authorization: Key ${keys.apiA!.key}`],
    { encoding: "utf8" },
  );
  assert.ok((JSON.parse(models2) as { data: Array<{ id: string }> }).data.some((m) => m.id === "chat:latest"));
});

test("routing: management routes are refused, unknown apps are 404 in each API's shape, X-Request-Id, body limit", async () => {
  const h = auth(keys.apiA!.key);
  const pull = await call(gw1.url, orgA, "chat", "/api/pull", { method: "POST", headers: h, body: '{"model":"x"}' });
  assert.equal(pull.status, 403);
  assert.match(((await pull.json()) as { error: string }).error, /not reachable through the gateway/);
  const del = await call(gw1.url, orgA, "chat", "/api/delete", { method: "DELETE", headers: h, body: "{}" });
  assert.equal(del.status, 403);
  const missing = await call(gw1.url, orgA, "nope", "/v1/models", { headers: h });
  assert.equal(missing.status, 404);
  assert.equal(((await missing.json()) as { error: { type: string } }).error.type, "not_found_error");
  const missingOrg = await call(gw1.url, "no-such-org", "chat", "/api/tags", { headers: h });
  assert.equal(missingOrg.status, 404);
  assert.equal(typeof ((await missingOrg.json()) as { error: unknown }).error, "string");
  assert.equal((await call(gw1.url, "Bad_Org", "chat", "/v1/models", { headers: h })).status, 404);

  const tagged = await call(gw1.url, orgA, "chat", "/api/version", { headers: { ...h, "x-request-id": "trace-42" } });
  assert.equal(tagged.status, 200);
  assert.equal(tagged.headers.get("x-request-id"), "trace-42");
  const fresh = await call(gw1.url, orgA, "chat", "/api/version", { headers: h });
  const again = await call(gw1.url, orgA, "chat", "/api/version", { headers: h });
  assert.match(fresh.headers.get("x-request-id") ?? "", /^[0-9a-f]{32}$/);
  assert.notEqual(fresh.headers.get("x-request-id"), again.headers.get("x-request-id"));
  assert.notEqual(
    fresh.headers.get("x-request-id")!.slice(0, 16),
    (await call(gw2.url, orgA, "chat", "/api/version", { headers: h })).headers.get("x-request-id")!.slice(0, 16),
    "another replica's ids differ",
  );

  const big = await call(gw1.url, orgA, "chat", "/v1/chat/completions", {
    method: "POST",
    headers: { ...h, "content-type": "application/json" },
    body: JSON.stringify({ model: "chat:latest", messages: [{ role: "user", content: "x".repeat(100_000) }] }),
  });
  assert.equal(big.status, 413);
  assert.equal(((await big.json()) as { error: { code: string } }).error.code, "payload_too_large");
});

const patchAuth = async (mode: string) => {
  kubectl(c.cp, [
    "patch",
    "modelapp",
    "chat",
    "-n",
    orgA,
    "--type=merge",
    "-p",
    JSON.stringify({ spec: { auth: mode } }),
  ]);
  for (const gw of [gw1, gw2])
    await eventually(
      `${gw.url} sees auth ${mode}`,
      async () => {
        const r = await fetch(`${gw.url}/_gantry/v1/orgs/${orgA}/apps`, { headers: auth(keys.adminA!.key) });
        const { apps } = (await r.json()) as { apps: Array<{ name: string; auth: string }> };
        return apps.find((a) => a.name === "chat")?.auth === mode ? true : undefined;
      },
      10_000,
      100,
    );
};

test("auth matrix: private, shared and public × no header, malformed, unknown, revoked, expired, other org's key, right key", async () => {
  const revoked = JSON.parse((await gantry(["keys", "create", "--org", orgA, "--output", "json"])).stdout) as {
    id: string;
    key: string;
  };
  const expiring = JSON.parse(
    (await gantry(["keys", "create", "--org", orgA, "--expires", "1s", "--output", "json"])).stdout,
  ) as { id: string; key: string; expires: string };
  secrets.push(revoked.key.split(":")[1]!, expiring.key.split(":")[1]!);
  assert.equal(
    (await call(gw1.url, orgA, "chat", "/v1/models", { headers: auth(revoked.key) })).status,
    200,
    "works before it is revoked",
  );
  await gantry(["keys", "revoke", revoked.id, "--org", orgA]);
  // The revocation reaches each replica through its watch of Secrets: waited for, not assumed done by the time the
  // expiring key has expired (the management API test holds it to its one second).
  for (const gw of [gw1, gw2])
    await eventually(
      "the revoked key refused",
      async () =>
        (await call(gw.url, orgA, "chat", "/v1/models", { headers: auth(revoked.key) })).status === 401
          ? true
          : undefined,
      10_000,
      50,
    );
  await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(expiring.expires) - Date.now() + 100)));

  const cases: Array<[string, Record<string, string>]> = [
    ["no header", {}],
    ["malformed", { authorization: "Key not-a-key" }],
    ["basic scheme", { authorization: "Basic dXNlcjpwYXNz" }],
    ["unknown key", auth(`0123456789abcdef:${"A".repeat(43)}`)],
    ["revoked key", auth(revoked.key)],
    ["expired key", auth(expiring.key)],
    ["other org's key", auth(keys.apiB!.key)],
    ["right key", auth(keys.apiA!.key)],
    ["right key, Bearer", auth(keys.apiA!.key, "Bearer")],
    ["right key, lower-case scheme", auth(keys.apiA!.key, "key")],
  ];
  const want: Record<string, number[]> = {
    //         none malf basic unkn revk expd other right bearer lower
    private: [401, 401, 401, 401, 401, 401, 403, 200, 200, 200],
    shared: [401, 401, 401, 401, 401, 401, 200, 200, 200, 200],
    public: [200, 200, 200, 200, 200, 200, 200, 200, 200, 200],
  };
  try {
    for (const mode of ["private", "shared", "public"]) {
      await patchAuth(mode);
      for (const [i, [name, headers]] of cases.entries()) {
        for (const gw of [gw1, gw2]) {
          const r = await call(gw.url, orgA, "chat", "/v1/models", { headers });
          assert.equal(r.status, want[mode]![i], `${mode}, ${name}, ${gw === gw1 ? "gw1" : "gw2"}`);
          if (r.status === 401) {
            assert.match(r.headers.get("www-authenticate") ?? "", /^Key/);
            assert.equal(((await r.json()) as { error: { type: string } }).error.type, "authentication_error");
          } else await r.body?.cancel();
        }
      }
    }
    // Per-key limits (the app is public now, and a valid key still counts): org B's keys may make 1 request/s with a
    // burst of 2 (the gateway config's org override).
    await new Promise((r) => setTimeout(r, 2000)); // the bucket is full again
    const statuses: number[] = [];
    let retryAfter: string | null = null;
    for (let i = 0; i < 4; i++) {
      const r = await call(gw1.url, orgA, "chat", "/v1/models", { headers: auth(keys.apiB!.key) });
      statuses.push(r.status);
      if (r.status === 429) {
        retryAfter = r.headers.get("retry-after");
        assert.equal(((await r.json()) as { error: { type: string } }).error.type, "rate_limit_error");
      } else await r.body?.cancel();
    }
    assert.deepEqual(statuses.slice(0, 2), [200, 200], "the burst");
    assert.ok(statuses.includes(429), `statuses ${statuses.join(",")}`);
    assert.ok(Number(retryAfter) >= 1, `Retry-After ${retryAfter}`);
    assert.ok((await gw1.metric("gantry_gateway_rate_limited_total", { org: orgB, limit: "rate" })) >= 1);
  } finally {
    await patchAuth("private");
  }
  const failures = await gw1.metrics();
  for (const reason of ["missing", "malformed", "unknown", "expired", "other_org"])
    assert.ok(sumMetric(failures, "gantry_gateway_auth_failures_total", { reason }) >= 1, reason);
});

test("management API: an admin key of the org only; keys made there work at once and a revoked one fails within a second on every replica", async () => {
  const base = `${gw1.url}/_gantry/v1/orgs/${orgA}`;
  const doc = (await (await fetch(`${gw1.url}/_gantry/v1/openapi.json`)).json()) as {
    openapi: string;
    paths: Record<string, unknown>;
  };
  assert.equal(doc.openapi, "3.1.0");
  assert.ok(doc.paths["/_gantry/v1/orgs/{org}/keys"] && doc.paths["/_gantry/v1/orgs/{org}/usage"]);
  assert.equal((await fetch(`${base}/keys`)).status, 401);
  assert.equal((await fetch(`${base}/keys`, { headers: auth(keys.apiA!.key) })).status, 403);
  assert.equal((await fetch(`${base}/keys`, { headers: auth(keys.adminB!.key) })).status, 403);
  const listed = (await (await fetch(`${base}/keys`, { headers: auth(keys.adminA!.key) })).json()) as {
    keys: Array<{ id: string }>;
  };
  assert.ok(listed.keys.some((k) => k.id === keys.apiA!.id));
  const apps = (await (await fetch(`${base}/apps`, { headers: auth(keys.adminA!.key) })).json()) as {
    apps: Array<{ name: string; url: string; ready: { status: string } }>;
  };
  assert.deepEqual(
    apps.apps.map((a) => [a.name, a.url, a.ready.status]),
    [["chat", `${gw1.url}/${orgA}/chat`, "True"]],
  );

  const bad = await fetch(`${base}/keys`, {
    method: "POST",
    headers: { ...auth(keys.adminA!.key), "content-type": "application/json" },
    body: JSON.stringify({ scope: "superuser" }),
  });
  assert.equal(bad.status, 400);
  const created = await fetch(`${base}/keys`, {
    method: "POST",
    headers: { ...auth(keys.adminA!.key), "content-type": "application/json" },
    body: JSON.stringify({ name: "temp", expires: "1d" }),
  });
  assert.equal(created.status, 201);
  const k = (await created.json()) as { id: string; key: string; scope: string; expires: string };
  secrets.push(k.key.split(":")[1]!);
  assert.equal(k.scope, "api");
  assert.ok(Date.parse(k.expires) > Date.now() + 23 * 3600_000);
  for (const gw of [gw1, gw2])
    await eventually(
      "the new key on both replicas",
      async () =>
        (await call(gw.url, orgA, "chat", "/v1/models", { headers: auth(k.key) })).status === 200 ? true : undefined,
      5000,
      50,
    );

  const revoked = await fetch(`${base}/keys/${k.id}`, { method: "DELETE", headers: auth(keys.adminA!.key) });
  assert.equal(revoked.status, 204);
  const t0 = Date.now();
  // When the first refused request was sent (its own round trip, and the answers before it, are not the revocation's).
  const times = await Promise.all(
    [gw1, gw2].map((gw) =>
      eventually(
        "the revoked key refused",
        async () => {
          const sent = Date.now();
          const r = await call(gw.url, orgA, "chat", "/v1/models", { headers: auth(k.key) });
          await r.body?.cancel();
          return r.status === 401 ? sent - t0 : undefined;
        },
        5000,
        20,
      ),
    ),
  );
  assert.ok(Math.max(...times) < 1000, `revocation took ${times.join(" / ")} ms`);
  assert.equal(
    (await fetch(`${base}/keys/${k.id}`, { method: "DELETE", headers: auth(keys.adminA!.key) })).status,
    404,
  );
});

test("load from two gateway replicas adds up in the operator; a client disconnect mid-stream frees the pod's sequences", async () => {
  const pod = await readyPod("chat");
  const podUrl = `http://${pod.status!.podIP}:11434`;
  const podMetric = async (name: string) => sumMetric(await (await fetch(`${podUrl}/metrics`)).text(), name);
  const generatedBefore = await podMetric("gantry_generated_tokens_total");
  const controllers: AbortController[] = [];
  const streams = [gw1, gw1, gw2].map(async (gw, i) => {
    const ac = new AbortController();
    controllers.push(ac);
    const r = await postChat(
      gw.url,
      "/v1/chat/completions",
      { model: "chat:latest", messages: [{ role: "user", content: `long ${i}` }], max_tokens: LONG, stream: true },
      ac.signal,
    );
    assert.equal(r.status, 200);
    const reader = r.body!.getReader();
    await reader.read(); // the stream has started
    return reader;
  });
  const readers = await Promise.all(streams);
  await eventually(
    "3 requests in flight at the operator (2 via gateway 1, 1 via gateway 2)",
    async () =>
      (await op.metric("gantry_operator_app_in_flight_requests", { namespace: orgA, app: "chat" })) === 3
        ? true
        : undefined,
    10_000,
    100,
  );
  assert.equal(await podMetric("gantry_busy_sequences"), 3);
  for (const ac of controllers) ac.abort();
  for (const r of readers) await r.cancel().catch(() => undefined);
  const t0 = Date.now();
  await eventually(
    "the pod's sequences freed",
    async () => ((await podMetric("gantry_busy_sequences")) === 0 ? true : undefined),
    5000,
    20,
  );
  const freedMs = Date.now() - t0;
  const generated = (await podMetric("gantry_generated_tokens_total")) - generatedBefore;
  assert.ok(generated < 3 * LONG * 0.5, `generation stopped early (${generated} tokens, freed after ${freedMs} ms)`);
  await eventually(
    "the operator sees the load gone",
    async () =>
      (await op.metric("gantry_operator_app_in_flight_requests", { namespace: orgA, app: "chat" })) === 0
        ? true
        : undefined,
    10_000,
    100,
  );
});

test("SIGTERM to a gateway process: new requests are refused, a running stream goes on until the deadline and ends cleanly; the pod's sequence is freed", async () => {
  const pod = await readyPod("chat");
  const podMetric = async (name: string) =>
    sumMetric(await (await fetch(`http://${pod.status!.podIP}:11434/metrics`)).text(), name);
  const gw3 = await startTestGateway(c.cp, { shutdownSeconds: 1 });
  const r = await postChat(gw3.url, "/api/chat", {
    model: "chat:latest",
    messages: [{ role: "user", content: "long" }],
    options: { num_predict: LONG },
  });
  assert.equal(r.status, 200);
  const reader = r.body!.getReader();
  await reader.read(); // the stream has started
  const t0 = Date.now();
  const exited = gw3.stop("SIGTERM");
  await eventually(
    "new requests refused",
    async () => {
      const x = await call(gw3.url, orgA, "chat", "/api/version", { headers: auth(keys.apiA!.key) }).catch(
        () => undefined,
      );
      return x === undefined || x.status === 503 ? true : undefined;
    },
    5000,
    20,
  );
  const text = await readRest(reader);
  const endedMs = Date.now() - t0;
  const last = JSON.parse(text.trim().split("\n").at(-1)!) as { done?: boolean; eval_count?: number; error?: string };
  if (last.error !== undefined) {
    // cut at the deadline, with an error line the ollama client throws, not a truncated stream
    assert.match(last.error, /shutting down/);
    assert.ok(endedMs >= 900, `the stream went on until the deadline (ended ${endedMs} ms after SIGTERM)`);
  } else assert.deepEqual([last.done, last.eval_count], [true, LONG], "or it finished whole before the deadline");
  assert.equal(await exited, 0);
  await eventually(
    "the pod's sequence freed",
    async () => ((await podMetric("gantry_busy_sequences")) === 0 ? true : undefined),
    5000,
    20,
  );
});

test("usage per key and app survives a gateway restart and adds up across replicas; tokens match the answers", async () => {
  const base = `${gw1.url}/_gantry/v1/orgs/${orgA}`;
  // Writes by this test's requests only: those of the earlier tests depend on how many seconds they took.
  const writesBefore = await gw2.metric("gantry_gateway_usage_writes_total", { result: "ok" });
  const created = (await (
    await fetch(`${base}/keys`, {
      method: "POST",
      headers: { ...auth(keys.adminA!.key), "content-type": "application/json" },
      body: JSON.stringify({ name: "metered" }),
    })
  ).json()) as { id: string; key: string };
  secrets.push(created.key.split(":")[1]!);
  await eventually("the key on gateway 2", async () =>
    (await call(gw2.url, orgA, "chat", "/api/version", { headers: auth(created.key) })).status === 200
      ? true
      : undefined,
  );
  let prompt = 0,
    completion = 0;
  const ask = async (gw: TestGateway, stream: boolean) => {
    const openai = new OpenAI({ baseURL: `${gw.url}/${orgA}/chat/v1`, apiKey: created.key });
    if (!stream) {
      const r = await openai.chat.completions.create({
        model: "chat:latest",
        messages: [{ role: "user", content: "usage" }],
        max_tokens: 5,
      });
      prompt += r.usage!.prompt_tokens;
      completion += r.usage!.completion_tokens;
      return;
    }
    const s = await openai.chat.completions.create({
      model: "chat:latest",
      messages: [{ role: "user", content: "usage stream" }],
      max_tokens: 7,
      stream: true,
      stream_options: { include_usage: true },
    });
    for await (const chunk of s)
      if (chunk.usage) {
        prompt += chunk.usage.prompt_tokens;
        completion += chunk.usage.completion_tokens;
      }
  };
  await ask(gw1, false);
  await ask(gw1, true);
  // Ollama's native API, through the other replica (eval counts).
  const o = await new Ollama({ host: `${gw2.url}/${orgA}/chat`, headers: auth(created.key) }).generate({
    model: "chat:latest",
    prompt: "native",
    options: { num_predict: 4 },
  });
  prompt += o.prompt_eval_count;
  completion += o.eval_count;
  assert.equal(
    await gw1.metric("gantry_gateway_usage_tokens_total", {
      org: orgA,
      app: "chat",
      key_id: created.id,
      type: "completion",
    }),
    12,
  );

  const row = async (gw: TestGateway) => {
    const r = await fetch(`${gw.url}/_gantry/v1/orgs/${orgA}/usage`, { headers: auth(keys.adminA!.key) });
    assert.equal(r.status, 200);
    const u = (await r.json()) as {
      usage: Array<{ app: string; keyId: string; requests: number; promptTokens: number; completionTokens: number }>;
    };
    return u.usage
      .filter((x) => x.keyId === created.id && x.app === "chat")
      .reduce(
        (s, x) => ({
          requests: s.requests + x.requests,
          prompt: s.prompt + x.promptTokens,
          completion: s.completion + x.completionTokens,
        }),
        { requests: 0, prompt: 0, completion: 0 },
      );
  };
  // 4 requests: the version call (no tokens), two through gateway 1, one through gateway 2.
  const want = { requests: 4, prompt, completion };
  await eventually(
    "both replicas' usage written",
    async () => {
      const r = await row(gw1);
      return r.requests === want.requests ? r : undefined;
    },
    15_000,
  );
  assert.deepEqual(await row(gw1), want);

  await gw1.stop();
  const day = new Date().toISOString().slice(0, 10);
  const cm = JSON.parse(kubectl(c.cp, ["get", "configmap", `gantry-usage-${day}`, "-n", orgA, "-o", "json"])) as {
    data: Record<string, string>;
  };
  assert.ok(cm.data["usage.json"]!.includes(created.id));
  await gw1.restart();
  assert.deepEqual(await row(gw1), want, "after a restart, from the ConfigMap");
  const writes =
    (await gw1.metric("gantry_gateway_usage_writes_total", { result: "ok" })) +
    (await gw2.metric("gantry_gateway_usage_writes_total", { result: "ok" })) -
    writesBefore;
  assert.ok(writes <= 20, `usage writes: ${writes}`);
});

test("scale from zero: held requests get keep-alives and are answered; the hold cap gives 429, the warm-up timeout 503; a burst scales up; idle goes back to zero", async () => {
  await createApp(
    c,
    modelApp(orgA, "sleepy", {
      model: MODEL,
      modelfile: "PARAMETER temperature 0.7\n",
      auth: "private",
      resources: { profile: "cpu", cpu: "1" },
      server: { parallel: 2, contextLength: 32768 },
      scaling: { minReplicas: 0, maxReplicas: 2, targetConcurrency: 1, scaleDownDelay: "4s" },
    }),
  );
  await waitForCondition(c, orgA, "sleepy", "Ready", "True", "ScaledToZero");
  for (const gw of [gw1, gw3])
    await eventually("the gateway knows the app", async () => {
      const r = await fetch(`${gw.url}/_gantry/v1/orgs/${orgA}/apps`, { headers: auth(keys.adminA!.key) });
      const { apps } = (await r.json()) as { apps: Array<{ name: string }> };
      return apps.some((a) => a.name === "sleepy") ? true : undefined;
    });
  const h = { ...auth(keys.apiA!.key), "content-type": "application/json" };
  const chatBody = (stream: boolean, max = 6) =>
    JSON.stringify({ model: "sleepy:latest", messages: [{ role: "user", content: "wake" }], max_tokens: max, stream });
  // Nothing wakes the app while only gateway 3 holds requests for it: the warm-up timeout (1 s) answers 503.
  const r503 = await call(gw3.url, orgA, "sleepy", "/v1/chat/completions", {
    method: "POST",
    headers: h,
    body: chatBody(false),
  });
  assert.equal(r503.status, 503);
  assert.ok(Number(r503.headers.get("retry-after")) >= 1);
  assert.equal(((await r503.json()) as { error: { code: string } }).error.code, "warmup_timeout");
  assert.equal((await readApp(c, orgA, "sleepy")).spec.replicas ?? 0, 0, "a replica whose reports fail woke nothing");

  // Gateway 3 now holds for long: a stream it holds gets keep-alive comments (the head and the first one come after
  // 1 s) while nothing wakes the app, and is answered once gateway 1's requests have woken it. While it is held (for
  // certain: nothing else can end the hold before gateway 1 is asked), the next request is over the hold cap (1).
  await gw3.stop();
  await gw3.restart(quiet(300));
  const sseRes = await call(gw3.url, orgA, "sleepy", "/v1/chat/completions", {
    method: "POST",
    headers: h,
    body: chatBody(true),
  });
  assert.equal(sseRes.status, 200);
  assert.equal(await gw3.metric("gantry_gateway_held_requests", { org: orgA, app: "sleepy" }), 1);
  const capped = await call(gw3.url, orgA, "sleepy", "/v1/chat/completions", {
    method: "POST",
    headers: h,
    body: chatBody(false),
  });
  assert.equal(capped.status, 429);
  assert.ok(Number(capped.headers.get("retry-after")) >= 1);
  const t0 = Date.now();
  const ndjson = call(gw1.url, orgA, "sleepy", "/api/chat", {
    method: "POST",
    headers: h,
    body: JSON.stringify({
      model: "sleepy:latest",
      messages: [{ role: "user", content: "wake" }],
      options: { num_predict: 4 },
    }),
  });
  const plain = new OpenAI({ baseURL: `${gw1.url}/${orgA}/sleepy/v1`, apiKey: keys.apiA!.key }).chat.completions.create(
    {
      model: "sleepy:latest",
      messages: [{ role: "user", content: "wake" }],
      max_tokens: 3,
    },
  );
  const sseLines = await lines(sseRes);
  const coldMs = Date.now() - t0;
  assert.equal(sseLines[0], ": warming up", "keep-alive comments while the app warms");
  const events = sseLines.filter((l) => l.startsWith("data: "));
  assert.equal(events.at(-1), "data: [DONE]");
  // Tokens that end inside a UTF-8 character are sent with the next one: fewer content events than tokens.
  const chunks = events
    .slice(0, -1)
    .map(
      (e) =>
        JSON.parse(e.slice(6)) as { choices: Array<{ delta: { content?: string }; finish_reason: string | null }> },
    );
  assert.ok(
    chunks.some((ch) => ch.choices[0]?.delta.content),
    "content streamed",
  );
  assert.equal(chunks.at(-1)?.choices[0]?.finish_reason, "length");
  const nd = (await lines(await ndjson))
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { done: boolean; message?: { content: string }; eval_count?: number });
  assert.ok(
    nd.every((x) => typeof x.done === "boolean"),
    "every NDJSON line is a chat chunk",
  );
  assert.equal(nd.at(-1)?.eval_count, 4);
  assert.equal((await plain).usage?.completion_tokens, 3);
  assert.ok((await gw1.metric("gantry_gateway_cold_start_seconds_count", { org: orgA, app: "sleepy" })) >= 1);
  console.log(`# cold start through the gateway: ${coldMs} ms`);

  // A burst beyond targetConcurrency (1) scales toward maxReplicas (2).
  const ac = new AbortController();
  const burst = [0, 1, 2].map(() =>
    call(gw1.url, orgA, "sleepy", "/v1/chat/completions", {
      method: "POST",
      headers: h,
      body: chatBody(true, LONG),
      signal: ac.signal,
    })
      .then(async (r) => {
        const reader = r.body!.getReader();
        while (!(await reader.read()).done);
      })
      .catch(() => undefined),
  );
  await eventually(
    "2 replicas",
    async () => ((await readApp(c, orgA, "sleepy")).spec.replicas === 2 ? true : undefined),
    30_000,
  );
  ac.abort();
  await Promise.all(burst);
  await eventually(
    "back to zero replicas after the idle delay",
    async () => {
      const d = await c.kc.makeApiClient(AppsV1Api).readNamespacedDeployment({ name: "sleepy", namespace: orgA });
      return d.spec?.replicas === 0 ? true : undefined;
    },
    60_000,
  );
});

test("a gateway the operator does not hear (a refused token, or no operator) answers 503 at once for an app at zero, naming the cause and the fix; /readyz says it", async () => {
  await waitForCondition(c, orgA, "sleepy", "Ready", "True", "ScaledToZero");
  const { operatorTokenFile: _, ...noToken } = config;
  const body = JSON.stringify({ model: "sleepy:latest", messages: [{ role: "user", content: "wake" }], max_tokens: 2 });
  const h = { ...auth(keys.apiA!.key), "content-type": "application/json" };
  const hold = { timeoutSeconds: 60, maxPerApp: 4, keepAliveSeconds: 1 }; // held this long before the fix
  const rounds = [
    // Out of the cluster without operatorTokenFile: the operator answers every report 401.
    {
      config: { ...noToken, hold },
      cause: /refuses its load reports \(401\): no token was sent/,
      fix: /operatorTokenFile.*kubectl create token gantry-gateway/,
    },
    {
      config: { ...noToken, hold, operatorUrls: [] },
      cause: /reports load to no operator \(operatorUrls is empty\)/,
      fix: /set operatorUrls \(--operator-url\)/,
    },
  ];
  const gw = await startTestGateway(c.cp, rounds[0]!.config);
  try {
    for (const { config: roundConfig, cause, fix } of rounds) {
      if (roundConfig !== rounds[0]!.config) {
        await gw.stop();
        await gw.restart(roundConfig);
      }
      await eventually("the gateway knows the app", async () => {
        const r = await fetch(`${gw.url}/_gantry/v1/orgs/${orgA}/apps`, { headers: auth(keys.adminA!.key) });
        return (
          ((await r.json()) as { apps: Array<{ name: string }> }).apps.some((a) => a.name === "sleepy") || undefined
        );
      });
      const r = await call(gw.url, orgA, "sleepy", "/v1/chat/completions", { method: "POST", headers: h, body });
      const e = ((await r.json()) as { error: { code: string; message: string } }).error;
      assert.equal(r.status, 503, e.message);
      assert.equal(e.code, "app_unavailable");
      assert.match(e.message, cause);
      assert.match(e.message, fix);
      assert.ok(Number(r.headers.get("retry-after")) >= 1);
      const ready = (await (await fetch(`${gw.url}/readyz`)).json()) as { status: string; scaleFromZero: string };
      assert.equal(ready.status, "ok", "running apps are still served");
      assert.match(ready.scaleFromZero, cause);
    }
    assert.equal((await readApp(c, orgA, "sleepy")).spec.replicas ?? 0, 0);
  } finally {
    await gw.stop();
  }
  const ready = (await (await fetch(`${gw1.url}/readyz`)).json()) as { scaleFromZero: string };
  assert.equal(ready.scaleFromZero, "ok", "a gateway with an accepted token can wake apps");
});

test("apps sharing a model volume: each lists and serves only its own model; the other's is 404", async () => {
  // chat and sleepy name the same volume ("models"), which also holds the model both were made from.
  const h = { ...auth(keys.apiA!.key), "content-type": "application/json" };
  const ids = async (app: string) => {
    const r = await call(gw1.url, orgA, app, "/v1/models", { headers: h });
    assert.equal(r.status, 200);
    return ((await r.json()) as { data: Array<{ id: string }> }).data.map((m) => m.id);
  };
  const tags = async (app: string) => {
    const r = await call(gw1.url, orgA, app, "/api/tags", { headers: h });
    return ((await r.json()) as { models: Array<{ name: string }> }).models.map((m) => m.name);
  };
  assert.deepEqual(await ids("chat"), ["chat:latest"]);
  assert.deepEqual(await tags("chat"), ["chat:latest"]);
  const other = await call(gw1.url, orgA, "chat", "/v1/chat/completions", {
    method: "POST",
    headers: h,
    body: JSON.stringify({ model: "sleepy:latest", messages: [{ role: "user", content: "hi" }], max_tokens: 2 }),
  });
  assert.equal(other.status, 404);
  assert.equal(((await other.json()) as { error: { type: string } }).error.type, "not_found_error");
  for (const [rest, body] of [
    ["/api/generate", { model: MODEL, prompt: "hi", options: { num_predict: 2 } }],
    ["/api/show", { model: "sleepy:latest" }],
  ] as const) {
    const r = await call(gw1.url, orgA, "chat", rest, { method: "POST", headers: h, body: JSON.stringify(body) });
    assert.equal(r.status, 404, rest);
    assert.match(((await r.json()) as { error: string }).error, /not found/);
  }
  assert.equal(
    (await call(gw1.url, orgA, "chat", "/v1/models/sleepy:latest", { headers: h })).status,
    404,
    "the other app's model by id",
  );
  // sleepy (at zero replicas) wakes for the listing and shows its own model only.
  assert.deepEqual(await ids("sleepy"), ["sleepy:latest"]);
  assert.deepEqual(await tags("sleepy"), ["sleepy:latest"]);
  const r = await call(gw1.url, orgA, "sleepy", "/api/chat", {
    method: "POST",
    headers: h,
    body: JSON.stringify({ model: "chat:latest", messages: [{ role: "user", content: "hi" }], stream: false }),
  });
  assert.equal(r.status, 404);
});

test("an app deleted while a stream is in flight: the stream ends with an error event, new requests get 404", async () => {
  const r = await postChat(gw1.url, "/v1/chat/completions", {
    model: "chat:latest",
    messages: [{ role: "user", content: "long" }],
    max_tokens: LONG,
    stream: true,
  });
  assert.equal(r.status, 200);
  const reader = r.body!.getReader();
  await reader.read();
  kubectl(c.cp, ["delete", "modelapp", "chat", "-n", orgA, "--wait=false"]);
  const text = await readRest(reader);
  const last = text
    .trim()
    .split("\n")
    .filter((l) => l.startsWith("data: "))
    .at(-1);
  assert.match(last ?? "", /"message":"app \\"chat\\" was deleted"/);
  const after = await call(gw1.url, orgA, "chat", "/v1/models", { headers: auth(keys.apiA!.key) });
  assert.equal(after.status, 404);
});

test("an app that cannot start without a change is answered 503 with the reason from its status, not held", async () => {
  await createApp(
    c,
    modelApp(orgA, "broken", { model: "hf.co/acme/no-such-GGUF:Q8_0", auth: "private", scaling: { minReplicas: 1 } }),
  );
  await waitForCondition(c, orgA, "broken", "Ready", "False", "ModelNotFound", 120_000);
  const r = await eventually("503 from the gateway", async () => {
    const x = await call(gw1.url, orgA, "broken", "/v1/chat/completions", {
      method: "POST",
      headers: { ...auth(keys.apiA!.key), "content-type": "application/json" },
      body: JSON.stringify({ model: "broken", messages: [{ role: "user", content: "hi" }] }),
    });
    return x.status === 503 ? x : (await x.body?.cancel(), undefined);
  });
  assert.ok(Number(r.headers.get("retry-after")) >= 1);
  const e = ((await r.json()) as { error: { message: string; type: string } }).error;
  assert.equal(e.type, "unavailable_error");
  assert.match(e.message, /ModelNotFound: .*acme\/no-such-GGUF/);
});

test("no secret ever appears in a gateway's or the operator's logs", () => {
  const logs = gw1.logs() + gw2.logs() + gw3.logs() + op.logs();
  assert.ok(logs.length > 1000);
  for (const s of secrets) assert.ok(!logs.includes(s), "a key secret was logged");
  assert.match(gw1.logs(), /"keyId":"[0-9a-f]{16}"/, "key ids are logged");
});
