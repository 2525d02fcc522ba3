// Node's process metrics (CPU, memory, handles, GC, event-loop lag) on every process's /metrics, through prom-client.
// The event-loop lag is sampled every 100 ms instead of prom-client's default 10 ms: a timer waking the process 100
// times a second cost an idle gateway 7.5 ms of CPU per second (1.25 ms sampled every 200 ms), and in `gantry serve`
// each wake-up lands on a core the engine's compute threads are using.
import { collectDefaultMetrics, type Registry } from "prom-client";

export const EVENT_LOOP_SAMPLE_MS = 100;

export function collectProcessMetrics(registry: Registry, prefix: string): void {
  collectDefaultMetrics({ register: registry, prefix, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
}
