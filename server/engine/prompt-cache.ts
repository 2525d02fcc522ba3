// The RAM prompt cache beyond a context's sequences (llama-server's --cache-ram): when a sequence's history is about to
// be overwritten, its KV state is copied to host memory, keyed by the tokens it holds; a later prompt that starts with
// saved tokens has them restored into its sequence instead of evaluated again. One cache per server, shared by the
// loaded models (each entry belongs to one model's context: `scope`), least recently used first out, bounded in bytes.
// Pure bookkeeping: the slot loop reads and writes the states (SlotLoop.saveState, restoreState).
import type { Token } from "node-llama-cpp";

/** A history shorter than this (tokens) is not worth a state copy: evaluating it again costs about as much. */
export const MIN_CACHED_TOKENS = 32;

export interface CachedPrompt {
  readonly scope: object;
  readonly tokens: readonly Token[];
  readonly state: Uint8Array;
}

/** The cache as one model's context sees it (its own entries only). */
export interface ModelPromptCache {
  match(prompt: readonly Token[]): { entry: CachedPrompt | undefined; length: number };
  wants(tokens: readonly Token[]): boolean;
  add(tokens: readonly Token[], state: Uint8Array): boolean;
  touch(entry: CachedPrompt): void;
  delete(entry: CachedPrompt): void;
}

export const commonPrefixLength = (a: readonly Token[], b: readonly Token[]): number => {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
};

export class PromptCache {
  readonly maxBytes: number;
  /** Least recently used first. */
  private entries: CachedPrompt[] = [];
  private held = 0;
  private readonly onBytes: (bytes: number) => void;

  constructor(maxBytes: number, onBytes: (bytes: number) => void = () => {}) {
    this.maxBytes = maxBytes;
    this.onBytes = onBytes;
  }

  get bytes(): number {
    return this.held;
  }

  get size(): number {
    return this.entries.length;
  }

  /** The saved prompt of `scope` sharing the longest prefix with `prompt`, and that length (0: none). */
  match(scope: object, prompt: readonly Token[]): { entry: CachedPrompt | undefined; length: number } {
    let entry: CachedPrompt | undefined,
      length = 0;
    for (const e of this.entries) {
      if (e.scope !== scope) continue;
      const n = commonPrefixLength(e.tokens, prompt);
      if (n > length) [entry, length] = [e, n];
    }
    return { entry, length };
  }

  /** Whether saving `tokens` of `scope` would add anything: no saved prompt starts with them. */
  wants(scope: object, tokens: readonly Token[]): boolean {
    if (this.maxBytes <= 0 || tokens.length < MIN_CACHED_TOKENS) return false;
    const covering = this.entries.find(
      (e) =>
        e.scope === scope && e.tokens.length >= tokens.length && commonPrefixLength(e.tokens, tokens) === tokens.length,
    );
    if (covering) this.touch(covering);
    return covering === undefined;
  }

  /**
   * Keeps a state of `tokens` (a copy: the caller's arrays may change), replacing the saved prompts it extends, then
   * drops the least recently used until the cache fits. False when the state alone is larger than the cache.
   */
  add(scope: object, tokens: readonly Token[], state: Uint8Array): boolean {
    if (state.byteLength > this.maxBytes) return false;
    for (const e of this.entries.filter(
      (e) => e.scope === scope && commonPrefixLength(e.tokens, tokens) === e.tokens.length,
    ))
      this.remove(e);
    this.entries.push({ scope, tokens: [...tokens], state });
    this.held += state.byteLength;
    while (this.held > this.maxBytes) this.remove(this.entries[0]!);
    this.onBytes(this.held);
    return true;
  }

  /** Every entry, least recently used first (a read-only view, for inspection). */
  list(): readonly CachedPrompt[] {
    return [...this.entries];
  }

  /** The entries of `scope` (one model's context). */
  scoped(scope: object): ModelPromptCache {
    return {
      match: (prompt) => this.match(scope, prompt),
      wants: (tokens) => this.wants(scope, tokens),
      add: (tokens, state) => this.add(scope, tokens, state),
      touch: (entry) => this.touch(entry),
      delete: (entry) => this.delete(entry),
    };
  }

  /** Marks an entry used now (it leaves last). */
  touch(entry: CachedPrompt): void {
    const i = this.entries.indexOf(entry);
    if (i >= 0) this.entries.push(...this.entries.splice(i, 1));
  }

  /** Drops an entry (a state the runtime refused). */
  delete(entry: CachedPrompt): void {
    this.remove(entry);
    this.onBytes(this.held);
  }

  /** Drops every entry of a scope (its context is gone). */
  dropScope(scope: object): void {
    for (const e of this.entries.filter((e) => e.scope === scope)) this.remove(e);
    this.onBytes(this.held);
  }

  private remove(entry: CachedPrompt): void {
    const i = this.entries.indexOf(entry);
    if (i < 0) return;
    this.entries.splice(i, 1);
    this.held -= entry.state.byteLength;
  }
}
