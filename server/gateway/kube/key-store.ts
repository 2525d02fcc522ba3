// API keys as Secrets labelled gantry.dev/api-key in the org's namespace (keys.ts has the format). A watch keeps every
// key's record in memory, indexed by key id; a deleted Secret (a revoked key) is gone from the index as soon as the
// watch event arrives, which the key verifier's cache respects.
import { CoreV1Api, type KubeConfig, type V1Secret } from "@kubernetes/client-node";
import type { KubeWatch } from "../../common/kube-watch.ts";
import type { Logger } from "../../common/logger.ts";
import { labelledSecrets } from "./secret-watch.ts";
import { KEY_LABEL, keySecretName, readKeySecret, type KeyRecord, type KeyScope } from "../2-authenticate/api-keys.ts";
import type { CreatedKey, KeyStore } from "../ports.ts";
import { createKeySecret, revokeKeySecret } from "./key-admin.ts";

export class KubeKeys implements KeyStore {
  private readonly watch: KubeWatch<V1Secret>;
  private readonly core: CoreV1Api;
  /** "org/id" → record */
  private readonly records = new Map<string, KeyRecord>();
  private readonly ids = new Map<string, KeyRecord[]>();
  private isSynced = false;

  constructor(kc: KubeConfig, o: { namespace?: string; logger: Logger }) {
    this.core = kc.makeApiClient(CoreV1Api);
    this.watch = labelledSecrets(kc, {
      name: "api-key secrets",
      label: KEY_LABEL,
      namespace: o.namespace,
      logger: o.logger,
    });
    this.watch.on((secret, event) => {
      const org = secret.metadata?.namespace ?? "",
        name = secret.metadata?.name ?? "";
      const rec = event === "delete" ? undefined : readKeySecret(secret);
      // The Secret's name is bound to the key id: a Secret whose id does not match its name is not a key.
      if (rec && keySecretName(rec.id) === name) this.put(rec);
      else this.removeByName(org, name);
    });
  }

  get synced(): boolean {
    return this.isSynced;
  }

  async start(): Promise<void> {
    await this.watch.start();
    this.isSynced = true;
  }

  stop(): Promise<void> {
    return this.watch.stop();
  }

  byId(id: string): readonly KeyRecord[] {
    return this.ids.get(id) ?? [];
  }

  list(org: string): KeyRecord[] {
    return [...this.records.values()].filter((r) => r.org === org).sort((a, b) => a.created.localeCompare(b.created));
  }

  async create(org: string, opts: { scope: KeyScope; name?: string; expires?: Date }): Promise<CreatedKey> {
    const created = await createKeySecret(this.core, org, opts);
    this.put(created.record); // usable on this gateway at once; the watch brings it to the others
    return created;
  }

  async revoke(org: string, id: string): Promise<boolean> {
    if (!this.records.has(`${org}/${id}`)) return false;
    await revokeKeySecret(this.core, org, id);
    this.removeByName(org, keySecretName(id));
    return true;
  }

  private put(rec: KeyRecord): void {
    this.removeByName(rec.org, keySecretName(rec.id));
    this.records.set(`${rec.org}/${rec.id}`, rec);
    this.ids.set(rec.id, [...(this.ids.get(rec.id) ?? []), rec]);
  }

  private removeByName(org: string, name: string): void {
    const id = name.startsWith("gantry-key-") ? name.slice("gantry-key-".length) : undefined;
    if (!id || !this.records.delete(`${org}/${id}`)) return;
    const left = (this.ids.get(id) ?? []).filter((r) => r.org !== org);
    if (left.length) this.ids.set(id, left);
    else this.ids.delete(id);
  }
}
