// Console sessions in memory: for a gateway without a cluster (tests, a one-off local gateway). A gateway with several
// replicas keeps them in the cluster (../kube/sessions.ts), so any replica serves any session.
import type { SessionRecord, SessionStore } from "./session.ts";

export class MemorySessions implements SessionStore {
  readonly synced = true;
  private readonly sessions = new Map<string, SessionRecord>();

  create(rec: SessionRecord): Promise<void> {
    this.sessions.set(rec.hash, { ...rec });
    return Promise.resolve();
  }

  find(org: string, hash: string): Promise<SessionRecord | undefined> {
    const s = this.sessions.get(hash);
    return Promise.resolve(s && s.org === org ? s : undefined);
  }

  touch(rec: SessionRecord, now: number): void {
    const s = this.sessions.get(rec.hash);
    if (s) s.lastSeen = Math.max(s.lastSeen, now);
  }

  remove(_org: string, hash: string): Promise<void> {
    this.sessions.delete(hash);
    return Promise.resolve();
  }

  removeForKey(org: string, keyId: string): Promise<number> {
    let n = 0;
    for (const [h, s] of this.sessions)
      if (s.org === org && s.keyId === keyId) {
        this.sessions.delete(h);
        n++;
      }
    return Promise.resolve(n);
  }

  all(): SessionRecord[] {
    return [...this.sessions.values()];
  }
}
