// EngineTuning: the engine's switches that exist for measurements and equivalence checks (A/B runs of the benchmarks
// in test/bench, and tests that compare the two sides of a switch). Not user configuration: `gantry serve` always runs
// the defaults; benchmarks and tests pass a tuning to createEngine (in process) or to a bench server (test/support).
// One zod schema, so a bench-only JSON value parses with every mistake named.
import { z } from "zod";

export const EngineTuningSchema = z
  .object({
    fullSteps: z
      .boolean()
      .optional()
      .describe(
        "Every decode step carries every slot with a token ready (step-fill.ts); false = eager steps that start as soon as anything is queued, the batch shared evenly (default true)",
      ),
    inlineDecode: z
      .boolean()
      .optional()
      .describe("Small decode steps run on the JS thread where the addon allows it (default true)"),
    inlineDecodeMaxStepMs: z
      .number()
      .positive()
      .optional()
      .describe(
        "Small steps slower than this on average go back to a worker (default 100); tests that must see inline steps on a loaded machine raise it",
      ),
    moveSlots: z
      .boolean()
      .optional()
      .describe(
        "A slot that frees a gap among the busy slot ids has the highest busy slot move into it (default true)",
      ),
    decodeWaitMs: z
      .number()
      .int()
      .positive()
      .optional()
      .describe("Longest wait for lagging slots before a step starts without them (default adaptive)"),
    addon: z
      .object({
        threadpool: z.boolean().optional().describe("A persistent ggml threadpool per context (default true)"),
        inlineSampling: z.boolean().optional().describe("Sample plain tokens on the calling thread (default true)"),
        penaltyPrefilter: z
          .boolean()
          .optional()
          .describe("Skip repeat penalties on tokens they cannot change (default true)"),
        directTopK: z
          .boolean()
          .optional()
          .describe("Pick a leading top k without sorting the vocabulary (default true)"),
      })
      .strict()
      .optional()
      .describe("The patched addon's own switches (native/node-llama-cpp.ts: AddonSettings)"),
  })
  .strict();

export type EngineTuning = z.infer<typeof EngineTuningSchema>;

/** The defaults: what `gantry serve` runs. */
export const DEFAULT_TUNING: EngineTuning = {};
