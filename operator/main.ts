// Composition root of `gantry operator`: config → logger → kubeconfig → controller (watches, leader election,
// workers, autoscaler) → HTTP (/healthz, /readyz, /metrics, /v1/load) → graceful shutdown on SIGTERM.
import crypto from "node:crypto";
import type { Server } from "node:http";
import os from "node:os";
import { KubeConfig } from "@kubernetes/client-node";
import { parseHostPort } from "../server/common/host-port.ts";
import { createLogger, type Logger } from "../server/common/logger.ts";
import { exitOnShutdownSignals } from "../server/common/shutdown.ts";
import { VERSION } from "../server/common/version.ts";
import { loadOperatorConfig, type OperatorConfig } from "./config.ts";
import { Controller } from "./controller/controller.ts";
import { createOperatorApp } from "./http.ts";
import { kubeTokenReviewer, LoadReportAuth } from "./load-auth.ts";

export interface OperatorOptions {
  configFile?: string;
  kubeconfig?: string;
  env?: Record<string, string | undefined>;
}

export interface RunningOperator {
  controller: Controller;
  url: string;
  config: OperatorConfig;
  close(): Promise<void>;
}

export async function startOperator(opts: OperatorOptions, logger: Logger): Promise<RunningOperator> {
  const env = opts.env ?? process.env;
  const config = loadOperatorConfig(opts.configFile, env);
  const kc = new KubeConfig();
  if (opts.kubeconfig) kc.loadFromFile(opts.kubeconfig);
  else kc.loadFromDefault();
  const identity = env.POD_NAME || `${os.hostname()}-${crypto.randomBytes(3).toString("hex")}`;
  const controller = new Controller({ kc, config, logger, identity });
  const { host, port } = parseHostPort(config.listen);
  const server = await new Promise<Server>((resolve, reject) => {
    const loadAuth = new LoadReportAuth(kubeTokenReviewer(kc), config.loadReports.serviceAccounts, logger);
    const s = createOperatorApp(controller, logger, loadAuth).listen(port, host, () => resolve(s));
    s.once("error", reject);
  });
  const addr = server.address();
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${typeof addr === "object" && addr ? addr.port : port}`;
  logger.info(
    {
      url,
      identity,
      version: VERSION,
      namespace: config.watchNamespace ?? "(all)",
      api: kc.getCurrentCluster()?.server,
    },
    "gantry operator listening",
  );
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      await controller.stop();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    })());
  // Losing the lease while running means another replica leads now: exit and let the pod restart as a standby.
  void controller
    .start(() => {
      logger.error("lost leadership: exiting");
      void close().finally(() => process.exit(1));
    })
    .catch((err: unknown) => {
      logger.error({ err: String(err) }, "operator failed to start");
      process.exit(1);
    });
  return { controller, url, config, close };
}

export async function runOperator(opts: OperatorOptions): Promise<void> {
  const logger = createLogger({ level: (opts.env ?? process.env).GANTRY_LOG_LEVEL ?? "info", name: "gantry-operator" });
  const running = await startOperator(opts, logger);
  exitOnShutdownSignals(() => running.close(), logger);
}
