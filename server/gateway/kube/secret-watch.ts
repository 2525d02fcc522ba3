// A watch of the Secrets carrying a label, in one namespace or all: API keys and console sessions.
import { CoreV1Api, type KubeConfig, type V1Secret } from "@kubernetes/client-node";
import { KubeWatch, resourcePath } from "../../common/kube-watch.ts";
import type { Logger } from "../../common/logger.ts";

export function labelledSecrets(
  kc: KubeConfig,
  o: { name: string; label: string; namespace?: string | undefined; logger: Logger },
): KubeWatch<V1Secret> {
  const core = kc.makeApiClient(CoreV1Api);
  const ns = o.namespace;
  return new KubeWatch<V1Secret>(kc, {
    name: o.name,
    path: resourcePath("/api/v1", "secrets", ns),
    list: (page) =>
      ns
        ? core.listNamespacedSecret({ namespace: ns, labelSelector: o.label, ...page })
        : core.listSecretForAllNamespaces({ labelSelector: o.label, ...page }),
    labelSelector: o.label,
    logger: o.logger,
  });
}
