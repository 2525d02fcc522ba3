// Load reports to the operator's autoscaler: every reportIntervalSeconds, and at once when a request starts waiting
// for an app at zero replicas, the gateway POSTs its in-flight counts to every operator replica (the format is in
// operator/api/v1alpha1/load-report.ts). Snapshots, not deltas: several gateways add up in the operator, and a lost
// report is repaired by the next one. Authenticated with the gateway's ServiceAccount token (re-read every minute:
// projected tokens rotate). An operator URL whose host name resolves to several addresses (a headless Service: the
// chart's operator Service is one) gets the report at each address, so every operator replica hears it.
import dns from "node:dns/promises";
import fs from "node:fs";
import net from "node:net";
import { LOAD_REPORT_PATH, type LoadReport } from "../../operator/api/v1alpha1/load-report.ts";
import type { Logger } from "../common/logger.ts";
import type { LoadSink } from "./ports.ts";

export const IN_CLUSTER_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token";
const TOKEN_REREAD_MS = 60_000;

export class OperatorLoadReporter implements LoadSink {
  private readonly o: {
    gateway: string;
    urls: readonly string[];
    tokenFile?: string;
    intervalMs: number;
    snapshot: () => LoadReport["apps"];
    logger: Logger;
    onResult?: (result: "ok" | "error" | "refused") => void;
  };
  private timer: NodeJS.Timeout | undefined;
  private sending: Promise<void> | undefined;
  private again = false;
  private token: { value: string | undefined; at: number } = { value: undefined, at: 0 };
  private warned = new Set<string>();

  constructor(o: OperatorLoadReporter["o"]) {
    this.o = o;
  }

  start(): void {
    if (this.o.urls.length === 0) return;
    const tick = () => {
      this.timer = setTimeout(() => {
        void this.send().finally(tick);
      }, this.o.intervalMs);
      this.timer.unref();
    };
    tick();
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  wake(): void {
    if (this.o.urls.length === 0) return;
    void this.send();
  }

  private bearer(now: number): string | undefined {
    if (now - this.token.at > TOKEN_REREAD_MS) {
      const file = this.o.tokenFile ?? (fs.existsSync(IN_CLUSTER_TOKEN) ? IN_CLUSTER_TOKEN : undefined);
      let value: string | undefined;
      try {
        value = file ? fs.readFileSync(file, "utf8").trim() || undefined : undefined;
      } catch (err) {
        this.o.logger.warn({ file, err: String(err) }, "cannot read the load-report token");
      }
      this.token = { value, at: now };
    }
    return this.token.value;
  }

  /** One report to every operator replica; a call while one is running sends one more right after it. */
  send(): Promise<void> {
    if (this.sending) {
      this.again = true;
      return this.sending;
    }
    this.sending = (async () => {
      do {
        this.again = false;
        await this.sendOnce();
      } while (this.again);
    })().finally(() => {
      this.sending = undefined;
    });
    return this.sending;
  }

  private async sendOnce(): Promise<void> {
    const body = JSON.stringify({ gateway: this.o.gateway, apps: this.o.snapshot() } satisfies LoadReport);
    const token = this.bearer(Date.now());
    const targets = (await Promise.all(this.o.urls.map((u) => this.resolve(u)))).flat();
    await Promise.all(
      targets.map(async (url) => {
        try {
          const r = await fetch(`${url.replace(/\/+$/, "")}${LOAD_REPORT_PATH}`, {
            method: "POST",
            headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
            body,
            signal: AbortSignal.timeout(3000),
          });
          await r.body?.cancel();
          if (r.status === 401 || r.status === 403) {
            this.o.onResult?.("refused");
            this.warnOnce(
              url,
              `the operator refused the load report (${r.status}): check operatorTokenFile and the operator's loadReports.serviceAccounts`,
            );
          } else if (r.status >= 300) {
            this.o.onResult?.("error");
            this.warnOnce(url, `the operator answered the load report with ${r.status}`);
          } else {
            this.o.onResult?.("ok");
            this.warned.delete(url);
          }
        } catch (err) {
          this.o.onResult?.("error");
          this.warnOnce(url, `load report failed: ${String(err)}`);
        }
      }),
    );
  }

  private readonly resolved = new Map<string, { urls: string[]; at: number }>();

  /** The URL once per address its host resolves to (cached 10 s; the URL itself when it cannot be resolved). */
  private async resolve(url: string): Promise<string[]> {
    const u = new URL(url);
    const host = u.hostname.replace(/^\[|\]$/g, "");
    if (net.isIP(host)) return [url];
    const hit = this.resolved.get(url);
    if (hit && Date.now() - hit.at < 10_000) return hit.urls;
    let urls = [url];
    try {
      const addrs = await dns.lookup(host, { all: true });
      if (addrs.length > 1)
        urls = addrs.map((a) => {
          const x = new URL(url);
          x.hostname = a.family === 6 ? `[${a.address}]` : a.address;
          return x.toString();
        });
    } catch {
      /* unresolvable now: fetch reports the failure */
    }
    this.resolved.set(url, { urls, at: Date.now() });
    return urls;
  }

  private warnOnce(url: string, msg: string): void {
    if (this.warned.has(url)) return;
    this.warned.add(url);
    this.o.logger.warn({ operator: url }, msg);
  }
}
