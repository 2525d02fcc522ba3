// Which kubeconfig a gantry process uses, as kubectl decides it, from values its config schema parsed: a named file,
// else KUBECONFIG (several files merged, the first one's current context winning), else ~/.kube/config, else the pod's
// service account.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { KubeConfig } from "@kubernetes/client-node";

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
  const kc = new KubeConfig();
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
