// Shared set-up for engine integration tests: an engine on the tiny generated models (on the GPU GANTRY_GPU names, else
// the CPU) and a stream collector.
import { silentLogger } from "../../../server/common/logger.ts";
import { createEngine, type EngineOptions } from "../../../server/engine/engine.ts";
import { testEngineBuild, testGpu } from "../../support/engine-build.ts";
import type { GenerateRequest, GenerationEvent, GenerationStats, ModelSpec } from "../../../server/engine/types.ts";

export function makeEngine(opts: Partial<EngineOptions> = {}): ReturnType<typeof createEngine> {
  return createEngine({
    logger: silentLogger,
    threads: 0,
    numParallel: 2,
    maxQueue: 8,
    maxLoadedModels: 2,
    contextLength: 512,
    defaultKeepAliveMs: null,
    engineBuild: testEngineBuild(),
    gpu: testGpu(),
    ...opts,
  });
}

export function specFor(modelPath: string, name: string, extra: Partial<ModelSpec> = {}): ModelSpec {
  return { name, digest: `sha256:${name}`, modelPath, parameters: {}, messages: [], adapters: [], size: 1, ...extra };
}

export interface Collected {
  text: string;
  chunks: string[];
  stats: GenerationStats;
}

export async function collect(
  events: AsyncIterable<GenerationEvent>,
  onText?: (text: string) => void,
): Promise<Collected> {
  const chunks: string[] = [];
  for await (const ev of events) {
    if (ev.type === "text") {
      chunks.push(ev.text);
      onText?.(ev.text);
    } else if (ev.type === "done") return { text: chunks.join(""), chunks, stats: ev.stats };
  }
  throw new Error("stream ended without a done event");
}

export const request = (
  model: ModelSpec,
  input: GenerateRequest["input"],
  options: GenerateRequest["options"] = {},
  extra: Partial<GenerateRequest> = {},
): GenerateRequest => ({ model, input, options, signal: new AbortController().signal, ...extra });

export const chat = (content: string): GenerateRequest["input"] => ({
  kind: "chat",
  messages: [{ role: "user", content }],
});

/** Polls `cond` (no timing assertion: only a generous safety limit so a bug fails instead of hanging). */
export async function eventually(cond: () => boolean, what: string, limitMs = 20_000): Promise<void> {
  const end = Date.now() + limitMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
