// Which kubeconfig a gantry process uses, as kubectl decides it, from values its config schema parsed: a named file,
// else KUBECONFIG (several files merged, the first one's current context winning), else ~/.kube/config, else the pod's
// service account.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import type { Dispatcher } from "undici";

type RequestContext = Parameters<KubeConfig["applySecurityAuthentication"]>[0];

/**
 * A KubeConfig whose API requests share one connection pool. client-node 2.0 gives every request a new undici Agent,
 * so every request opened a new TCP connection and did a TLS handshake on both sides (docs/decisions/0012): here the
 * first request's Agent is kept for all later ones of the same cluster and user. Not for a user whose exec plugin may
 * hand out client certificates that change: those keep an Agent per request.
 */
export class PooledKubeConfig extends KubeConfig {
  private pool: { key: string; dispatcher: Dispatcher } | undefined;

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const user = this.getCurrentUser();
    const fresh = context.getDispatcher();
    if (!fresh || user?.exec) return;
    const key = JSON.stringify([this.getCurrentCluster(), user]);
    if (this.pool?.key === key) context.setDispatcher(this.pool.dispatcher);
    else {
      void this.pool?.dispatcher.close().catch(() => undefined);
      this.pool = { key, dispatcher: fresh };
    }
  }
}

export interface KubeConfigSource {
  /** --kubeconfig, or the CLI config file's kubeconfig. */
  file?: string | undefined;
  /** $KUBECONFIG. */
  kubeconfigEnv?: string | undefined;
  /** $KUBERNETES_SERVICE_HOST: set in every pod. */
  inCluster?: boolean;
}

/** Thrown when no kubeconfig exists at all (outside a pod, nothing named, no ~/.kube/config). */
export class NoKubeconfigError extends Error {
  constructor() {
    super("no kubeconfig: set KUBECONFIG, pass --kubeconfig, or create ~/.kube/config");
    this.name = "NoKubeconfigError";
  }
}

export function loadKubeConfig(src: KubeConfigSource): KubeConfig {
  const kc = new PooledKubeConfig();
  const defaultFile = path.join(os.homedir(), ".kube", "config");
  if (src.file) kc.loadFromFile(src.file);
  else if (src.kubeconfigEnv) {
    const [first, ...rest] = src.kubeconfigEnv.split(path.delimiter).filter(Boolean);
    kc.loadFromFile(first!);
    for (const f of rest) {
      const more = new KubeConfig();
      more.loadFromFile(f);
      kc.mergeConfig(more, true);
    }
  } else if (fs.existsSync(defaultFile)) kc.loadFromFile(defaultFile);
  else if (src.inCluster) kc.loadFromCluster();
  else throw new NoKubeconfigError();
  return kc;
}
