// `npm run bench console`: the console's first page in headless Chromium against a real gateway on the test control
// plane (an org with a few ModelApps): bytes transferred (compressed bodies and headers, as the browser's network
// layer counts them) and the time from navigation to the apps list shown. Cold: a fresh browser profile (nothing
// cached) per round; warm: the same profile reloading (hashed assets come from the cache, only the page and the API
// calls travel). Also the bare API call the list needs, as the floor.
import { CoreV1Api } from "@kubernetes/client-node";
import type { Page, Request } from "playwright-core";
import { createTestNamespace } from "../cluster/test-cluster.ts";
import { createApp, modelApp, operatorCluster } from "../integration/operator/helpers.ts";
import { launchBrowser } from "../support/browser.ts";
import { startTestGateway } from "../support/gateway.ts";
import { buildConsole } from "../../server/setup/console-build.ts";
import { GANTRY } from "../support/server.ts";
import { execFileSync } from "node:child_process";
import { median, spread } from "./table.ts";

export interface ConsoleBenchRow {
  case: string;
  kb: number;
  requests: number;
  ms: string;
  medianMs: number;
}

/** Bytes the page's requests moved (headers + encoded bodies) while `fn` ran. */
async function measured(page: Page, fn: () => Promise<void>): Promise<{ bytes: number; requests: number }> {
  const done: Array<Promise<number>> = [];
  const onFinished = (r: Request) =>
    done.push(
      r.sizes().then(
        (s) => s.responseBodySize + s.responseHeadersSize + s.requestHeadersSize + s.requestBodySize,
        () => 0,
      ),
    );
  page.on("requestfinished", onFinished);
  await fn();
  page.off("requestfinished", onFinished);
  const sizes = await Promise.all(done);
  return { bytes: sizes.reduce((a, b) => a + b, 0), requests: sizes.length };
}

export async function benchConsole(rounds = 5): Promise<ConsoleBenchRow[]> {
  await buildConsole();
  const c = await operatorCluster();
  const org = await createTestNamespace(c.kc, "org-console-bench");
  for (const name of ["chat", "code", "embed"])
    await createApp(c, modelApp(org, name, { model: `hf.co/acme/${name}-GGUF:Q4_K_M`, auth: "private" }));
  const gw = await startTestGateway(c.cp, {});
  const admin = execFileSync(process.execPath, [GANTRY, "keys", "create", "--org", org, "--scope", "admin"], {
    env: { ...process.env, KUBECONFIG: c.cp.kubeconfig },
    encoding: "utf8",
  }).trim();
  const appsUrl = `${gw.url}/_gantry/console/`;
  const listShown = (page: Page) => page.locator("#apps tbody tr").nth(2).waitFor();
  const cold: Array<{ ms: number; bytes: number; requests: number }> = [];
  const warm: typeof cold = [];
  const signInPage: typeof cold = [];
  const api: number[] = [];
  try {
    for (let i = 0; i < rounds; i++) {
      // The sign-in page, nothing cached.
      const b = await launchBrowser(gw.url);
      const page = await b.context.newPage();
      let t = performance.now();
      const s = await measured(page, async () => {
        await page.goto(appsUrl);
        await page.getByLabel("Admin key of your org").waitFor();
      });
      signInPage.push({ ms: performance.now() - t, ...s });
      await page.getByLabel("Admin key of your org").fill(admin);
      await page.getByRole("button", { name: "Sign in" }).click();
      await listShown(page);
      // Signed in, cache emptied: the first page of a returning person on a new machine.
      const cdp = await b.context.newCDPSession(page);
      await cdp.send("Network.clearBrowserCache");
      t = performance.now();
      const c1 = await measured(page, async () => {
        await page.goto(appsUrl);
        await listShown(page);
      });
      cold.push({ ms: performance.now() - t, ...c1 });
      t = performance.now();
      const w = await measured(page, async () => {
        await page.goto(appsUrl);
        await listShown(page);
      });
      warm.push({ ms: performance.now() - t, ...w });
      const cookie = (await b.context.cookies())[0]!;
      t = performance.now();
      await (
        await fetch(`${gw.url}/_gantry/v1/orgs/${org}/apps`, { headers: { cookie: `${cookie.name}=${cookie.value}` } })
      ).text();
      api.push(performance.now() - t);
      await b.close();
    }
  } finally {
    await gw.stop();
    await c.kc
      .makeApiClient(CoreV1Api)
      .deleteNamespace({ name: org })
      .catch(() => undefined);
  }
  const row = (name: string, xs: typeof cold): ConsoleBenchRow => ({
    case: name,
    kb: median(xs.map((x) => x.bytes)) / 1024,
    requests: median(xs.map((x) => x.requests)),
    ms: spread(xs.map((x) => x.ms)),
    medianMs: median(xs.map((x) => x.ms)),
  });
  return [
    row("sign-in page, nothing cached", signInPage),
    row("apps list, signed in, nothing cached", cold),
    row("apps list, signed in, cached assets", warm),
    {
      case: "floor: GET /orgs/<org>/apps alone (fetch)",
      kb: Number.NaN,
      requests: 1,
      ms: spread(api),
      medianMs: median(api),
    },
  ];
}
