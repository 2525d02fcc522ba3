// Load reports to the operator's autoscaler: every reportIntervalSeconds, and at once when a request starts waiting
// for an app at zero replicas, the gateway POSTs its in-flight counts to every operator replica (the format is in
// operator/api/v1alpha1/load-report.ts). Snapshots, not deltas: several gateways add up in the operator, and a lost
// report is repaired by the next one. Authenticated with the gateway's ServiceAccount token (re-read every minute:
// projected tokens rotate). An operator URL whose host name resolves to several addresses (a headless Service: the
// chart's operator Service is one) gets the report at each address, so every operator replica hears it. When no
// operator is configured, or every operator refuses the reports (401/403), nothing this gateway does can start a
// replica: `cannotWake` says why and how to fix it, and requests for apps at zero get that at once (cold-start.ts).
import dns from "node:dns/promises";
import fs from "node:fs";
import net from "node:net";
import { LOAD_REPORT_PATH, type LoadReport } from "../../../operator/api/v1alpha1/load-report.ts";
import type { Logger } from "../../common/logger.ts";
import type { LoadSink } from "../ports.ts";

export const IN_CLUSTER_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token";
const TOKEN_REREAD_MS = 60_000;
const SETUP = 'docs/gateway.md, "Outside the cluster"';

/** Why reports to no operator wake nothing, and the fix. */
export const NO_OPERATOR =
  "it reports load to no operator (operatorUrls is empty): set operatorUrls (--operator-url) to the operator's " +
  `address and operatorTokenFile to a ServiceAccount token the operator accepts (${SETUP})`;

/** Why refused reports wake nothing, and the fix. Pure. */
export function refusedReports(status: number, tokenFile: string | undefined): string {
  const cause =
    status === 403
      ? "the token's ServiceAccount is not in the operator's loadReports.serviceAccounts"
      : tokenFile
        ? `the token in ${tokenFile} is not one the API server knows (expired?)`
        : "no token was sent, as operatorTokenFile is not set and there is no in-cluster ServiceAccount token";
  return (
    `the operator refuses its load reports (${status}): ${cause}; give it a token the operator accepts with ` +
    "operatorTokenFile (--operator-token-file), e.g. from `kubectl create token gantry-gateway -n gantry-system " +
    `--duration=24h\` (${SETUP})`
  );
}

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
  /** Each operator address's last definite answer: accepted, or refused with this status. */
  private readonly answers = new Map<string, number>();
  private wakeListeners: Array<() => void> = [];
  private why: string | undefined;

  constructor(o: OperatorLoadReporter["o"]) {
    this.o = o;
    if (o.urls.length === 0) this.why = NO_OPERATOR;
  }

  /** Why nothing this gateway reports can start a replica now (LoadSink); undefined while it can, or is not known. */
  get cannotWake(): string | undefined {
    return this.why;
  }

  onWakeChange(fn: () => void): void {
    this.wakeListeners.push(fn);
  }

  /** An operator address answered a report: 2xx accepted, 401/403 refused. */
  private answered(url: string, status: number): void {
    this.answers.set(url, status);
    const statuses = [...this.answers.values()];
    const refused = statuses.find((s) => s === 401 || s === 403);
    const why =
      refused !== undefined && statuses.every((s) => s === 401 || s === 403)
        ? refusedReports(refused, this.tokenFile())
        : undefined;
    if (why !== undefined) this.token.at = 0; // a fixed token file is read again at the next report
    if (why === this.why) return;
    this.why = why;
    if (why) this.o.logger.warn({}, `apps at zero replicas cannot be woken from this gateway: ${why}`);
    else this.o.logger.info({}, "the operator accepts this gateway's load reports again");
    for (const fn of this.wakeListeners) fn();
  }

  private tokenFile(): string | undefined {
    return this.o.tokenFile ?? (fs.existsSync(IN_CLUSTER_TOKEN) ? IN_CLUSTER_TOKEN : undefined);
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
      const file = this.tokenFile();
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
          if (r.status === 401 || r.status === 403 || r.status < 300) this.answered(url, r.status);
          if (r.status === 401 || r.status === 403) {
            this.o.onResult?.("refused"); // warned by answered(), with the fix
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
