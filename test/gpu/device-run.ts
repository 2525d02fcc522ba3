// The GPU check, on the bundle's Node (test/gpu/run.sh starts it): phases in order, each timed; a failed phase is
// reported and the phases that do not need it go on. preflight (the machine, CUDA's compiler, the GPU's architecture)
// → models (the GGUF writer, in the background) → build (the patched engine and llama-server, llama-bench and
// llama-batched-bench from the same llama.cpp source, at once; on a GPU the CUDA backend for that GPU only, and the
// CUDA engine from it) → serve (gantry serve with GANTRY_GPU: the whole model in GPU memory, `gantry ps` says 100% GPU)
// → tests (the GPU path's) → bench (`bench llama` against llama-server and llama-batched-bench on the same GPU, one
// model at a time, the biggest first) → summary.md.
// Output: at most 8 files in --out (the device tool brings back 8): summary.md, summary.json, run.log (run.sh's
// copy of everything), build.log, serve.log, tests.log, bench.md (the tables), bench.log.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { parseEnv } from "../../server/common/config.ts";
import { SetupEnvSchema } from "../../server/setup/config.ts";
import { installCudaEngine } from "../../server/setup/cuda-engine.ts";
import { ensurePatchedEngine } from "../../server/setup/engine-build.ts";
import { buildTools, run } from "../../server/setup/llama-source.ts";
import { CPU_TOOLS, cudaTools, llamaTools, toolsCmakeOptions } from "../bench/llama-cpp/tools.ts";
import type { Manifest } from "./bundle.ts";
import { cudaArchitectures, cudaEnvironment, describeMachine, inspectMachine, type Machine } from "./machine.ts";
import { planFor, type Plan } from "./plan.ts";
import { Phases, tail } from "./phases.ts";
import { serveCheck, type ServeCheck } from "./serve-check.ts";

const { values } = parseArgs({
  options: {
    bundle: { type: "string" },
    work: { type: "string" },
    out: { type: "string" },
    started: { type: "string" },
    quick: { type: "boolean", default: false },
    gpu: { type: "string" },
  },
});
const REPO = path.resolve(import.meta.dirname, "..", "..");
const work = path.resolve(values.work ?? path.join(os.tmpdir(), "gantry-gpu"));
const out = path.resolve(values.out ?? path.join(REPO, "gpu-out"));
const bundle = path.resolve(values.bundle ?? path.join(REPO, ".gpu-bundle"));
const phases = new Phases(Number(values.started ?? Date.now() / 1000));
const outFile = (name: string) => path.join(out, name);
for (const f of ["summary.md", "summary.json", "build.log", "serve.log", "tests.log", "bench.md", "bench.log"])
  fs.rmSync(outFile(f), { force: true });

/** `node <args>` in the tree, output to `logFile` (stdout to `stdoutFile` if given, echoed with `echo`): exit code. */
function node(args: string[], env: Record<string, string>, logFile: string, echo: boolean, stdoutFile?: string) {
  return new Promise<number>((resolve) => {
    const child = spawn(process.execPath, args, { cwd: REPO, env: { ...process.env, ...env } });
    const logFd = fs.openSync(logFile, "a");
    const stdoutFd = stdoutFile ? fs.openSync(stdoutFile, "a") : logFd;
    child.stdout.on("data", (d: Buffer) => {
      fs.writeSync(stdoutFd, d);
      if (echo) process.stdout.write(d);
    });
    child.stderr.on("data", (d: Buffer) => {
      fs.writeSync(logFd, d);
      if (echo) process.stdout.write(d);
    });
    child.once("close", (code) => {
      fs.closeSync(logFd);
      if (stdoutFd !== logFd) fs.closeSync(stdoutFd);
      resolve(code ?? 1);
    });
  });
}

/**
 * summary.md and summary.json as far as the run got: written after every phase, so a run the device tool stops at its
 * time limit still brings back what it found; printed at the end.
 */
function writeSummary(print = false): void {
  const bench = fs.existsSync(outFile("bench.md")) ? fs.readFileSync(outFile("bench.md"), "utf8") : "";
  const summary = [
    `# Gantry GPU check — ${new Date().toISOString()}`,
    "",
    ...(machine ? describeMachine(machine).map((l) => `- ${l}`) : []),
    `- GANTRY_GPU=${gpu}${architectures ? `, CUDA architectures ${architectures}` : ""}; ${values.quick ? "quick" : "full"} plan: models ${plan.models.join(", ")}, streams ${plan.streams}, ${plan.tokens} tokens, ${plan.threads} threads`,
    "",
    phases.table(),
    "",
    ...(served ? ["## Serve check", "", "```json", JSON.stringify(served, null, 2), "```", ""] : []),
    "## bench llama",
    bench || "(no tables)",
  ].join("\n");
  fs.writeFileSync(outFile("summary.md"), summary + "\n");
  fs.writeFileSync(
    outFile("summary.json"),
    JSON.stringify({ gpu, architectures, machine, plan, phases: phases.results, served }, null, 2) + "\n",
  );
  if (print) console.log(`\n${summary}`);
}
phases.onPhaseEnd = () => writeSummary();

// ---- preflight ----
let machine: Machine | undefined;
let gpu: "cuda" | "off" = "off";
let architectures = "";
let plan: Plan = planFor({ gpu, quick: values.quick, cores: os.availableParallelism() });
let served: ServeCheck | undefined;
await phases.run("preflight", async () => {
  machine = await inspectMachine(process.env.PATH ?? "");
  for (const line of describeMachine(machine)) console.log(`   ${line}`);
  const asked = values.gpu;
  if (asked !== undefined && asked !== "cuda" && asked !== "off") throw new Error(`--gpu ${asked}: cuda or off`);
  gpu = (asked as "cuda" | "off" | undefined) ?? (machine.gpus.length > 0 ? "cuda" : "off");
  plan = planFor({ gpu, quick: values.quick, cores: machine.cores });
  const notes = [`GANTRY_GPU=${gpu}${values.quick ? ", quick" : ""}`];
  const manifest = JSON.parse(fs.readFileSync(path.join(bundle, "manifest.json"), "utf8")) as Manifest;
  const lockSha = createHash("sha256")
    .update(fs.readFileSync(path.join(REPO, "package-lock.json")))
    .digest("hex")
    .slice(0, 16);
  if (lockSha !== manifest.lockSha) notes.push("WARNING: package-lock.json changed since the bundle was made");
  if (gpu === "cuda") {
    if (!machine.nvcc) throw new Error("GANTRY_GPU=cuda, but no nvcc (CUDA's compiler) on PATH or in /usr/local/cuda*");
    Object.assign(process.env, cudaEnvironment(machine.nvcc, process.env.LD_LIBRARY_PATH));
    architectures = process.env.GANTRY_CUDA_ARCHITECTURES || cudaArchitectures(machine.gpus);
    if (!architectures) throw new Error("no GPU architecture: set GANTRY_CUDA_ARCHITECTURES (e.g. 90)");
    notes.push(`CUDA architectures ${architectures}`);
  }
  return notes.join("; ");
});

// ---- models (in the background, one process per model) ----
const modelsLog = outFile("build.log");
const models = new Map<string, string>();
const modelsDone = Promise.all(
  plan.models.map(async (shape) => {
    const jsonFile = path.join(work, `model-${shape}.json`);
    fs.rmSync(jsonFile, { force: true });
    const code = await node(["test/gpu/models.ts", shape], {}, modelsLog, false, jsonFile);
    if (code !== 0) throw new Error(`writing the ${shape} model failed (exit ${code}; build.log)`);
    const r = JSON.parse(fs.readFileSync(jsonFile, "utf8")) as { file: string; bytes: number; seconds: number };
    models.set(shape, r.file);
    return `${shape} ${(r.bytes / 1e9).toFixed(2)} GB in ${r.seconds} s`;
  }),
);
modelsDone.catch(() => undefined); // awaited by the models phase; until then a failure must not end the process

// ---- build ----
const built = await phases.run("build", async () => {
  const settings = parseEnv(SetupEnvSchema);
  const say = (line: string) => console.log(`   ${line}`);
  const variant = gpu === "cuda" ? cudaTools(architectures) : CPU_TOOLS;
  const [engine, tools] = await Promise.allSettled([
    ensurePatchedEngine({ settings, strict: true, log: say }),
    llamaTools(["llama-server", "llama-bench", "llama-batched-bench"], variant),
  ]);
  collectBuildLogs(settings.GANTRY_CACHE);
  const failed = [engine, tools].filter((r) => r.status === "rejected").map((r) => String(r.reason));
  if (failed.length > 0) throw new Error(failed.join("\n"));
  const notes = [`patched engine: ${(engine as PromiseFulfilledResult<{ detail: string }>).value.detail}`];
  const t = (tools as PromiseFulfilledResult<Awaited<ReturnType<typeof llamaTools>>>).value;
  notes.push(`llama-server, llama-bench, llama-batched-bench (${t.variant}) in ${t.dir}`);
  if (gpu === "cuda") {
    const cuda = await installCudaEngine({ settings, cudaModule: t.cudaModule!, say });
    notes.push(`CUDA engine ${cuda.build.buildDir}`);
  } else if (settings.GANTRY_LLAMA_CPP_SOURCE) {
    // On the CPU the CUDA build is not made: configure the bundle's source as it (CUDA off), so a trimmed source that
    // lacks what that build reads fails here and not on a GPU machine.
    const options = toolsCmakeOptions(cudaTools("90"));
    options.GGML_CUDA = "OFF";
    delete options.CMAKE_CUDA_ARCHITECTURES;
    const dir = path.join(work, "configure-check");
    fs.rmSync(dir, { recursive: true, force: true });
    const defs = Object.entries({ CMAKE_BUILD_TYPE: "Release", ...options }).map(([k, v]) => `-D${k}=${v}`);
    const cmake = buildTools(settings);
    if (!cmake.ok) throw new Error(`missing build tools: ${cmake.missing.join(", ")}`);
    await run(cmake.cmake, ["-S", settings.GANTRY_LLAMA_CPP_SOURCE, "-B", dir, ...cmake.generator, ...defs], {
      log: outFile("build.log"),
    });
    notes.push("the bundle's llama.cpp source configures as the CUDA build does (CUDA off)");
  }
  return notes.join("; ");
});

function collectBuildLogs(cache: string): void {
  const logs: string[] = [];
  const since = phases.startedMs;
  for (const dir of [path.join(cache, "engine"), path.join(cache, "llama.cpp")]) {
    if (!fs.existsSync(dir)) continue;
    for (const e of fs.readdirSync(dir)) {
      for (const f of [path.join(dir, e), path.join(dir, e, "build.log")])
        if (f.endsWith(".log") && fs.existsSync(f) && fs.statSync(f).mtimeMs >= since) logs.push(f);
    }
  }
  for (const f of logs) fs.appendFileSync(outFile("build.log"), `\n==== ${f} (last 3000 lines)\n${tail(f, 3000)}\n`);
}

await phases.run("models", async () => (await modelsDone).join("; "));

// ---- serve ----
await phases.run("serve", async () => {
  if (!built) throw new Error("skipped: the build failed");
  const modelPath = models.get(plan.serveModel);
  if (!modelPath) throw new Error(`skipped: no ${plan.serveModel} model`);
  served = await serveCheck({
    gpu,
    modelPath,
    threads: plan.threads,
    storeDir: path.join(work, "store"),
    logFile: outFile("serve.log"),
  });
  const s = served;
  return `${s.model} (${(s.sizeBytes / 1e9).toFixed(2)} GB): size_vram ${s.sizeVram}, gantry ps "${s.processor}"${s.gpuMemoryMiB !== undefined ? `, ${s.gpuMemoryMiB} MiB GPU memory (nvidia-smi)` : ""}, ${s.generated} tokens at ${s.tokensPerSecond.toFixed(1)} tok/s; engine ${s.engine}`;
});

// ---- tests ----
await phases.run("tests", async () => {
  if (!built) throw new Error("skipped: the build failed");
  const log = outFile("tests.log");
  const code = await node(
    ["--test", "--test-concurrency=1", "--test-reporter=spec", ...plan.tests],
    { GANTRY_GPU: gpu },
    log,
    false,
  );
  const text = fs.readFileSync(log, "utf8");
  const count = (k: string) => Number(new RegExp(`^ℹ ${k} (\\d+)$`, "m").exec(text)?.[1] ?? 0);
  const summary = `${count("pass")} of ${count("tests")} passed, ${count("fail")} failed, ${count("skipped")} skipped (${plan.tests.length} files)`;
  if (code !== 0 || count("fail") > 0 || count("skipped") > 0 || count("pass") === 0) throw new Error(summary);
  return summary;
});

// ---- bench ----
await phases.run("bench", async () => {
  if (!built) throw new Error("skipped: the build failed");
  const done: string[] = [];
  for (const shape of plan.benchModels) {
    if (phases.elapsed() > plan.benchDeadlineSeconds) {
      done.push(`${shape} skipped (${phases.elapsed()} s elapsed, past ${plan.benchDeadlineSeconds} s)`);
      continue;
    }
    if (!models.has(shape)) {
      done.push(`${shape}: no model`);
      continue;
    }
    const rounds = phases.elapsed() < plan.benchDeadlineSeconds / 2 ? plan.rounds : 1;
    const env = {
      GANTRY_BENCH_MODELS: shape,
      GANTRY_BENCH_ROUNDS: String(rounds),
      GANTRY_BENCH_THREADS: String(plan.threads),
      GANTRY_BENCH_STREAMS: plan.streams,
      GANTRY_BENCH_TOKENS: String(plan.tokens),
      GANTRY_BENCH_GPU: gpu,
      // Whether llama.cpp's own backend sampling reaches the ceiling (decision 0027).
      GANTRY_BENCH_LLAMA_BACKEND_SAMPLING: "on",
      ...(gpu === "cuda" ? { GANTRY_CUDA_ARCHITECTURES: architectures } : {}),
    };
    fs.appendFileSync(outFile("bench.md"), `\n## bench-${shape}\n`);
    const started = performance.now();
    const code = await node(["test/bench/run.ts", "llama"], env, outFile("bench.log"), false, outFile("bench.md"));
    const s = Math.round((performance.now() - started) / 1000);
    if (code !== 0)
      throw new Error(`bench-${shape} failed (exit ${code}; bench.log): ${tail(outFile("bench.log"), 5)}`);
    done.push(`bench-${shape} ${rounds} round${rounds === 1 ? "" : "s"} in ${s} s`);
  }
  return done.join("; ");
});

// ---- summary ----
writeSummary(true);
process.exitCode = phases.results.every((p) => p.status === "ok") ? 0 : 1;
