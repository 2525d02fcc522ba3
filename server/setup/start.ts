// `npm start`: fetch the default model (cached, sha256-verified), import it into the store as smollm2:135m when
// missing, start `gantry serve` with it loaded, and print how to call the server.
import { parseEnv, processEnvironment } from "../common/config.ts";
import { withOllamaAliases } from "../config.ts";
import { createLogger } from "../common/logger.ts";
import { exitOnShutdownSignals } from "../common/shutdown.ts";
import { parseHostPort } from "../common/host-port.ts";
import { startServer } from "../serve.ts";
import { ModelStore } from "../store/model-store.ts";
import { ServeProcessEnvSchema } from "./config.ts";
import { DEFAULT_MODEL, ensureDefaultModelFile } from "./default-model.ts";

const config = parseEnv(ServeProcessEnvSchema, withOllamaAliases(processEnvironment()));
const logger = createLogger({ level: config.GANTRY_LOG_LEVEL, name: "gantry-serve" });
const name = DEFAULT_MODEL.name;

const file = await ensureDefaultModelFile({ cacheDir: config.GANTRY_CACHE, logger });
const store = new ModelStore({ root: config.GANTRY_MODELS, logger });
if (!(await store.list()).some((m) => m.name === name)) {
  process.stderr.write(`importing ${file} into the model store as ${name}\n`);
  await store.create({ model: name, from: file }, () => {});
}

const running = await startServer(config, logger, { preload: [name] });
while (running.readiness.loading) await new Promise((r) => setTimeout(r, 100));
if (running.readiness.failed) {
  process.stderr.write(`${running.readiness.failed}\n`);
  await running.close();
  process.exit(1);
}
const { port } = parseHostPort(config.GANTRY_HOST);
const base = running.url;
process.stderr.write(`
Gantry is serving ${name} at ${base} (port ${port}). Try:

  curl ${base}/api/chat -d '{"model": "${name}", "messages": [{"role": "user", "content": "Why is the sky blue?"}], "stream": false}'

  curl ${base}/v1/chat/completions -H 'Content-Type: application/json' \\
    -d '{"model": "${name}", "messages": [{"role": "user", "content": "Hello!"}]}'

  // with the openai npm client
  import OpenAI from "openai";
  const client = new OpenAI({ baseURL: "${base}/v1", apiKey: "unused" });
  const r = await client.chat.completions.create({ model: "${name}", messages: [{ role: "user", content: "Hello!" }] });
  console.log(r.choices[0].message.content);

Press Ctrl-C to stop.
`);
exitOnShutdownSignals(() => running.close(), logger);
