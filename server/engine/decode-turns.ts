// Decode steps take turns across the contexts of one runtime: every context decodes with all the runtime's threads,
// and two at once would oversubscribe the cores. Uncontended, taking a turn costs nothing.

export class DecodeTurns {
  private held = false;
  private waiting: Array<() => void> = [];

  take(): Promise<void> | undefined {
    if (!this.held) {
      this.held = true;
      return undefined;
    }
    return new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  /** Whether another context waits for a turn (a pipelined step loop then gives its turn up between steps). */
  get contended(): boolean {
    return this.waiting.length > 0;
  }

  give(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.held = false;
  }
}

const turnsByRuntime = new WeakMap<object, DecodeTurns>();

/** The turns shared by every context of a runtime (a node-llama-cpp Llama instance). */
export function decodeTurnsFor(runtime: object): DecodeTurns {
  let turns = turnsByRuntime.get(runtime);
  if (!turns) turnsByRuntime.set(runtime, (turns = new DecodeTurns()));
  return turns;
}
