import { test } from "node:test";
import assert from "node:assert/strict";
import { stepParts, type CpuProfile } from "../../bench/step.ts";
import { parseBatchedBench } from "../../bench/llama-cpp/batched-bench.ts";

const frame = (functionName: string, url: string) => ({
  functionName,
  url,
  scriptId: "0",
  lineNumber: 0,
  columnNumber: 0,
});

test("stepParts puts each sample in the part its innermost naming frame says, within the window only", () => {
  // root → generation loop → the step call's decode (a native call's time is its caller's); root → idle; root → http
  // write → a sampler call inside; root → an unnamed helper.
  const profile: CpuProfile = {
    nodes: [
      { id: 1, callFrame: frame("(root)", ""), children: [2, 4, 5, 7] },
      { id: 2, callFrame: frame("next", "file:///x/server/engine/generation.ts"), children: [3] },
      { id: 3, callFrame: frame("decode", "file:///x/server/engine/step-call.ts") },
      { id: 4, callFrame: frame("(idle)", "") },
      { id: 5, callFrame: frame("write", "node:_http_outgoing"), children: [6] },
      { id: 6, callFrame: frame("sample", "file:///x/server/engine/token-sampler.ts") },
      { id: 7, callFrame: frame("helper", "file:///x/lib.js") },
    ],
    startTime: 1000,
    endTime: 2000,
    // Samples at 1100, 1200, 1300, 1400, 1500, 1600; each stands for the time to the next.
    samples: [3, 3, 4, 6, 7, 2],
    timeDeltas: [100, 100, 100, 100, 100, 100],
  };
  const ms = stepParts(profile, 1150, 1550);
  assert.deepEqual(Object.fromEntries(ms), {
    decode: 0.1,
    "idle (waiting)": 0.1,
    sampling: 0.1,
    other: 0.1,
  });
});

test("parseBatchedBench reads llama-batched-bench's JSONL rows and skips its log lines", () => {
  const out = [
    "main: n_kv_max = 8192",
    '{"n_kv_max": 8192, "pp": 128, "tg": 128, "pl": 1, "n_kv": 256, "t_pp": 0.1, "speed_pp": 1280.0, "t_tg": 0.5, "speed_tg": 256.0, "t": 0.6, "speed": 426.6}',
    '{"n_kv_max": 8192, "pp": 128, "tg": 128, "pl": 32, "n_kv": 8192, "t_pp": 1.0, "speed_pp": 4096.0, "t_tg": 1.3, "speed_tg": 3150.7, "t": 2.3, "speed": 3561.0}',
    "",
  ].join("\n");
  assert.deepEqual(parseBatchedBench(out), [
    { pl: 1, pp: 128, tg: 128, speedTg: 256 },
    { pl: 32, pp: 128, tg: 128, speedTg: 3150.7 },
  ]);
});
