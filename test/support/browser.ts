// A real browser for the console's tests: Debian's Chromium (installed with apt-get under a lock when missing: CI
// starts on a fresh machine as root; browser downloads are not possible here), driven by playwright-core, headless,
// with a fresh profile per launch. Pages are checked with axe-core in the same browser, and screenshot at desktop and
// phone width into test/.artifacts/console (ignored by git).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import axe from "axe-core";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { withDirLock } from "../../server/common/dir-lock.ts";
import { REPO } from "./server.ts";

const run = promisify(execFile);
export const CHROMIUM = "/usr/bin/chromium";
export const SCREENSHOTS = path.join(REPO, "test", ".artifacts", "console");
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
export const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };

/** Chromium from Debian's packages, installed once (a lock keeps parallel runs from racing apt). */
export async function ensureChromium(log: (line: string) => void = () => undefined): Promise<string> {
  if (fs.existsSync(CHROMIUM)) return CHROMIUM;
  const lock = path.join(process.env.GANTRY_CACHE || path.join(os.homedir(), ".cache", "gantry"), "locks", "chromium");
  await withDirLock(lock, async () => {
    if (fs.existsSync(CHROMIUM)) return;
    log("installing chromium from Debian's packages (apt-get, about a minute)");
    const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
    await run("apt-get", ["update", "-qq"], { env, maxBuffer: 64 << 20 });
    await run("apt-get", ["install", "-y", "-qq", "chromium"], { env, maxBuffer: 64 << 20 });
  });
  assert.ok(fs.existsSync(CHROMIUM), `${CHROMIUM} is missing after apt-get install chromium`);
  return CHROMIUM;
}

export interface TestBrowser {
  context: BrowserContext;
  /** Requests the pages made to any host but the one given (nothing may leave the gateway's origin). */
  foreignRequests: string[];
  /** Console messages of CSP violations and page errors. */
  problems: string[];
  close(): Promise<void>;
}

/** A fresh headless Chromium profile whose pages may talk to `origin` only. */
export async function launchBrowser(origin: string, viewport = DESKTOP): Promise<TestBrowser> {
  const executablePath = await ensureChromium();
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    args: ARGS,
    viewport,
    acceptDownloads: true,
  });
  const foreignRequests: string[] = [];
  const problems: string[] = [];
  const watch = (page: Page) => {
    page.on("request", (r) => {
      const u = r.url();
      if (!u.startsWith(`${origin}/`) && !u.startsWith("blob:") && !u.startsWith("data:")) foreignRequests.push(u);
    });
    page.on("console", (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text());
    });
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  };
  context.on("page", watch);
  for (const p of context.pages()) watch(p);
  return {
    context,
    foreignRequests,
    problems,
    close: async () => {
      await context.close();
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** axe-core in the page: its serious and critical violations, as lines (none expected). */
export async function accessibilityProblems(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol: the page's CSP (no inline script) does not apply to it.
  await page.evaluate(axe.source);
  const result = (await page.evaluate('axe.run(document, { resultTypes: ["violations"] })')) as axe.AxeResults;
  return result.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.impact}: ${v.id} (${v.help}) at ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
}

/** Screenshots of the page as it is, at desktop and at phone width: <name>-desktop.png, <name>-phone.png. */
export async function screenshots(page: Page, name: string): Promise<void> {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  const size = page.viewportSize() ?? DESKTOP;
  for (const [label, viewport] of [
    ["desktop", DESKTOP],
    ["phone", PHONE],
  ] as const) {
    await page.setViewportSize(viewport);
    // Charts redraw at the new width on their ResizeObserver: two frames later the page is laid out.
    await page.evaluate("new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))");
    await page.screenshot({ path: path.join(SCREENSHOTS, `${name}-${label}.png`), fullPage: true });
    // Works at this width: nothing makes the page scroll sideways (wide tables scroll inside their own box).
    const width = (await page.evaluate("document.documentElement.scrollWidth")) as number;
    assert.ok(width <= viewport.width, `${name} at ${label} width is ${width} px wide, wider than ${viewport.width}`);
  }
  await page.setViewportSize(size);
}
