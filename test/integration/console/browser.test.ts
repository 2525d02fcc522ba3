// The console in a real browser (Debian's Chromium through playwright-core, headless) against a real gateway and
// operator on the test control plane, with a real app pod: what a person who installed the chart does in it, each
// page checked with axe-core (no serious or critical violations) and screenshot at desktop and phone width
// (test/.artifacts/console). The first admin key is made with `gantry keys create`, as the README and NOTES say.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { CoreV1Api } from "@kubernetes/client-node";
import OpenAI from "openai";
import type { Page } from "playwright-core";
import { PROCESS_RUNTIME_LABEL } from "../../cluster/kwok-config.ts";
import { POD_GATEWAY } from "../../cluster/runtime/pod-network.ts";
import { createTestNamespace } from "../../cluster/test-cluster.ts";
import {
  accessibilityProblems,
  launchBrowser,
  screenshots,
  SCREENSHOTS,
  type TestBrowser,
} from "../../support/browser.ts";
import { startTestGateway, type TestGateway } from "../../support/gateway.ts";
import { startHubServer, type HubServer } from "../../support/hub-server.ts";
import { tinyModelPath } from "../../support/models.ts";
import { startTestOperator, type TestOperator } from "../../support/operator.ts";
import { freePort, GANTRY } from "../../support/server.ts";
import { buildConsole } from "../../../server/setup/console-build.ts";
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
const MODEL = "hf.co/acme/tiny-chat-GGUF:Q8_0";
const XSS_NAME = "<img src=x onerror=alert(1)>";
let c: OperatorCluster, op: TestOperator, hub: HubServer, gw: TestGateway, gw2: TestGateway;
let org: string, emptyOrg: string, admin: string, browser: TestBrowser, page: Page;
let createdKey = "";

const gantry = async (args: string[]) =>
  (await run(process.execPath, [GANTRY, ...args], { env: { ...process.env, KUBECONFIG: c.cp.kubeconfig } })).stdout;

before(async () => {
  await buildConsole(); // dist/console, as `npm run build` makes it: what the gateway serves
  c = await operatorCluster();
  org = await createTestNamespace(c.kc, "org-console");
  emptyOrg = await createTestNamespace(c.kc, "org-console-empty");
  hub = await startHubServer({ host: "0.0.0.0" });
  await hub.register({
    org: "acme",
    repo: "tiny-chat-GGUF",
    files: { "tiny-chat-Q8_0.gguf": await tinyModelPath() },
  });
  const port = await freePort();
  op = await startTestOperator(c.cp, {
    watchNamespace: org,
    hubUrl: `http://${POD_GATEWAY}:${hub.port}`,
    podLabels: { [PROCESS_RUNTIME_LABEL]: "true" },
    gatewayUrl: `http://127.0.0.1:${port}`,
    leaderElection: {
      name: "gantry-operator-console-test",
      leaseDurationSeconds: 4,
      renewDeadlineSeconds: 3,
      retryPeriodSeconds: 1,
    },
  });
  const config = { usage: { flushSeconds: 1 } };
  gw = await startTestGateway(c.cp, config, port);
  gw2 = await startTestGateway(c.cp, config);
  await createApp(
    c,
    modelApp(org, "chat", {
      model: MODEL,
      auth: "private",
      resources: { profile: "cpu", cpu: "1" },
      scaling: { minReplicas: 1, maxReplicas: 1 },
    }),
  );
  await createApp(c, modelApp(org, "spare", { model: MODEL, auth: "shared", resources: { profile: "cpu", cpu: "1" } }));
  admin = (await gantry(["keys", "create", "--org", org, "--scope", "admin", "--name", "first admin"])).trim();
  browser = await launchBrowser(gw.url);
  page = await browser.context.newPage();
  page.on("dialog", (d) => {
    browser.problems.push(`a dialog opened: ${d.message()}`);
    void d.dismiss();
  });
});

after(async () => {
  // The gateway's and the operator's logs next to the screenshots, for a reviewer or a failed run.
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  if (gw) fs.writeFileSync(path.join(SCREENSHOTS, "gateway.log"), gw.logs());
  if (op) fs.writeFileSync(path.join(SCREENSHOTS, "operator.log"), op.logs());
  await browser?.close();
  await gw?.stop();
  await gw2?.stop();
  await op?.stop();
  const core = c?.kc.makeApiClient(CoreV1Api);
  for (const ns of [org, emptyOrg]) if (ns) await core?.deleteNamespace({ name: ns }).catch(() => undefined);
  await hub?.close();
});

/** Checks the page as it is now: accessibility, then screenshots. */
async function check(p: Page, name: string): Promise<void> {
  assert.deepEqual(await accessibilityProblems(p), [], `axe on ${name}`);
  await screenshots(p, name);
}

const signIn = async (p: Page, key: string) => {
  await p.goto(`${gw.url}/_gantry/console/`);
  await p.getByLabel("Admin key of your org").fill(key);
  await p.getByRole("button", { name: "Sign in" }).click();
};

test("sign in with an admin key: the apps list shows the org's app; the key is in no browser storage", async () => {
  await page.goto(`${gw.url}/_gantry/console/`);
  await page.getByLabel("Admin key of your org").waitFor();
  await check(page, "01-sign-in");
  await signIn(page, admin);
  await page.locator("#apps").getByRole("link", { name: "chat" }).waitFor();
  assert.match(await page.locator("header").innerText(), new RegExp(org));
  const stored = await page.evaluate("JSON.stringify([{ ...localStorage }, { ...sessionStorage }, document.cookie])");
  assert.equal(stored, '[{},{},""]', "nothing in localStorage or sessionStorage; the cookie is HttpOnly");
  const cookies = await browser.context.cookies();
  assert.equal(cookies.length, 1);
  assert.equal(cookies[0]!.httpOnly, true);
  assert.equal(cookies[0]!.sameSite, "Strict");
  assert.ok(!cookies[0]!.value.includes(admin.split(":")[1]!));
  await waitForCondition(c, org, "chat", "Ready", "True", "Serving", 180_000);
  await page.locator("#apps .badge", { hasText: "Ready" }).waitFor({ timeout: 30_000 });
  await check(page, "02-apps");
});

test("the session works on another gateway replica (sessions are kept in the cluster)", async () => {
  const cookie = (await browser.context.cookies())[0]!;
  const r = await fetch(`${gw2.url}/_gantry/v1/session`, { headers: { cookie: `${cookie.name}=${cookie.value}` } });
  assert.equal(r.status, 200);
  assert.equal(((await r.json()) as { org: string }).org, org);
});

test("create a key: its secret is shown once with a copy button and a curl line; it calls the app", async () => {
  await page.getByRole("link", { name: "Keys" }).click();
  await page.getByRole("button", { name: "Create key" }).click();
  await page.getByLabel("Name").fill("ci");
  await page.getByRole("button", { name: "Create key" }).click();
  const value = page.locator("#new-key-value");
  await value.waitFor();
  createdKey = await value.inputValue();
  assert.match(createdKey, /^[0-9a-f]{16}:[A-Za-z0-9_-]{43}$/);
  await page.getByRole("button", { name: "Copy key" }).waitFor();
  assert.match(await page.locator(".new-key pre").innerText(), new RegExp(`Authorization: Key ${createdKey}`));
  await check(page, "03-keys-new-key");
  await page.getByRole("button", { name: "I have copied it" }).click();
  await value.waitFor({ state: "detached" });
  assert.ok(!(await page.content()).includes(createdKey.split(":")[1]!), "the secret is gone from the page");
  const id = createdKey.split(":")[0]!;
  await page.locator(`tr[data-key-id="${id}"]`).waitFor();
  // The same key as `gantry keys list` sees, and the other way round.
  assert.match(await gantry(["keys", "list", "--org", org]), new RegExp(`${id}.*\\bci\\b`));
  const cli = JSON.parse(await gantry(["keys", "create", "--org", org, "--name", "from-cli", "--output", "json"])) as {
    id: string;
  };
  await page.reload();
  await page.locator(`tr[data-key-id="${cli.id}"]`).waitFor();

  const client = new OpenAI({ baseURL: `${gw.url}/${org}/chat/v1`, apiKey: createdKey, maxRetries: 0 });
  const r = await client.chat.completions.create({
    model: MODEL,
    messages: [{ role: "user", content: "hi" }],
    max_tokens: 4,
  });
  assert.ok(r.usage && r.usage.completion_tokens > 0);
});

test("a key named like HTML is shown as text", async () => {
  await page.getByRole("button", { name: "Create key" }).click();
  await page.getByLabel("Name").fill(XSS_NAME);
  await page.getByRole("button", { name: "Create key" }).click();
  await page.getByRole("button", { name: "I have copied it" }).click();
  const cell = page.locator(".key-name", { hasText: XSS_NAME });
  await cell.waitFor();
  assert.equal(await cell.innerText(), XSS_NAME);
  assert.equal(await page.locator("#keys img").count(), 0, "no element was made from the name");
  await check(page, "04-keys");
});

test("the request shows in usage (per key and app) and in the app's chart; the key's last use is listed", async () => {
  const id = createdKey.split(":")[0]!;
  await page.getByRole("link", { name: "Usage" }).click();
  const row = page.locator("#usage-by-key tr", { hasText: id });
  await eventually("the key's usage row", async () => {
    await page.reload();
    await row.waitFor({ timeout: 5000 });
    return true;
  });
  assert.match(await row.innerText(), new RegExp(`${id}\\s+1\\s+0\\s+\\d+\\s+[1-9]`));
  await page.locator("#usage-by-app tr", { hasText: "chat" }).waitFor();
  await check(page, "05-usage");
  const [download] = await Promise.all([
    page.waitForEvent("download"),
    page.getByRole("button", { name: "Export CSV" }).click(),
  ]);
  const csv = await (await download.createReadStream()).toArray();
  assert.match(
    Buffer.concat(csv).toString(),
    new RegExp(`^hour,app,key_id,requests[^\\n]*\\n(.*\\n)*.*,chat,${id},1,0,`),
  );

  await page.getByRole("link", { name: "Keys" }).click();
  const keyRow = page.locator(`tr[data-key-id="${id}"]`);
  await keyRow.waitFor();
  assert.doesNotMatch(await keyRow.innerText(), /never\s*Revoke$/, "last used is shown");

  await page.getByRole("link", { name: "Apps" }).click();
  await page.locator("#apps").getByRole("link", { name: "chat" }).click();
  await page.locator("#traffic-summary", { hasText: /[1-9]\d* requests?\b/ }).waitFor();
  assert.match(await page.locator("#app-url").innerText(), new RegExp(`/${org}/chat$`));
  assert.match(
    await page.getByLabel("openai snippet").innerText(),
    new RegExp(`model: "${MODEL.replace(/[.]/g, "\\.")}"`),
  );
});

test("the app page follows the server container's log", async () => {
  await page.locator("#logs", { hasText: /\S/ }).waitFor();
  await page.getByText("(server container, following)").waitFor();
  const before = await page.locator("#logs").innerText();
  // A new request makes a new log line, which arrives while the page is open.
  await new OpenAI({ baseURL: `${gw.url}/${org}/chat/v1`, apiKey: admin, maxRetries: 0 }).chat.completions.create({
    model: MODEL,
    messages: [{ role: "user", content: "again" }],
    max_tokens: 2,
  });
  await eventually("a new log line", async () =>
    (await page.locator("#logs").innerText()).length > before.length ? true : undefined,
  );
  await check(page, "06-app");
});

test("scaling bounds edited on the app page change the ModelApp", async () => {
  await page.getByLabel("Max replicas").fill("2");
  await page.getByRole("button", { name: "Save scaling" }).click();
  await page.getByText("Saved: the app scales between 1 and 2 replicas.").waitFor();
  const app = await readApp(c, org, "chat");
  assert.equal(app.spec.scaling?.maxReplicas, 2);
  assert.equal(app.spec.scaling?.minReplicas, 1);
  await page.getByLabel("Min replicas").fill("3");
  await page.getByRole("button", { name: "Save scaling" }).click();
  await page.getByText("minReplicas 3 exceeds maxReplicas 2").waitFor();
});

test("deleting an app from its page, after a confirmation, deletes the ModelApp", async () => {
  await page.getByRole("link", { name: "Apps" }).click();
  await page.locator("#apps").getByRole("link", { name: "spare" }).click();
  await page.getByRole("button", { name: "Delete app" }).click();
  const dialog = page.getByRole("dialog");
  assert.match(await dialog.innerText(), /The app spare and its pods go away/);
  await dialog.getByRole("button", { name: "Delete", exact: true }).click();
  await page.locator("#apps").waitFor(); // back on the list
  await eventually("the ModelApp gone", async () =>
    (await readApp(c, org, "spare").then(
      (a) => a.metadata.deletionTimestamp !== undefined,
      (e: unknown) => (e as { code?: number }).code === 404,
    ))
      ? true
      : undefined,
  );
});

test("revoking the key in the console: the client gets 401", async () => {
  const id = createdKey.split(":")[0]!;
  await page.getByRole("link", { name: "Keys" }).click();
  await page.locator(`tr[data-key-id="${id}"]`).getByRole("button", { name: "Revoke" }).click();
  const dialog = page.getByRole("dialog");
  await dialog.waitFor();
  assert.match(await dialog.innerText(), new RegExp(`Requests with key ${id} get 401`));
  await dialog.getByRole("button", { name: "Revoke key" }).click();
  await page.locator(`tr[data-key-id="${id}"]`).waitFor({ state: "detached" });
  const client = new OpenAI({ baseURL: `${gw.url}/${org}/chat/v1`, apiKey: createdKey, maxRetries: 0 });
  await assert.rejects(
    client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hi" }], max_tokens: 2 }),
    (e: unknown) => (e as { status?: number }).status === 401,
  );
});

test("a playground chat streams the app's answer with time to first token and tokens/s", async () => {
  await page.getByRole("link", { name: "Playground" }).click();
  await page.getByLabel("Max tokens").fill("24");
  await page.getByLabel("Message").fill("Tell me a story");
  await page.getByRole("button", { name: "Send" }).click();
  const stats = page.locator("#chat li.assistant .stats");
  await stats.waitFor({ timeout: 60_000 });
  assert.match(await stats.innerText(), /^\d+ tokens · time to first token \d+ ms( · [\d.]+ tokens\/s)?$/);
  assert.ok((await page.locator("#chat li.assistant .content").innerText()).length > 0);
  await check(page, "07-playground");
});

test("a request without the CSRF token is refused, even from the console's own page", async () => {
  const status = await page.evaluate(
    (o) =>
      fetch(`/_gantry/v1/orgs/${o}/keys`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ name: "forged" }),
      }).then((r) => r.status),
    org,
  );
  assert.equal(status, 403);
  assert.doesNotMatch(await gantry(["keys", "list", "--org", org]), /forged/);
});

test("an api key cannot sign in and is told why; an org without apps says how to deploy one", async () => {
  await browser.context.clearCookies(); // signed out: the pages below sign in anew
  const p = await browser.context.newPage();
  const apiKey = (await gantry(["keys", "create", "--org", org, "--name", "api"])).trim();
  await signIn(p, apiKey);
  await p.getByText(/this is an api key of org .*: it can call the org's apps but not manage the org/).waitFor();
  await check(p, "08-sign-in-api-key");
  const emptyAdmin = (await gantry(["keys", "create", "--org", emptyOrg, "--scope", "admin"])).trim();
  await signIn(p, emptyAdmin);
  await p.getByRole("heading", { name: "No apps yet" }).waitFor();
  assert.match(await p.getByLabel("deploy command").innerText(), new RegExp(`gantry deploy .* --org ${emptyOrg}`));
  assert.match(await p.getByLabel("ModelApp YAML").innerText(), /kind: ModelApp/);
  await check(p, "09-apps-empty");
  await p.close();
});

test("revoking the admin key of a session ends that session at once", async () => {
  const second = JSON.parse(
    await gantry(["keys", "create", "--org", org, "--scope", "admin", "--name", "second", "--output", "json"]),
  ) as { id: string; key: string };
  await browser.context.clearCookies();
  const p = await browser.context.newPage();
  await signIn(p, second.key);
  await p.locator("#apps").waitFor();
  await gantry(["keys", "revoke", second.id, "--org", org]);
  // The apps list refreshes every few seconds: its next call is refused and the page says why.
  await p.getByText(/the admin key it was made from was revoked|no console session/).waitFor();
  await p.getByLabel("Admin key of your org").waitFor();
  await p.close();
});

test("no page asked another host for anything and none broke the CSP", () => {
  assert.deepEqual(browser.foreignRequests, []);
  assert.deepEqual(browser.problems, []);
});
