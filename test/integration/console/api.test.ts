// The console's server side through a real gateway (in process, memory stores) over real HTTP: sign-in and its
// cookie, sessions (expiry, revocation, CSRF), the throttle of failed sign-ins, the pages' headers, the playground's
// way into the app pipeline, and 401/403/another org for every management route the console uses. The same code
// against the cluster, driven by a browser: browser.test.ts.
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import zlib from "node:zlib";
import { after, before, test } from "node:test";
import { silentLogger } from "../../../server/common/logger.ts";
import { parseGatewayConfig } from "../../../server/gateway/config.ts";
import { Gateway } from "../../../server/gateway/gateway.ts";
import { createGatewayServer } from "../../../server/gateway/http-server.ts";
import type { Server as HttpServer } from "node:http";
import { endpointAt, MemoryKeys, MemoryUsage, StaticApps } from "../../../server/gateway/memory.ts";
import { buildConsole } from "../../../server/setup/console-build.ts";

let clock = Date.now();
const now = () => clock;
const apps = new StaticApps(),
  keys = new MemoryKeys(now),
  usage = new MemoryUsage();
let gateway: Gateway, server: HttpServer, base: string, pod: http.Server;
let admin: string, adminB: string, apiKey: string, assets: string;
const podSaw: http.IncomingHttpHeaders[] = [];

before(async () => {
  assets = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-console-"));
  await buildConsole(undefined, assets);
  // A stand-in pod that streams a short chat answer and shows the headers it got.
  pod = http.createServer((req, res) => {
    podSaw.push(req.headers);
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      const ev = (o: unknown) => res.write(`data: ${JSON.stringify(o)}\n\n`);
      ev({ choices: [{ delta: { role: "assistant", content: "" } }] });
      ev({ choices: [{ delta: { content: "Hel" } }] });
      ev({ choices: [{ delta: { content: "lo" } }] });
      ev({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 } });
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise<void>((r) => pod.listen(0, "127.0.0.1", () => r()));
  const podUrl = `http://127.0.0.1:${(pod.address() as AddressInfo).port}`;
  apps.set({ org: "acme", name: "chat", auth: "private", uid: "1", servedModel: "tiny" }, [endpointAt(podUrl)]);
  apps.set({ org: "other", name: "chat", auth: "private", uid: "2" }, [endpointAt(podUrl)]);
  const config = parseGatewayConfig({
    console: { sessionIdleMinutes: 30, sessionMaxHours: 2, signInFreeFailures: 2 },
    // The test's client also stands for a TLS-terminating proxy in front (X-Forwarded-Proto), trusted on loopback.
    trustProxy: ["loopback"],
  });
  gateway = new Gateway({ config, apps, keys, usage, logger: silentLogger, now, consoleAssets: assets });
  server = createGatewayServer(config, gateway.handle);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  admin = (await keys.create("acme", { scope: "admin", name: "ops" })).key;
  adminB = (await keys.create("other", { scope: "admin" })).key;
  apiKey = (await keys.create("acme", { scope: "api" })).key;
});

after(async () => {
  server?.closeAllConnections();
  server?.close();
  await gateway?.close(0);
  pod?.close();
  fs.rmSync(assets, { recursive: true, force: true });
});

interface Signed {
  cookie: string;
  csrf: string;
  setCookie: string;
}

/** Signs in (from 127.0.0.1, the address the throttle counts). */
async function signIn(key: string, headers: Record<string, string> = {}): Promise<Signed> {
  const r = await fetch(`${base}/_gantry/v1/session`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ key }),
  });
  assert.equal(r.status, 201, await r.clone().text());
  const setCookie = r.headers.get("set-cookie") ?? "";
  const body = (await r.json()) as { csrfToken: string };
  return { cookie: setCookie.split(";")[0]!, csrf: body.csrfToken, setCookie };
}

const withSession = (s: Signed, csrf = true): Record<string, string> => ({
  cookie: s.cookie,
  ...(csrf ? { "x-csrf-token": s.csrf } : {}),
});

const errorOf = async (r: Response) => ((await r.json()) as { error: { message: string } }).error.message;

test("sign-in exchanges an admin key for an HttpOnly, SameSite=Strict session cookie; Secure behind a trusted TLS proxy", async () => {
  const s = await signIn(admin);
  assert.match(s.setCookie, /^gantry_session=acme\.[A-Za-z0-9_-]{43}; /);
  assert.match(s.setCookie, /; HttpOnly/i);
  assert.match(s.setCookie, /; SameSite=Strict/i);
  assert.match(s.setCookie, /; Path=\/_gantry\//);
  assert.doesNotMatch(s.setCookie, /Secure/i, "plain HTTP: a Secure cookie would never come back");
  assert.ok(!s.setCookie.includes(admin.split(":")[1]!), "the cookie holds no part of the key's secret");
  const who = await fetch(`${base}/_gantry/v1/session`, { headers: { cookie: s.cookie } });
  assert.equal(who.status, 200);
  const body = (await who.json()) as { org: string; keyName: string; csrfToken: string };
  assert.equal(body.org, "acme");
  assert.equal(body.keyName, "ops");
  const tls = await signIn(admin, { "x-forwarded-proto": "https" });
  assert.match(tls.setCookie, /; Secure/i);
  // A fresh session id at every sign-in; the one sent along ends.
  const again = await signIn(admin, { cookie: s.cookie });
  assert.notEqual(again.cookie, s.cookie);
  assert.equal((await fetch(`${base}/_gantry/v1/session`, { headers: { cookie: s.cookie } })).status, 401);
  assert.equal((await fetch(`${base}/_gantry/v1/session`, { headers: { cookie: again.cookie } })).status, 200);
});

test("a wrong key, a malformed one and an api key are refused with what is wrong; repeated failures wait", async () => {
  const post = (key: string) =>
    fetch(`${base}/_gantry/v1/session`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ key }),
    });
  const api = await post(apiKey);
  assert.equal(api.status, 403);
  assert.match(await errorOf(api), /api key of org acme.*admin key.*--scope admin/);
  assert.equal(api.headers.get("set-cookie"), null);
  const id = admin.split(":")[0]!;
  const wrong = await post(`${id}:${"A".repeat(43)}`);
  assert.equal(wrong.status, 401);
  assert.match(await errorOf(wrong), /wrong key/);
  const malformed = await post("not-a-key");
  assert.equal(malformed.status, 401);
  assert.match(await errorOf(malformed), /not a Gantry key/);
  // signInFreeFailures: 2, and two failed above: the next attempt from this address waits, even with a right key.
  const slowed = await post(admin);
  assert.equal(slowed.status, 429);
  assert.match(await errorOf(slowed), /too many failed sign-ins.*try again in \d+ s/);
  assert.ok(Number(slowed.headers.get("retry-after")) >= 1);
  clock += 61_000; // past the longest wait
  await signIn(admin); // a success clears the address's failures
});

test("state-changing calls with a session need its CSRF token; the header key needs none", async () => {
  const s = await signIn(admin);
  const other = await signIn(admin);
  const create = (headers: Record<string, string>) =>
    fetch(`${base}/_gantry/v1/orgs/acme/keys`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify({ name: "ci" }),
    });
  const none = await create(withSession(s, false));
  assert.equal(none.status, 403);
  assert.match(await errorOf(none), /CSRF token/);
  const foreign = await create({ cookie: s.cookie, "x-csrf-token": other.csrf });
  assert.equal(foreign.status, 403, "a token of another session does not count");
  assert.equal((await create(withSession(s))).status, 201);
  assert.equal((await create({ authorization: `Key ${admin}` })).status, 201);
  // Reads need no token; sign-out does.
  assert.equal((await fetch(`${base}/_gantry/v1/orgs/acme/keys`, { headers: withSession(s, false) })).status, 200);
  const out = await fetch(`${base}/_gantry/v1/session`, { method: "DELETE", headers: withSession(s, false) });
  assert.equal(out.status, 403);
  const signedOut = await fetch(`${base}/_gantry/v1/session`, { method: "DELETE", headers: withSession(s) });
  assert.equal(signedOut.status, 204);
  assert.match(signedOut.headers.get("set-cookie") ?? "", /gantry_session=; .*Max-Age=0/);
  assert.equal((await fetch(`${base}/_gantry/v1/orgs/acme/keys`, { headers: withSession(s, false) })).status, 401);
});

test("sessions end after the idle time, at their maximum length, and at once when their key is revoked", async () => {
  const idle = await signIn(admin);
  clock += 29 * 60_000;
  assert.equal((await fetch(`${base}/_gantry/v1/session`, { headers: { cookie: idle.cookie } })).status, 200);
  clock += 29 * 60_000; // active 29 minutes ago: still on
  assert.equal((await fetch(`${base}/_gantry/v1/session`, { headers: { cookie: idle.cookie } })).status, 200);
  clock += 31 * 60_000;
  const ended = await fetch(`${base}/_gantry/v1/orgs/acme/apps`, { headers: { cookie: idle.cookie } });
  assert.equal(ended.status, 401);
  assert.match(await errorOf(ended), /without activity/);

  const long = await signIn(admin);
  for (let i = 0; i < 4; i++) {
    clock += 25 * 60_000;
    assert.equal((await fetch(`${base}/_gantry/v1/session`, { headers: { cookie: long.cookie } })).status, 200);
  }
  clock += 25 * 60_000;
  const max = await fetch(`${base}/_gantry/v1/session`, { headers: { cookie: long.cookie } });
  assert.equal(max.status, 401, "sessionMaxHours: 2 however active");
  assert.match(await errorOf(max), /maximum length/);

  const second = await keys.create("acme", { scope: "admin", name: "temp" });
  const s = await signIn(second.key);
  const mine = await signIn(admin);
  const revoke = await fetch(`${base}/_gantry/v1/orgs/acme/keys/${second.record.id}`, {
    method: "DELETE",
    headers: withSession(mine),
  });
  assert.equal(revoke.status, 204);
  const gone = await fetch(`${base}/_gantry/v1/orgs/acme/keys`, { headers: { cookie: s.cookie } });
  assert.equal(gone.status, 401);
  assert.match(await errorOf(gone), /sign in again|revoked/);
});

test("every management route the console uses: 401 without credentials, 403 for an api key and another org", async () => {
  const sB = await signIn(adminB);
  const routes: Array<[string, string, unknown?]> = [
    ["GET", "keys"],
    ["POST", "keys", { name: "x" }],
    ["DELETE", "keys/0123456789abcdef"],
    ["GET", "apps"],
    ["GET", "apps/chat"],
    ["PATCH", "apps/chat", { minReplicas: 1 }],
    ["DELETE", "apps/chat"],
    ["GET", "apps/chat/logs?tail=10"],
    ["POST", "apps/chat/v1/chat/completions", { model: "tiny", messages: [{ role: "user", content: "hi" }] }],
    ["GET", "usage"],
  ];
  for (const [method, rest, body] of routes) {
    const call = (headers: Record<string, string>) =>
      fetch(`${base}/_gantry/v1/orgs/acme/${rest}`, {
        method,
        headers: { ...(body ? { "content-type": "application/json" } : {}), ...headers },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
    const what = `${method} ${rest}`;
    const anon = await call({});
    assert.equal(anon.status, 401, what);
    assert.match(anon.headers.get("www-authenticate") ?? "", /^Key/, what);
    assert.equal((await call({ authorization: `Key ${apiKey}` })).status, 403, `${what} with an api key`);
    assert.equal((await call({ authorization: `Key ${adminB}` })).status, 403, `${what} with another org's admin key`);
    assert.equal((await call(withSession(sB))).status, 403, `${what} with another org's session`);
  }
  // Another org's session cannot read this org's session routes' data either: it is told its own org.
  const who = (await (await fetch(`${base}/_gantry/v1/session`, { headers: { cookie: sB.cookie } })).json()) as {
    org: string;
  };
  assert.equal(who.org, "other");
});

test("the playground streams an app's answer as the session's key; no cookie or CSRF token reaches the pod", async () => {
  const s = await signIn(admin);
  const before = podSaw.length;
  const r = await fetch(`${base}/_gantry/v1/orgs/acme/apps/chat/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...withSession(s) },
    body: JSON.stringify({ model: "tiny", messages: [{ role: "user", content: "hi" }], stream: true }),
  });
  assert.equal(r.status, 200);
  assert.match(r.headers.get("content-type") ?? "", /event-stream/);
  const text = await r.text();
  assert.match(text, /"Hel"/);
  assert.match(text, /\[DONE\]/);
  const seen = podSaw.at(-1)!;
  assert.equal(podSaw.length, before + 1);
  assert.equal(seen.cookie, undefined);
  assert.equal(seen["x-csrf-token"], undefined);
  assert.equal(seen.authorization, undefined);
  // Metered under the admin key the session was made from; the key list says when it was last used.
  const id = admin.split(":")[0]!;
  const list = (await (await fetch(`${base}/_gantry/v1/orgs/acme/keys`, { headers: withSession(s) })).json()) as {
    keys: Array<{ id: string; lastUsed?: string }>;
  };
  const mine = list.keys.find((k) => k.id === id)!;
  assert.ok(mine.lastUsed && Math.abs(Date.parse(mine.lastUsed) - clock) < 2000, JSON.stringify(mine));
  assert.equal(list.keys.find((k) => k.id === apiKey.split(":")[0])?.lastUsed, undefined, "never used");
  const rows = (
    (await (await fetch(`${base}/_gantry/v1/orgs/acme/usage`, { headers: withSession(s) })).json()) as {
      usage: Array<{ keyId: string; streamed?: number; completionTokens: number; firstTokenMs?: number }>;
    }
  ).usage.filter((u) => u.keyId === id);
  assert.equal(rows[0]?.streamed, 1);
  assert.equal(rows[0]?.completionTokens, 2);
  assert.ok((rows[0]?.firstTokenMs ?? -1) >= 0);
  // Without the CSRF token the playground is a state-changing call like any other.
  const forged = await fetch(`${base}/_gantry/v1/orgs/acme/apps/chat/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", cookie: s.cookie },
    body: JSON.stringify({ model: "tiny", messages: [{ role: "user", content: "hi" }] }),
  });
  assert.equal(forged.status, 403);
});

test("app routes: details, bad scaling bounds named, and 501 without a cluster to change apps in", async () => {
  const h = { authorization: `Key ${admin}`, "content-type": "application/json" };
  const detail = await fetch(`${base}/_gantry/v1/orgs/acme/apps/chat`, { headers: h });
  assert.equal(detail.status, 200);
  assert.equal(((await detail.json()) as { servedModel: string }).servedModel, "tiny");
  assert.equal((await fetch(`${base}/_gantry/v1/orgs/acme/apps/nope`, { headers: h })).status, 404);
  const bad = await fetch(`${base}/_gantry/v1/orgs/acme/apps/chat`, {
    method: "PATCH",
    headers: h,
    body: JSON.stringify({ maxReplicas: 0 }),
  });
  assert.equal(bad.status, 400);
  assert.match(await errorOf(bad), /maxReplicas.*at least 1/);
  const inverted = await fetch(`${base}/_gantry/v1/orgs/acme/apps/chat`, {
    method: "PATCH",
    headers: h,
    body: JSON.stringify({ minReplicas: 3, maxReplicas: 2 }),
  });
  assert.equal(inverted.status, 400);
  assert.match(await errorOf(inverted), /minReplicas 3 exceeds maxReplicas 2/);
  const local = await fetch(`${base}/_gantry/v1/orgs/acme/apps/chat`, { method: "DELETE", headers: h });
  assert.equal(local.status, 501);
  const put = await fetch(`${base}/_gantry/v1/orgs/acme/apps/chat`, { method: "PUT", headers: h });
  assert.equal(put.status, 405);
  assert.equal(put.headers.get("allow"), "GET, PATCH, DELETE, HEAD");
});

test("the console's pages: strict CSP, compressed, hashed assets cached for a year, the page revalidated", async () => {
  const page = await fetch(`${base}/_gantry/console/`);
  assert.equal(page.status, 200);
  assert.match(page.headers.get("content-type") ?? "", /^text\/html/);
  const csp = page.headers.get("content-security-policy") ?? "";
  for (const d of ["default-src 'none'", "script-src 'self'", "frame-ancestors 'none'", "connect-src 'self'"])
    assert.ok(csp.includes(d), `${d} in ${csp}`);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:/);
  assert.equal(page.headers.get("cache-control"), "no-cache");
  const html = await page.text();
  assert.doesNotMatch(html, /<script>|<script [^>]*>[^<]/, "no inline script");
  assert.doesNotMatch(html, /https?:\/\//, "nothing from another host");
  const js = /src="(\/_gantry\/console\/assets\/[^"]+\.js)"/.exec(html)![1]!;
  const raw = await new Promise<http.IncomingMessage>((resolve) =>
    http.get(`${base}${js}`, { headers: { "accept-encoding": "gzip, br" } }, resolve),
  );
  assert.equal(raw.headers["content-encoding"], "br");
  assert.equal(raw.headers["cache-control"], "public, max-age=31536000, immutable");
  assert.equal(raw.headers.vary, "Accept-Encoding");
  const chunks: Buffer[] = [];
  for await (const c of raw) chunks.push(c as Buffer);
  const source = zlib.brotliDecompressSync(Buffer.concat(chunks)).toString();
  assert.match(source, /gantry_session|_gantry\/v1/);
  const gz = await new Promise<http.IncomingMessage>((resolve) =>
    http.get(`${base}${js}`, { headers: { "accept-encoding": "gzip" } }, resolve),
  );
  gz.resume();
  assert.equal(gz.headers["content-encoding"], "gzip");
  const etag = page.headers.get("etag")!;
  assert.equal((await fetch(`${base}/_gantry/console/`, { headers: { "if-none-match": etag } })).status, 304);
  const deep = await fetch(`${base}/_gantry/console/apps/chat`);
  assert.equal(deep.status, 200, "a route of the console is the page");
  assert.equal((await fetch(`${base}/_gantry/console/assets/nope-123.js`)).status, 404);
  const bare = await fetch(`${base}/_gantry/console`, { redirect: "manual" });
  assert.equal(bare.status, 308);
  assert.equal(bare.headers.get("location"), "/_gantry/console/");
  assert.equal((await fetch(`${base}/_gantry/console/`, { method: "POST" })).status, 405);
});
