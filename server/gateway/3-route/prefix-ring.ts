// Step 3, route: PrefixHash's ring: consistent hashing with bounded loads (CHWBL, as KubeAI's PrefixHash and HAProxy's
// hash-balance-factor do it). Each pod owns `replication` points of a 32-bit ring; a key goes to the owner of the first
// point at or after its hash, unless that pod's in-flight load is over meanLoadFactor × the mean (counting the new
// request), then to the next pod along the ring that is not. A key whose last request went to another pod (passed on by
// the bound) stays there while that pod is within the bound: it holds the conversation's latest turns, and the owner
// only older ones. A pod added or removed moves only the keys whose points it takes or gives up. Pure.
import { hash } from "node:crypto";

/** A point's or a key's place on the ring: the first 32 bits of its SHA-1 (spread evenly, fast in native code). */
export const ringHash = (s: string): number => (hash("sha1", s, "buffer") as Buffer).readUInt32BE(0);

export interface RingChoice {
  id: string;
  /**
   * first: the key's own pod (the ring's first choice); kept: the pod that took the key's last request, not its own;
   * next: one the load bound passed it on to.
   */
  via: "first" | "kept" | "next";
}

export class PrefixRing {
  private readonly hashes: Uint32Array;
  private readonly owners: string[];
  readonly ids: readonly string[];

  constructor(ids: readonly string[], replication: number) {
    this.ids = [...new Set(ids)].sort();
    const points = this.ids.flatMap((id) =>
      Array.from({ length: replication }, (_, i) => ({ h: ringHash(`${id}#${i}`), id })),
    );
    points.sort((a, b) => a.h - b.h || (a.id < b.id ? -1 : 1));
    this.hashes = Uint32Array.from(points, (p) => p.h);
    this.owners = points.map((p) => p.id);
  }

  /** The index of the first point at or after h (wrapping to 0). */
  private first(h: number): number {
    let lo = 0,
      hi = this.hashes.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.hashes[mid]! < h) lo = mid + 1;
      else hi = mid;
    }
    return lo === this.hashes.length ? 0 : lo;
  }

  /**
   * The pod for `key`: the pod that took its last request (`last`, when that is on the ring and within the bound),
   * else its owner, or the next one along the ring whose load is within the bound; the owner when all are over it.
   * `loadFactor` is meanLoadFactor / 100. Undefined for an empty ring.
   */
  pick(key: string, load: (id: string) => number, loadFactor: number, last?: string): RingChoice | undefined {
    return this.pickAt(ringHash(key), load, loadFactor, last);
  }

  /** pick, for a key whose ringHash is `at`. */
  pickAt(at: number, load: (id: string) => number, loadFactor: number, last?: string): RingChoice | undefined {
    if (this.owners.length === 0) return undefined;
    let total = 0;
    for (const id of this.ids) total += load(id);
    // The paper's capacity, ceil(c × mean), with the request counted in the mean (as KubeAI): without the ceiling
    // every pod would be "over" it at low loads (1 in flight on 3 pods: 0.83 < 1).
    const bound = Math.ceil(((total + 1) / this.ids.length) * loadFactor);
    const start = this.first(at);
    const owner = this.owners[start]!;
    if (last !== undefined && last !== owner && this.ids.includes(last) && load(last) + 1 <= bound)
      return { id: last, via: "kept" };
    const seen = new Set<string>();
    for (let k = 0; k < this.owners.length && seen.size < this.ids.length; k++) {
      const id = this.owners[(start + k) % this.owners.length]!;
      if (seen.has(id)) continue;
      seen.add(id);
      if (load(id) + 1 <= bound) return { id, via: id === owner ? "first" : "next" };
    }
    return { id: owner, via: "first" };
  }
}
