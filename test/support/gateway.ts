// Runs `gantry gateway` as a real process against the test control plane, as a user runs it next to a cluster: its own
// config file, the cluster's kubeconfig, a free port.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { stringify } from "yaml";
import type { ControlPlane } from "../cluster/control-plane.ts";
import { sumMetric } from "./operator.ts";
import { freePort, spawnGantry, type GantryProcess } from "./server.ts";

export interface TestGateway {
  url: string;
  configFile: string;
  logs(): string;
  metrics(): Promise<string>;
  metric(name: string, labels?: Record<string, string>): Promise<number>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  /** Starts it again on the same port (after stop), with the same config or with `config` in its place. */
  restart(config?: Record<string, unknown>): Promise<void>;
}

export async function startTestGateway(
  cp: Pick<ControlPlane, "kubeconfig">,
  config: Record<string, unknown>,
  port?: number,
): Promise<TestGateway> {
  port ??= await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-gateway-"));
  const configFile = path.join(dir, "gateway.yaml");
  const writeConfig = (c: Record<string, unknown>) =>
    fs.writeFileSync(configFile, stringify({ ...c, listen: `127.0.0.1:${port}` }));
  writeConfig(config);
  const url = `http://127.0.0.1:${port}`;
  let out = "";
  const spawn = () =>
    spawnGantry(
      ["gateway", "--config", configFile, "--kubeconfig", cp.kubeconfig],
      { GANTRY_LOG_LEVEL: "debug" },
      `${url}/readyz`,
      (status) => status === 200,
    );
  let p: GantryProcess = await spawn();
  const metrics = async () => (await fetch(`${url}/metrics`)).text();
  return {
    url,
    configFile,
    logs: () => out + p.logs(),
    metrics,
    metric: async (name, labels) => sumMetric(await metrics(), name, labels),
    stop: (signal) => p.stop(signal),
    restart: async (config) => {
      if (config) writeConfig(config);
      out += p.logs();
      p = await spawn();
    },
  };
}
