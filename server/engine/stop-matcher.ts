// Stop strings over streamed text. Text that could still be the beginning of a stop string is held back until the next
// chunk decides it, so a stop string never leaks to the client, even when it is split across tokens.

export interface StopMatch {
  /** Text safe to emit now. */
  emit: string;
  /** True once a stop string was found; `emit` then holds the text before it and the rest is dropped. */
  stopped: boolean;
}

export class StopStringMatcher {
  private readonly stops: readonly string[];
  private held = "";

  constructor(stops: readonly string[]) {
    this.stops = stops.filter((s) => s.length > 0);
  }

  push(text: string): StopMatch {
    const buf = this.held + text;
    if (this.stops.length === 0) return { emit: buf, stopped: false };
    let first = -1;
    for (const stop of this.stops) {
      const i = buf.indexOf(stop);
      if (i >= 0 && (first < 0 || i < first)) first = i;
    }
    if (first >= 0) {
      this.held = "";
      return { emit: buf.slice(0, first), stopped: true };
    }
    const keep = this.longestPartialSuffix(buf);
    this.held = buf.slice(buf.length - keep);
    return { emit: buf.slice(0, buf.length - keep), stopped: false };
  }

  /** Text held back at the end of generation (it did not turn into a stop string). */
  flush(): string {
    const rest = this.held;
    this.held = "";
    return rest;
  }

  /** Length of the longest suffix of `buf` that is a proper prefix of some stop string. */
  private longestPartialSuffix(buf: string): number {
    let best = 0;
    for (const stop of this.stops) {
      for (let n = Math.min(stop.length - 1, buf.length); n > best; n--) {
        if (buf.endsWith(stop.slice(0, n))) {
          best = n;
          break;
        }
      }
    }
    return best;
  }
}
