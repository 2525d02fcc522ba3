// The GPU check's serving phase: `gantry serve` as a user starts it, with GANTRY_GPU set, one model created and asked
// for tokens; then where the model is, as /api/ps (size_vram) and `gantry ps` (PROCESSOR) report it and as nvidia-smi
// sees the server's GPU memory. On a GPU the whole model must be in GPU memory ("100% GPU"), on the CPU none of it.
import fs from "node:fs";
import path from "node:path";
import { gpuMemoryByPid } from "../bench/llama-cpp/gpu-memory.ts";
import { runOk } from "../integration/cli/run-cli.ts";
import { createModel, startTestServer } from "../support/server.ts";

export interface ServeCheck {
  model: string;
  sizeBytes: number;
  sizeVram: number;
  processor: string;
  gpuMemoryMiB: number | undefined;
  engine: string;
  generated: number;
  tokensPerSecond: number;
}

export async function serveCheck(o: {
  gpu: "cuda" | "off";
  modelPath: string;
  threads: number;
  storeDir: string;
  logFile: string;
}): Promise<ServeCheck> {
  fs.rmSync(o.storeDir, { recursive: true, force: true });
  fs.mkdirSync(o.storeDir, { recursive: true });
  const srv = await startTestServer({
    modelsDir: o.storeDir,
    env: { GANTRY_GPU: o.gpu, GANTRY_THREADS: String(o.threads), GANTRY_KEEP_ALIVE: "-1", GANTRY_LOG_LEVEL: "info" },
  });
  try {
    const model = path.basename(o.modelPath, ".gguf");
    await createModel(srv.url, model, o.modelPath);
    const r = await fetch(`${srv.url}/api/generate`, {
      method: "POST",
      body: JSON.stringify({ model, prompt: "Tell me a story", stream: false, options: { num_predict: 32 } }),
    });
    if (r.status !== 200) throw new Error(`generate: ${r.status} ${await r.text()}`);
    const gen = (await r.json()) as { eval_count: number; eval_duration: number };
    const ps = (await (await fetch(`${srv.url}/api/ps`)).json()) as {
      models: Array<{ size: number; size_vram: number }>;
    };
    const cli = await runOk(["ps"], { env: { GANTRY_HOST: `127.0.0.1:${srv.port}` } });
    const version = (await (await fetch(`${srv.url}/api/version`)).json()) as { engine: Record<string, unknown> };
    const row = cli.stdout.split("\n").find((l) => l.startsWith(model));
    const check: ServeCheck = {
      model,
      sizeBytes: ps.models[0]?.size ?? 0,
      sizeVram: ps.models[0]?.size_vram ?? 0,
      processor: /\d+%(\/\d+%)? [A-Z/]+/.exec(row ?? "")?.[0] ?? "?",
      gpuMemoryMiB: srv.proc.pid === undefined ? undefined : (await gpuMemoryByPid()).get(srv.proc.pid),
      engine: JSON.stringify(version.engine),
      generated: gen.eval_count,
      tokensPerSecond: gen.eval_count / (gen.eval_duration / 1e9),
    };
    fs.writeFileSync(o.logFile, `$ gantry ps\n${cli.stdout}\n${JSON.stringify(check, null, 2)}\n\nserver log:\n`);
    const want = o.gpu === "cuda" ? "100% GPU" : "100% CPU";
    const whole = o.gpu === "cuda" ? check.sizeVram === check.sizeBytes : check.sizeVram === 0;
    if (!whole || check.processor !== want || check.generated !== 32)
      throw new Error(
        `expected ${want}: /api/ps size_vram ${check.sizeVram} of ${check.sizeBytes} bytes, gantry ps "${check.processor}", ${check.generated} of 32 tokens`,
      );
    return check;
  } finally {
    await srv.stop();
    fs.appendFileSync(o.logFile, srv.logs());
  }
}
