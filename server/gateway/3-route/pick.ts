// Step 3, route: which pod a request goes to. Pure and small on purpose: a routing strategy (LeastLoad here;
// PrefixHash in prefix-ring.ts) is one function of the usable pods and what the gateway knows of their load.
import type { Endpoint } from "../ports.ts";

/**
 * The pod with the fewest requests in flight from this gateway among the `usable` ones of `endpoints`, ties broken in
 * turn (`turn` grows by one per pick, so equally loaded pods take requests round robin). Undefined when none is usable.
 */
export function leastLoaded(
  endpoints: readonly Endpoint[],
  usable: (ep: Endpoint) => boolean,
  load: ReadonlyMap<string, number>,
  turn: number,
): Endpoint | undefined {
  let best: Endpoint | undefined,
    bestLoad = Infinity,
    ties = 0;
  for (const ep of endpoints) {
    if (!usable(ep)) continue;
    const l = load.get(ep.id) ?? 0;
    if (l < bestLoad) {
      best = ep;
      bestLoad = l;
      ties = 1;
    } else if (l === bestLoad && (turn + ties++) % ties === 0) best = ep;
  }
  return best;
}
