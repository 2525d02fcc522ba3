// Console sessions as Secrets labelled gantry.dev/console-session in the org's namespace, so every gateway replica
// serves every session (the chart runs two behind one Service). A Secret is named after the token's hash and holds
// the hash, the key id, the CSRF secret and the times, never the token. A watch keeps them in memory; a session made
// on another replica a moment ago is waited for (up to a second) rather than read from the API server per request,
// so a made-up cookie costs no API call. Activity is written back at most once a minute per session.
import { CoreV1Api, PatchStrategy, setHeaderOptions, type KubeConfig, type V1Secret } from "@kubernetes/client-node";
import type { KubeWatch } from "../../common/kube-watch.ts";
import type { Logger } from "../../common/logger.ts";
import { labelledSecrets } from "./secret-watch.ts";
import type { SessionRecord, SessionStore } from "../console/session.ts";

export const SESSION_LABEL = "gantry.dev/console-session";
/** Label holding the key id, so a revoked key's sessions are found by a selector. */
export const SESSION_KEY_LABEL = "gantry.dev/console-session-key";
/** lastSeen is written back when the stored one is older than this. */
const TOUCH_WRITE_MS = 60_000;
/** How long a lookup of an unknown session waits for the watch to bring it. */
const MISS_WAIT_MS = 1000;

const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
export const sessionSecretName = (hash: string): string => `gantry-session-${hash.slice(0, 40)}`;
const statusOf = (e: unknown): number | undefined => (e as { code?: number })?.code;

/** A session Secret's record; undefined when it is not one. Pure. */
export function readSessionSecret(s: V1Secret): SessionRecord | undefined {
  const org = s.metadata?.namespace;
  if (!org || !s.data || s.metadata?.deletionTimestamp) return undefined;
  const d = (k: string) => (s.data![k] ? Buffer.from(s.data![k], "base64").toString("utf8") : "");
  const rec = {
    hash: d("hash"),
    org,
    keyId: d("keyId"),
    csrfSecret: d("csrfSecret"),
    created: Number(d("created")),
    lastSeen: Number(d("lastSeen")),
  };
  if (!/^[0-9a-f]{64}$/.test(rec.hash) || sessionSecretName(rec.hash) !== s.metadata?.name) return undefined;
  if (!rec.keyId || !rec.csrfSecret || !Number.isFinite(rec.created) || !Number.isFinite(rec.lastSeen))
    return undefined;
  return rec;
}

export class KubeSessions implements SessionStore {
  private readonly watch: KubeWatch<V1Secret>;
  private readonly core: CoreV1Api;
  private readonly sessions = new Map<string, SessionRecord>();
  /** lastSeen as last written, by hash. */
  private readonly written = new Map<string, number>();
  private readonly waiting = new Map<string, Set<() => void>>();
  private readonly logger: Logger;
  private isSynced = false;

  constructor(kc: KubeConfig, o: { namespace?: string; logger: Logger }) {
    this.core = kc.makeApiClient(CoreV1Api);
    this.logger = o.logger;
    this.watch = labelledSecrets(kc, {
      name: "console session secrets",
      label: SESSION_LABEL,
      namespace: o.namespace,
      logger: o.logger,
    });
    this.watch.on((secret, event) => {
      const rec = event === "delete" ? undefined : readSessionSecret(secret);
      if (rec) {
        const have = this.sessions.get(rec.hash);
        this.written.set(rec.hash, rec.lastSeen);
        this.sessions.set(rec.hash, { ...rec, lastSeen: Math.max(rec.lastSeen, have?.lastSeen ?? 0) });
        for (const wake of this.waiting.get(rec.hash) ?? []) wake();
        return;
      }
      const name = secret.metadata?.name ?? "";
      for (const h of this.sessions.keys())
        if (sessionSecretName(h) === name) {
          this.sessions.delete(h);
          this.written.delete(h);
        }
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

  async create(rec: SessionRecord): Promise<void> {
    const data: Record<string, string> = {
      hash: rec.hash,
      keyId: rec.keyId,
      csrfSecret: rec.csrfSecret,
      created: String(rec.created),
      lastSeen: String(rec.lastSeen),
    };
    await this.core.createNamespacedSecret({
      namespace: rec.org,
      body: {
        metadata: {
          name: sessionSecretName(rec.hash),
          labels: { [SESSION_LABEL]: "true", [SESSION_KEY_LABEL]: rec.keyId, "app.kubernetes.io/managed-by": "gantry" },
        },
        type: "Opaque",
        stringData: data,
      },
    });
    this.sessions.set(rec.hash, { ...rec });
    this.written.set(rec.hash, rec.lastSeen);
  }

  find(org: string, hash: string): Promise<SessionRecord | undefined> {
    const have = this.sessions.get(hash);
    if (have) return Promise.resolve(have.org === org ? have : undefined);
    // Made on another replica just now: its watch event is on the way.
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        const set = this.waiting.get(hash);
        set?.delete(wake);
        if (set?.size === 0) this.waiting.delete(hash);
        const s = this.sessions.get(hash);
        resolve(s && s.org === org ? s : undefined);
      };
      const timer = setTimeout(wake, MISS_WAIT_MS);
      let set = this.waiting.get(hash);
      if (!set) this.waiting.set(hash, (set = new Set()));
      set.add(wake);
    });
  }

  touch(rec: SessionRecord, now: number): void {
    const s = this.sessions.get(rec.hash);
    if (!s) return;
    s.lastSeen = Math.max(s.lastSeen, now);
    if (now - (this.written.get(rec.hash) ?? 0) < TOUCH_WRITE_MS) return;
    this.written.set(rec.hash, now);
    this.core
      .patchNamespacedSecret(
        {
          name: sessionSecretName(rec.hash),
          namespace: rec.org,
          body: { stringData: { lastSeen: String(now) } },
        },
        mergePatch,
      )
      .catch((err: unknown) => {
        if (statusOf(err) !== 404) this.logger.warn({ err: String(err), org: rec.org }, "session activity not written");
      });
  }

  async remove(org: string, hash: string): Promise<void> {
    this.sessions.delete(hash);
    try {
      await this.core.deleteNamespacedSecret({ name: sessionSecretName(hash), namespace: org });
    } catch (e) {
      if (statusOf(e) !== 404) throw e;
    }
  }

  async removeForKey(org: string, keyId: string): Promise<number> {
    const mine = [...this.sessions.values()].filter((s) => s.org === org && s.keyId === keyId);
    for (const s of mine) this.sessions.delete(s.hash);
    // By label, so sessions this replica has not seen yet go too.
    await this.core.deleteCollectionNamespacedSecret({
      namespace: org,
      labelSelector: `${SESSION_LABEL},${SESSION_KEY_LABEL}=${keyId}`,
    });
    return mine.length;
  }

  all(): SessionRecord[] {
    return [...this.sessions.values()];
  }
}
