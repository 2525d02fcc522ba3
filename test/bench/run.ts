// `npm run bench [section...]`: runs the benchmarks and prints their tables. Sections: serving, llama, step, causes,
// builds, pull, cli, operator, platform, gateway, vision, console, routing, image, queue (default: all). `llama`
// compares Gantry with llama.cpp's llama-server and llama-bench built from the llama.cpp release node-llama-cpp ships;
// `causes` the prebuilt binary against the patched build (threadpool poll 0 and 50); `vision` image requests against
// llama-server --mmproj and text on the addon with and without mtmd; `builds` compares the engine builds (patched addon
// on the prebuilt libraries, patched all from source, prebuilt binary); `gateway` compares the gateway with going
// direct and with nginx, and measures cold starts on the test cluster; `console` the console's first page in a headless
// browser; `routing` LeastLoad against PrefixHash for multi-turn conversations over an app's replicas; `step` the host
// time of a decode step at 1, 8 and 32 streams on a 128k-vocabulary model (GANTRY_BENCH_STEP_TOKENS per stream, default
// 128); `step-pipeline` the same host time per step with decode on a worker and the step pipeline against inline decode
// (GANTRY_BENCH_STEP_STREAMS, default 1,8,32; GANTRY_BENCH_THREADS default 1 there: one core decodes, the other is the
// host, a CPU proxy of a GPU); `image` the container image (build times, size, cold start to first token, real pod
// against process pod: test/bench/image.ts, GANTRY_BENCH_IMAGE_PARTS picks parts); `queue` fal's
// queue API on the broker: submit → COMPLETED against a synchronous call, submissions/s accepted, a 10,000-request
// drain (GANTRY_BENCH_QUEUE_DRAIN sets the count); `rerank` documents/s of a 32-document rerank, one pair per decode
// against pairs sharing decodes (test/bench/rerank.ts).
// GANTRY_BENCH_ROUNDS (default 9 for serving: its paired ratios need that many to settle on 2 noisy cores; 3 for llama,
// causes and builds) sets the interleaved rounds, GANTRY_BENCH_MODELS (default 250m,1b) the generated models,
// GANTRY_BENCH_LLAMA_SLOTS (lru, default, or pinned) how llama-server assigns slots to concurrent requests;
// GANTRY_BENCH_GPU=cuda (with GANTRY_CUDA_ARCHITECTURES), GANTRY_BENCH_STREAMS and GANTRY_BENCH_TOKENS run `llama` on a
// GPU with other stream counts, GANTRY_BENCH_LLAMA_BACKEND_SAMPLING=on adds llama-server with backend sampling
// (llama-cpp/options.ts; the GPU bundle's run.sh, test/gpu/, sets them).
// Benchmarks measure; they never assert. Compare ratios measured side by side in one run, not absolute numbers.
// Each section's code is loaded when it runs: `llama` alone loads no Kubernetes client (the GPU bundle carries none).
import { benchModelPath, smollm2Path } from "../support/models.ts";
import type { BenchShapeName } from "../support/gguf/bench.ts";
import type { BenchModel } from "./llama-cpp/compare.ts";
import { BenchLlamaEnvSchema, gpuRun, streamScenarios } from "./llama-cpp/options.ts";
import { llamaSlotsFromEnv } from "./llama-cpp/targets.ts";
import { parseEnv } from "../../server/common/config.ts";
import { printTable } from "./table.ts";

const all = [
  "serving",
  "llama",
  "step",
  "step-pipeline",
  "causes",
  "builds",
  "pull",
  "cli",
  "operator",
  "platform",
  "gateway",
  "vision",
  "console",
  "routing",
  "image",
  "queue",
  "rerank",
] as const;
type Section = (typeof all)[number];
const wanted = new Set<Section>(
  process.argv.slice(2).filter((a) => (all as readonly string[]).includes(a)) as Section[],
);
const run = (s: Section) => wanted.size === 0 || wanted.has(s);

console.log(
  `gantry benchmarks — ${new Date().toISOString()} — node ${process.version}, ${(await import("node:os")).cpus().length} CPUs`,
);

if (run("serving")) {
  const { benchServing } = await import("./serving.ts");
  const rows = await benchServing(
    [
      { label: "bench-250m", path: await benchModelPath("250m") },
      { label: "smollm2-135m", path: await smollm2Path() },
    ],
    { rounds: Number(process.env.GANTRY_BENCH_ROUNDS ?? 9) },
  );
  printTable(
    "Serving: aggregate generated tokens/s, HTTP (gantry serve) vs in-process engine, 64 tokens per request, medians of interleaved rounds (ratio: median of per-round ratios)",
    [
      "model",
      "concurrency",
      "in-process tok/s",
      "HTTP tok/s",
      "HTTP ÷ in-process",
      "TTFT p50 in-process ms",
      "TTFT p50 HTTP ms",
    ],
    rows.map((r) => [
      r.model,
      String(r.concurrency),
      r.inProcessTps,
      r.httpTps,
      r.ratio,
      r.inProcessTtftMs,
      r.httpTtftMs,
    ]),
  );
  const scaling = ["bench-250m", "smollm2-135m"].map((m) => {
    const c1 = rows.find((r) => r.model === m && r.concurrency === 1),
      c4 = rows.find((r) => r.model === m && r.concurrency === 4);
    return [
      m,
      c1 && c4 ? c4.httpTps / c1.httpTps : Number.NaN,
      c1 && c4 ? c4.inProcessTps / c1.inProcessTps : Number.NaN,
    ];
  });
  printTable(
    "Batching: aggregate tokens/s at concurrency 4 ÷ concurrency 1",
    ["model", "HTTP c4 ÷ c1", "in-process c4 ÷ c1"],
    scaling as Array<Array<string | number>>,
  );
  const { benchSpeculative, speculativeCases } = await import("./speculative.ts");
  const smollm2 = { label: "smollm2-135m", path: await smollm2Path() };
  const spec = await benchSpeculative(speculativeCases(smollm2), {
    rounds: Number(process.env.GANTRY_BENCH_ROUNDS ?? 5),
  });
  printTable(
    `Speculative decoding: decode tok/s of one greedy stream (128 tokens, /api/generate), without and with drafts, medians of interleaved rounds; ${(await import("node:os")).cpus().length} CPUs, load average at the start → end of each row`,
    ["case", "without tok/s", "with tok/s", "with ÷ without", "acceptance rate", "load average"],
    spec.map((r) => [r.label, r.withoutTps, r.withTps, r.ratio, r.acceptanceRate, r.load]),
  );
  const { benchToolCalls } = await import("./tool-calls.ts");
  const tool = await benchToolCalls(
    { label: "bench-250m", path: await benchModelPath("250m") },
    { rounds: Number(process.env.GANTRY_BENCH_ROUNDS ?? 9) },
  );
  printTable(
    "Tool calls: decode tok/s of plain generation (tool_choice auto, answered without a call: the same prompt) vs generation under the tool-call grammar (tool_choice required, a string argument: every token constrained), 64 tokens, one stream, /v1/chat/completions; time to a complete call of a tool with enum, integer and boolean arguments",
    ["model", "plain tok/s", "grammar tok/s", "grammar ÷ plain", "complete call ms", "call tokens"],
    [[tool.model, tool.plainTps, tool.grammarTps, tool.ratio, tool.callMs, tool.callTokens]],
  );
  const { benchConversations, conversationTables } = await import("./conversations.ts");
  const conversations = await benchConversations(await smollm2Path());
  for (const t of conversationTables(conversations)) printTable(t.title, t.header, t.rows);
}

if (run("llama") || run("causes") || run("builds")) {
  const rounds = Number(process.env.GANTRY_BENCH_ROUNDS ?? 3);
  const shapes = (process.env.GANTRY_BENCH_MODELS ?? "250m,1b").split(",").map((x) => x.trim()) as BenchShapeName[];
  const models: BenchModel[] = [];
  for (const shape of shapes) models.push({ label: `bench-${shape}`, path: await benchModelPath(shape) });
  const llamaEnv = parseEnv(BenchLlamaEnvSchema, process.env);
  const gpu = gpuRun(llamaEnv);
  const scenarios = llamaEnv.GANTRY_BENCH_STREAMS
    ? streamScenarios(llamaEnv.GANTRY_BENCH_STREAMS, llamaEnv.GANTRY_BENCH_TOKENS)
    : undefined;
  const parallel = Math.max(8, ...(llamaEnv.GANTRY_BENCH_STREAMS ?? []));
  const shape = { threads: Number(process.env.GANTRY_BENCH_THREADS ?? 2), parallel, contextPerSequence: 1024 };
  const o = {
    rounds,
    shape,
    llamaSlots: llamaSlotsFromEnv(),
    llamaBackendSampling: llamaEnv.GANTRY_BENCH_LLAMA_BACKEND_SAMPLING === "on",
    ...(gpu ? { gpu } : {}),
    // The stream counts' runs (the GPU check) are set against llama.cpp's own batched decode too.
    ...(scenarios ? { scenarios, ceiling: true } : {}),
  };
  const { benchCauses, benchLlamaServer } = await import("./llama-cpp/compare.ts");
  const { benchKvCache } = await import("./llama-cpp/kv-cache.ts");
  const { benchEngineBuilds } = await import("./engine-builds.ts");
  const tables = [
    ...(run("llama") ? [...(await benchLlamaServer(models, o)), await benchKvCache(models, o)] : []),
    ...(run("causes") ? await benchCauses(models, o) : []),
    ...(run("builds") ? [await benchEngineBuilds(models, o)] : []),
  ];
  for (const t of tables) printTable(t.title, t.header, t.rows);
}

if (run("step")) {
  const { benchStep, stepTable } = await import("./step.ts");
  const o = {
    streamCounts: (process.env.GANTRY_BENCH_STEP_STREAMS ?? "1,8,32").split(",").map(Number),
    tokens: Number(process.env.GANTRY_BENCH_STEP_TOKENS ?? 128),
    threads: Number(process.env.GANTRY_BENCH_THREADS ?? 2),
  };
  const load = (await import("node:os")).loadavg()[0]!;
  const t = stepTable(await benchStep(o), o, load);
  printTable(t.title, t.header, t.rows);
}

if (run("step-pipeline")) {
  const { benchStep, stepPipelineTable } = await import("./step.ts");
  const o = {
    tokens: Number(process.env.GANTRY_BENCH_STEP_TOKENS ?? 128),
    threads: Number(process.env.GANTRY_BENCH_THREADS ?? 1),
  };
  const load = (await import("node:os")).loadavg()[0]!;
  const rows = [];
  // Interleaved: each stream count without, then with the pipeline, each row printed as it is measured.
  for (const streams of (process.env.GANTRY_BENCH_STEP_STREAMS ?? "1,8,32").split(",").map(Number))
    for (const pipeline of ["off", "on"] as const)
      rows.push(
        ...(await benchStep({
          ...o,
          streamCounts: [streams],
          parallel: 32,
          pipeline,
          onRow: (r) =>
            console.log(
              `step-pipeline ${pipeline} ${streams}: host wall ${r.hostWallUsPerStep.toFixed(0)} µs/step (${r.gapWallUsPerStep.toFixed(0)} between decodes), decode ${r.decodeMsPerStep.toFixed(2)} ms/step, ${r.steps} steps (${r.pipelinedSteps} pipelined)`,
            ),
        })),
      );
  const t = stepPipelineTable(rows, o, load);
  printTable(t.title, t.header, t.rows);
}

if (run("pull")) {
  const { benchPull } = await import("./pull.ts");
  const rows = await benchPull();
  printTable(
    "Pull: throughput from the local hub (250 MB GGUF), gantry pull against curl -o, median of interleaved rounds",
    ["client, link", "MB/s", "s", "÷ curl", "rounds", "MB"],
    rows.map((r) => [r.name, r.mbPerSec, r.seconds, r.vsCurl, r.rounds, r.megabytes]),
  );
}

if (run("cli")) {
  const { benchCli } = await import("./cli.ts");
  const rows = await benchCli();
  printTable(
    "CLI: time to first token with the server already up (smollm2:135m, 32 tokens), median of interleaved rounds",
    ["client", "TTFT ms", "total ms", "rounds"],
    rows.map((r) => [r.client, r.ttftMs, r.totalMs, r.rounds]),
  );
}

if (run("operator")) {
  const { benchOperator, printOperatorTable } = await import("./operator.ts");
  printOperatorTable(await benchOperator());
}

if (run("platform")) {
  const { benchRunApp, RUN_APP_HEADER, runAppTitle } = await import("./run-app.ts");
  const { benchPlatform, PLATFORM_HEADER, platformTitle } = await import("./platform.ts");
  const runRows = await benchRunApp({ rounds: Number(process.env.GANTRY_BENCH_ROUNDS ?? 3) });
  printTable(
    runAppTitle(),
    RUN_APP_HEADER,
    runRows.map((r) => [r.path, r.listeningSeconds, r.firstTokenSeconds, r.answerSeconds, String(r.rounds)]),
  );
  const rows = await benchPlatform({ rounds: Number(process.env.GANTRY_BENCH_ROUNDS ?? 3) });
  printTable(
    platformTitle(),
    PLATFORM_HEADER,
    rows.map((r) => [r.path, r.readySeconds, r.firstAnswerSeconds, String(r.rounds)]),
  );
}

if (run("gateway")) {
  const { benchGateway, gatewayParts } = await import("./gateway/bench.ts");
  const { benchGatewayCpu } = await import("./gateway/cpu.ts");
  const { benchColdStart, coldStartRow } = await import("./gateway/cold-start.ts");
  const { benchUsageWrites } = await import("./gateway/usage-writes.ts");
  const parts = gatewayParts();
  const g =
    parts.has("proxy") || parts.has("stream")
      ? await benchGateway({ rounds: Number(process.env.GANTRY_BENCH_ROUNDS ?? 3), parts })
      : undefined;
  const loadNote = g ? `load average ${g.load.before.toFixed(2)} before, ${g.load.after.toFixed(2)} after` : "";
  if (g?.proxy)
    printTable(
      `Gateway: small requests (GET /api/version) against the same gantry serve, one connection (latency) and 32 connections (requests/s), auth on; medians of ${g.rounds} interleaved rounds; nginx ${g.nginx ? "(Debian package, 1 worker)" : "not installed (apt-get install nginx)"}; ${loadNote}. Targets: added p50 ≤ 0.2 ms, requests/s ≥ 0.5 × nginx`,
      ["path", "p50 ms", "p99 ms", "added p50 ms", "added p99 ms", "req/s @32", "÷ nginx"],
      // the added latency to the µs
      g.proxy.map((r) => [
        r.target,
        r.p50Ms,
        r.p99Ms,
        r.addedP50Ms.toFixed(3),
        r.addedP99Ms.toFixed(3),
        r.rps32,
        r.vsNginx,
      ]),
    );
  if (g?.stream)
    printTable(
      `Gateway: tokens/s of a long stream (SmolLM2-135M, 256 tokens, NDJSON), client side, medians of ${g.stream.rounds} interleaved rounds; ${loadNote}. Target ≥ 0.99 × direct`,
      ["direct tok/s", "through the gateway tok/s", "gateway ÷ direct", "through nginx tok/s", "nginx ÷ direct"],
      [[g.stream.directTps, g.stream.gatewayTps, g.stream.ratio, g.stream.nginxTps ?? "-", g.stream.nginxRatio ?? "-"]],
    );
  if (parts.has("cpu")) await benchGatewayCpu();
  if (parts.has("idle")) {
    const { benchIdleConnections, printIdleTable } = await import("./gateway/idle.ts");
    printIdleTable(await benchIdleConnections());
  }
  if (parts.has("log")) {
    const { benchLogLines, printLogTable } = await import("./gateway/log-lines.ts");
    printLogTable(await benchLogLines());
  }
  if (parts.has("cold")) {
    const cold = await benchColdStart(Number(process.env.GANTRY_BENCH_COLD_ROUNDS ?? 2));
    printTable(
      "Gateway: cold start to first token from zero replicas (test control plane, process runtime, SmolLM2 in the model volume) against the model's own start (gantry serve --model spawned locally, to first token); medians. Target: cold ≤ own start + 2 s",
      ["rounds", "own start ms", "cold start via gateway ms", "difference ms"],
      [coldStartRow(cold)],
    );
  }
  if (parts.has("usage")) {
    const u = await benchUsageWrites();
    printTable(
      "Gateway: usage persistence under load (usage ConfigMap writes while metering a steady request stream, flush every 5 s)",
      ["seconds", "requests metered", "orgs", "writes", "conflicts", "writes per org per minute"],
      [[u.seconds, u.metered, u.orgs, u.writes, u.conflicts, u.writesPerOrgPerMinute]],
    );
  }
}

if (run("vision")) {
  const { benchVision, VISION_HEADER, visionTableRows } = await import("./vision.ts");
  const { benchAddonAb } = await import("./addon-ab.ts");
  const rounds = Number(process.env.GANTRY_BENCH_ROUNDS ?? 3);
  printTable(
    `Vision: image requests on the generated pair (tiny llama + LLaVA-style projector, 96 px images, ${"greedy"}, 32 tokens), Gantry vs llama-server --mmproj on the same files, 2 threads, 4 parallel sequences, a new image per request, medians over ${rounds} interleaved rounds`,
    VISION_HEADER,
    visionTableRows(await benchVision(rounds)),
  );
  // The extension must not slow text down: the addon with mtmd against the same build without it.
  await benchAddonAb(await benchModelPath("250m"), Number(process.env.GANTRY_BENCH_ROUNDS ?? 5), 2);
}

if (run("console")) {
  const { benchConsole } = await import("./console.ts");
  const rounds = Number(process.env.GANTRY_BENCH_ROUNDS ?? 5);
  const { loadavg } = await import("node:os");
  const before = loadavg()[0]!.toFixed(2);
  const rows = await benchConsole(rounds);
  printTable(
    `Console: the first page in headless Chromium against a gateway on the test control plane (an org with 3 apps), ${rounds} rounds; bytes as transferred (compressed bodies + headers), medians; time from navigation to the apps list shown, min / median / max; load average ${before} before, ${loadavg()[0]!.toFixed(2)} after. Target: first page < 150 KB`,
    ["case", "KB transferred", "requests", "ms to shown (min / med / max)"],
    rows.map((r) => [r.case, r.kb, String(r.requests), r.ms]),
  );
}

if (run("routing")) {
  const { runRoutingBench } = await import("./routing.ts");
  await runRoutingBench();
}

if (run("image")) {
  const { benchImage, imageParts } = await import("./image.ts");
  const { loadavg } = await import("node:os");
  const before = loadavg()[0]!.toFixed(2);
  const parts = imageParts(process.env.GANTRY_BENCH_IMAGE_PARTS);
  const { rows } = await benchImage(Number(process.env.GANTRY_BENCH_ROUNDS ?? 3), parts);
  printTable(
    `Image (test/bench/image.ts; ${[...parts].join(", ")}): npm run image's build times, the image's size, the container's cold start, an app's first token as a real pod and as a process pod; load average ${before} before, ${loadavg()[0]!.toFixed(2)} after`,
    ["what", "figure"],
    rows,
  );
}

if (run("queue")) {
  const { benchQueue } = await import("./queue.ts");
  const load = (await import("node:os")).loadavg()[0]!;
  const r = await benchQueue({ drain: Number(process.env.GANTRY_BENCH_QUEUE_DRAIN ?? 10_000), overheadRounds: 200 });
  const o = r.overhead;
  printTable(
    `Queue: submit → COMPLETED (status stream) against the synchronous call, stand-in pod, one at a time, ${o.n} each (load ${load.toFixed(1)})`,
    ["path", "p50 ms", "p90 ms"],
    [
      ["synchronous", o.syncP50, o.syncP90],
      ["queue", o.queueP50, o.queueP90],
      ["overhead", o.queueP50 - o.syncP50, o.queueP90 - o.syncP90],
    ],
  );
  printTable(
    "Queue: submissions accepted (stored in the broker) from 64 connections, workers draining meanwhile; then every request run",
    [
      "submitted",
      "accepted/s",
      "CPU ms/submission gateway + broker",
      "s to accept",
      "completed",
      "failed",
      "lost",
      "distinct ids at pod",
      "s to drain",
    ],
    [
      [
        r.drain.n,
        r.accepted.perSecond,
        `${r.accepted.gatewayCpuMs.toFixed(2)} + ${r.accepted.brokerCpuMs.toFixed(2)}`,
        r.accepted.seconds,
        r.drain.completed,
        r.drain.failed,
        r.drain.n - r.drain.completed - r.drain.failed,
        r.drain.distinctAtPod,
        r.drain.seconds,
      ],
    ],
  );
}

if (run("rerank")) {
  const { benchRerank } = await import("./rerank.ts");
  const rows = await benchRerank(Number(process.env.GANTRY_BENCH_ROUNDS ?? 9), (line) => console.log(line));
  printTable(
    `Rerank: a 32-document request on the tiny reranker (4-12 words each), medians of interleaved rounds; ${(await import("node:os")).cpus().length} CPUs, load average ${(await import("node:os")).loadavg()[0]!.toFixed(2)} at the end`,
    ["path", "documents/s", "ms per request"],
    rows.map((r) => [r.path, r.docsPerSecond, r.msPerRequest]),
  );
}
