// In-process implementations of the gateway's seams (ports.ts): apps and endpoints set by the caller, keys in a Map,
// usage kept in memory. For a one-off local server (`gantry run app.ts::chat`), the benchmark and tests; the cluster
// uses kube/. Nothing here is persisted.
import { generateApiKey, hashSecret, type KeyRecord, type KeyScope } from "./2-authenticate/api-keys.ts";
import type { AppInfo, AppSource, CreatedKey, Endpoint, KeyStore, UsageStore } from "./ports.ts";
import { mergeUsage, UsageTable, type RequestUsage, type UsageRow } from "./5-account/usage.ts";

export class StaticApps implements AppSource {
  readonly synced = true;
  private readonly apps = new Map<string, { app: AppInfo; endpoints: Endpoint[] }>();
  private readonly listeners: Array<(org: string, name: string) => void> = [];

  /** Adds or replaces an app and its pods (e.g. one local `gantry serve` at http://127.0.0.1:11434). */
  set(app: AppInfo, endpoints: Endpoint[]): void {
    this.apps.set(`${app.org}/${app.name}`, { app, endpoints });
    this.changed(app.org, app.name);
  }

  delete(org: string, name: string): void {
    this.apps.delete(`${org}/${name}`);
    this.changed(org, name);
  }

  get(org: string, name: string): AppInfo | undefined {
    return this.apps.get(`${org}/${name}`)?.app;
  }

  list(org: string): AppInfo[] {
    return [...this.apps.values()].map((a) => a.app).filter((a) => a.org === org);
  }

  endpoints(org: string, name: string): readonly Endpoint[] {
    return this.apps.get(`${org}/${name}`)?.endpoints ?? [];
  }

  onChange(fn: (org: string, name: string) => void): void {
    this.listeners.push(fn);
  }

  private changed(org: string, name: string): void {
    for (const l of this.listeners) l(org, name);
  }
}

/** An endpoint for a server at `origin` (http://host:port). */
export const endpointAt = (origin: string, ready = true): Endpoint => ({
  id: new URL(origin).host,
  origin: origin.replace(/\/+$/, ""),
  ready,
});

export class MemoryKeys implements KeyStore {
  readonly synced = true;
  private readonly keys = new Map<string, KeyRecord>();
  /** Records by key id (the per-request lookup), kept with the map. */
  private readonly ids = new Map<string, KeyRecord[]>();
  private version = 0;
  private readonly now: () => number;

  constructor(now: () => number = Date.now) {
    this.now = now;
  }

  byId(id: string): readonly KeyRecord[] {
    return this.ids.get(id) ?? [];
  }

  private reindex(id: string): void {
    const records = [...this.keys.values()].filter((k) => k.id === id);
    if (records.length) this.ids.set(id, records);
    else this.ids.delete(id);
  }

  list(org: string): KeyRecord[] {
    return [...this.keys.values()].filter((k) => k.org === org).sort((a, b) => a.created.localeCompare(b.created));
  }

  async create(org: string, opts: { scope: KeyScope; name?: string; expires?: Date }): Promise<CreatedKey> {
    const k = generateApiKey();
    const record: KeyRecord = {
      id: k.id,
      org,
      hash: hashSecret(k.secret),
      scope: opts.scope,
      name: opts.name ?? "",
      created: new Date(this.now()).toISOString(),
      ...(opts.expires ? { expires: opts.expires.toISOString() } : {}),
      version: String(++this.version),
    };
    this.keys.set(`${org}/${k.id}`, record);
    this.reindex(k.id);
    return { record, key: k.key };
  }

  async revoke(org: string, id: string): Promise<boolean> {
    const had = this.keys.delete(`${org}/${id}`);
    this.reindex(id);
    return had;
  }
}

export class MemoryUsage implements UsageStore {
  readonly synced = true;
  private readonly tables = new Map<string, UsageTable>();

  record(u: RequestUsage): void {
    let t = this.tables.get(u.org);
    if (!t) {
      t = new UsageTable();
      this.tables.set(u.org, t);
    }
    t.add(u);
  }

  query(org: string, from: number, to: number): UsageRow[] {
    return mergeUsage([this.tables.get(org)?.list() ?? []], from, to);
  }

  async flush(): Promise<void> {}
}
