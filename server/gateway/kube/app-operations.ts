// The management API's app operations through the API server, with the same client `gantry apps` uses
// (server/platform/apps-client.ts; logs through pod-log.ts), under the gateway's own ServiceAccount (the chart grants
// patch and delete on ModelApps, list on pods and get on pods/log).
import type { KubeConfig } from "@kubernetes/client-node";
import { AppError } from "../../common/errors.ts";
import { AppsClient } from "../../platform/apps-client.ts";
import { pullProgress } from "../../platform/deploy-wait.ts";
import { PlatformError } from "../../platform/platform-error.ts";
import type { AppAdmin, LogOptions } from "../management/app-admin.ts";
import { streamPodLog } from "./pod-log.ts";

/** Calls the API server as org `org`'s apps client; a failure becomes a 502 with the API server's sentence. */
async function asApi<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof AppError) throw e;
    throw new AppError("UPSTREAM_FAILED", e instanceof PlatformError ? e.message : String(e));
  }
}

export class KubeAppAdmin implements AppAdmin {
  private readonly kc: KubeConfig;

  constructor(kc: KubeConfig) {
    this.kc = kc;
  }

  private client(org: string): AppsClient {
    const server = this.kc.getCurrentCluster()?.server ?? "(unknown server)";
    return new AppsClient({ kc: this.kc, context: this.kc.getCurrentContext(), org, server });
  }

  async scale(org: string, app: string, bounds: { minReplicas?: number; maxReplicas?: number }): Promise<boolean> {
    const c = this.client(org);
    return asApi(async () => {
      if (!(await c.get(app))) return false;
      await c.setScaling(app, bounds);
      return true;
    });
  }

  async pullProgress(org: string, app: string): Promise<string | undefined> {
    const c = this.client(org);
    const found = await c.get(app).catch(() => undefined);
    return found ? pullProgress(c, found).catch(() => undefined) : undefined;
  }

  delete(org: string, app: string): Promise<boolean> {
    return asApi(() => this.client(org).delete(app));
  }

  async logs(
    org: string,
    app: string,
    o: LogOptions,
    onLine: (pod: string, line: string) => void,
    signal: AbortSignal,
  ): Promise<void> {
    const c = this.client(org);
    const found = await asApi(() => c.get(app));
    if (!found) throw new AppError("NOT_FOUND", `org "${org}" has no app "${app}"`);
    const pods = (await asApi(() => c.pods(found))).filter((p) => !p.metadata?.deletionTimestamp);
    if (pods.length === 0)
      throw new AppError(
        "CONFLICT",
        `app "${app}" has no pods${(found.status?.replicas ?? 0) === 0 ? " (scaled to zero: a request starts one)" : ""}`,
      );
    await Promise.all(
      pods.map((pod) => {
        const name = pod.metadata!.name!;
        const opts = { namespace: org, pod: name, container: o.container, follow: o.follow, tailLines: o.tail };
        return streamPodLog(this.kc, opts, (l) => onLine(name, l), signal);
      }),
    );
  }
}
