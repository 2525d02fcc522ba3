// `node test/bench/addon-ab.ts [model.gguf] [rounds] [threads]`: text generation on two patched addon builds side by
// side, to show that one change to the addon does not change or slow text generation. "after" is the current build
// (setup's, with image input), "before" the same build without NLC_MTMD (made once by this benchmark, cached as any
// engine build; `npm run bench vision` runs it). Each run is a child
// process loading one build (getLlama picks the local build by its CMake options); rounds alternate the builds. A run
// generates greedily through the engine's own parts (LoadedModel, step batcher, native sampler): 1 stream × 128 tokens
// and 4 streams × 64 tokens; the table shows tokens/s, the process's CPU time per generated token (steadier than
// tokens/s on a machine shared with other work, with 1 thread: no busy-waiting compute threads), and whether each
// build generated exactly the same tokens.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { fileURLToPath } from "node:url";
import { getLlama, LlamaLogLevel, type Token } from "node-llama-cpp";
import { LoadedModel } from "../../server/engine/loaded-model.ts";
import { noMetrics } from "../../server/engine/metrics.ts";
import { TokenSampler } from "../../server/engine/token-sampler.ts";
import { patchedBuild } from "../../server/engine/native/patched-build.ts";
import { parseEnv } from "../../server/common/config.ts";
import { SetupEnvSchema } from "../../server/setup/config.ts";
import { ensurePatchedEngine } from "../../server/setup/engine-build.ts";
import { resolveSampling } from "../../server/engine/sampling.ts";
import type { Slot } from "../../server/engine/slot-loop.ts";
import { testEngineBuild } from "../support/engine-build.ts";
import { benchModelPath } from "../support/models.ts";
import { median, printTable } from "./table.ts";

// The builds as setup makes them now (the addon on the prebuilt libraries where it can), with and without mtmd.
const BUILDS = {
  before: patchedBuild({ ...testEngineBuild(), withoutMtmd: true }).cmakeOptions,
  after: patchedBuild(testEngineBuild()).cmakeOptions,
};
type BuildName = keyof typeof BUILDS;

interface RunResult {
  build: BuildName;
  hasMtmd: boolean;
  c1Tps: number;
  c4Tps: number;
  /** Process CPU milliseconds per generated token, both runs together. */
  cpuMsPerToken: number;
  tokensHash: string;
}

async function child(build: BuildName, modelPath: string, threads: number): Promise<RunResult> {
  const llama = await getLlama({
    gpu: false,
    build: "never",
    cmakeOptions: { ...BUILDS[build] },
    maxThreads: threads,
    logLevel: LlamaLogLevel.error,
  });
  if (llama.buildType !== "localBuild") throw new Error(`the ${build} build is not linked in localBuilds`);
  const loaded = await LoadedModel.load({
    llama,
    spec: { name: "ab", digest: "sha256:ab", modelPath, parameters: {}, messages: [], adapters: [], size: 0 },
    requestedContextLength: 1024,
    mappedWeights: false,
    parallel: 4,
    maxQueue: 4,
    threads,
    metrics: noMetrics,
    moveSlots: false,
  });
  const greedy = resolveSampling({}, { temperature: 0, top_k: 1, repeat_last_n: 0 });
  const slots: Slot[] = [];
  for (let i = 0; i < 4; i++) slots.push(await loaded.slots.acquire(undefined));
  const stream = async (slot: Slot, prompt: string, n: number): Promise<Token[]> => {
    const sampler = new TokenSampler(loaded.slots.native, greedy, 1, 0, undefined);
    const history: Token[] = loaded.model.tokenize(prompt, true);
    const sample = (i: number) => sampler.sample(loaded.slots.sampleToken, i, history);
    const out: Token[] = [];
    const sync = loaded.slots;
    // As the engine's generation loop: join the next step with the other streams (evaluate counts the wait).
    const step = async (tokens: Token[]): Promise<Token> => {
      await sync.gate();
      return await loaded.slots.evaluate(slot, tokens, sample);
    };
    sync.enter();
    try {
      await loaded.slots.truncate(slot, () => 0);
      let next = await step([...history]);
      for (;;) {
        out.push(next);
        history.push(next);
        if (out.length === n) break;
        next = await step([next]);
      }
    } finally {
      sync.leave();
      sampler.dispose();
    }
    return out;
  };
  const timed = async (streams: number, n: number) => {
    const started = performance.now();
    const outs = await Promise.all(slots.slice(0, streams).map((s, i) => stream(s, `story number ${i}: once`, n)));
    return { tps: (streams * n) / ((performance.now() - started) / 1000), outs };
  };
  await timed(1, 8); // warm-up
  const cpu = process.cpuUsage();
  const c1 = await timed(1, 128);
  const c4 = await timed(4, 64);
  const used = process.cpuUsage(cpu);
  const cpuMsPerToken = (used.user + used.system) / 1000 / (128 + 4 * 64);
  const hash = createHash("sha256")
    .update(JSON.stringify([c1.outs, c4.outs]))
    .digest("hex")
    .slice(0, 12);
  const hasMtmd = "AddonMtmdContext" in (llama as unknown as { _bindings: object })._bindings;
  for (const s of slots) loaded.slots.release(s, () => undefined);
  await loaded.dispose();
  await llama.dispose();
  return { build, hasMtmd, c1Tps: c1.tps, c4Tps: c4.tps, cpuMsPerToken, tokensHash: hash };
}

if (process.argv[2] === "--child") {
  const r = await child(process.argv[3] as BuildName, process.argv[4]!, Number(process.argv[5]));
  process.stdout.write(`${JSON.stringify(r)}\n`);
} else if (import.meta.main) {
  await benchAddonAb(
    process.argv[2] || (await benchModelPath("250m")),
    Number(process.argv[3] || 5),
    Number(process.argv[4] || 2),
  );
}

/** Builds both addons if needed (the one without mtmd is made once, cached like any engine build), then the table. */
export async function benchAddonAb(modelPath: string, rounds: number, threads: number): Promise<void> {
  for (const withoutMtmd of [true, false]) {
    const r = await ensurePatchedEngine({ strict: true, withoutMtmd, settings: parseEnv(SetupEnvSchema) });
    process.stderr.write(`engine build (${withoutMtmd ? "without" : "with"} mtmd): ${r.detail}\n`);
  }
  const results: RunResult[] = [];
  for (let r = 0; r < rounds; r++) {
    for (const build of (r % 2 === 0 ? ["before", "after"] : ["after", "before"]) as BuildName[]) {
      const p = spawnSync(
        process.execPath,
        [fileURLToPath(import.meta.url), "--child", build, modelPath, String(threads)],
        {
          encoding: "utf8",
        },
      );
      if (p.status !== 0) throw new Error(`${build} run failed (${p.status ?? p.signal}):\n${p.stderr}`);
      results.push(JSON.parse(p.stdout.trim().split("\n").at(-1)!) as RunResult);
      process.stderr.write(`round ${r + 1}/${rounds} ${build}: ${JSON.stringify(results.at(-1))}\n`);
    }
  }
  const cell = (xs: number[]) =>
    `${Math.min(...xs).toFixed(1)} / ${median(xs).toFixed(1)} / ${Math.max(...xs).toFixed(1)}`;
  const of = (b: BuildName) => results.filter((r) => r.build === b);
  const hashes = new Set(results.map((r) => r.tokensHash));
  printTable(
    `Text generation, patched addon without and with mtmd (${modelPath.split("/").at(-1)}, ${threads} thread${threads === 1 ? "" : "s"}, greedy): tokens/s min / median / max of ${rounds} interleaved rounds; same tokens in every run: ${hashes.size === 1 ? "yes" : `NO (${[...hashes].join(", ")})`}`,
    [
      "build",
      "image input",
      "1 × 128 tok/s",
      "4 × 64 tok/s",
      "CPU ms / token",
      "c1 ÷ before (medians)",
      "c4 ÷ before (medians)",
      "CPU ÷ before (medians)",
    ],
    (["before", "after"] as BuildName[]).map((b) => [
      b,
      of(b)[0]!.hasMtmd ? "yes" : "no",
      cell(of(b).map((r) => r.c1Tps)),
      cell(of(b).map((r) => r.c4Tps)),
      cell(of(b).map((r) => r.cpuMsPerToken)),
      (median(of(b).map((r) => r.c1Tps)) / median(of("before").map((r) => r.c1Tps))).toFixed(3),
      (median(of(b).map((r) => r.c4Tps)) / median(of("before").map((r) => r.c4Tps))).toFixed(3),
      (median(of(b).map((r) => r.cpuMsPerToken)) / median(of("before").map((r) => r.cpuMsPerToken))).toFixed(3),
    ]),
  );
}
