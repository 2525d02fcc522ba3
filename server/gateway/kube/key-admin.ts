// Writing and deleting key Secrets through the API server: used by the gateway's management API and by
// `gantry keys` (which works from the kubeconfig like kubectl and hashes the secret on the client).
import type { CoreV1Api } from "@kubernetes/client-node";
import {
  generateApiKey,
  KEY_LABEL,
  keySecret,
  keySecretName,
  readKeySecret,
  type KeyRecord,
  type KeyScope,
} from "../2-authenticate/api-keys.ts";

const statusOf = (e: unknown): number | undefined => (e as { code?: number })?.code;

export async function createKeySecret(
  core: CoreV1Api,
  org: string,
  opts: { scope: KeyScope; name?: string; expires?: Date; now?: Date },
): Promise<{ record: KeyRecord; key: string }> {
  for (let attempt = 0; ; attempt++) {
    const k = generateApiKey();
    const body = keySecret(org, k, { ...opts, now: opts.now ?? new Date() });
    try {
      const created = await core.createNamespacedSecret({ namespace: org, body });
      const record = readKeySecret(created);
      if (!record) throw new Error("the API server returned an unreadable key Secret");
      return { record, key: k.key };
    } catch (e) {
      if (statusOf(e) === 409 && attempt < 3) continue; // an id already taken: draw another
      throw e;
    }
  }
}

export async function listKeySecrets(core: CoreV1Api, org: string): Promise<KeyRecord[]> {
  const list = await core.listNamespacedSecret({ namespace: org, labelSelector: KEY_LABEL });
  return list.items
    .map((s) => readKeySecret(s))
    .filter((r): r is KeyRecord => r !== undefined)
    .sort((a, b) => a.created.localeCompare(b.created));
}

/** Deletes a key's Secret; false when the org has no such key. */
export async function revokeKeySecret(core: CoreV1Api, org: string, id: string): Promise<boolean> {
  try {
    const s = await core.readNamespacedSecret({ name: keySecretName(id), namespace: org });
    if (s.metadata?.labels?.[KEY_LABEL] === undefined) return false;
    await core.deleteNamespacedSecret({ name: keySecretName(id), namespace: org });
    return true;
  } catch (e) {
    if (statusOf(e) === 404) return false;
    throw e;
  }
}
