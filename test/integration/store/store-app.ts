// The real `gantry serve` application (startServer: the HTTP app, store routers, engine) in this process, on an
// ephemeral port with its own empty model store; `store` reads the same directory.
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { silentLogger } from "../../../server/common/logger.ts";
import { ServerConfigSchema } from "../../../server/config.ts";
import { startServer } from "../../../server/serve.ts";
import { ModelStore } from "../../../server/store/model-store.ts";
import { testEngineBuild } from "../../support/engine-build.ts";

export interface StoreApp {
  url: string;
  store: ModelStore;
  close(): Promise<void>;
}

export async function startStoreApp(): Promise<StoreApp> {
  const root = await fs.mkdtemp(path.join(os.tmpdir(), "gantry-store-http-"));
  const build = testEngineBuild();
  const config = ServerConfigSchema.parse({
    GANTRY_HOST: "127.0.0.1:0",
    GANTRY_MODELS: root,
    GANTRY_ENGINE_BUILD: build.mode,
    GANTRY_CACHE: build.cacheDir,
    GANTRY_ENGINE_CPU: build.cpuTarget,
  });
  const running = await startServer(config, silentLogger);
  return { url: running.url, store: new ModelStore({ root }), close: () => running.close(1_000) };
}
