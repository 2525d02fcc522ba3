// Composition root of `gantry operator`: config → logger → kubeconfig → controller (watches, leader election,
// workers, autoscaler) → HTTP (/healthz, /readyz, /metrics, /v1/load) → graceful shutdown on SIGTERM.
import crypto from "node:crypto";
import fs from "node:fs";
import type { Server } from "node:http";
import os from "node:os";
import type { KubeConfig } from "@kubernetes/client-node";
import { parseHostPort } from "../server/common/host-port.ts";
import { loadKubeConfig } from "../server/common/kubeconfig.ts";
import { createLogger, type Logger } from "../server/common/logger.ts";
import { exitOnShutdownSignals } from "../server/common/shutdown.ts";
import { VERSION } from "../server/common/version.ts";
import { loadOperatorConfig, resolveLeaderElection, type OperatorConfig, type Placement } from "./config.ts";
import { Controller } from "./controller/controller.ts";
import type { OperatorEnv } from "./env.ts";
import { createOperatorApp } from "./http.ts";
import { kubeTokenReviewer, LoadReportAuth } from "./load-auth.ts";

export interface OperatorOptions {
  configFile?: string;
  kubeconfig?: string;
  /** The operator's environment variables, parsed at start (operator/env.ts). */
  env: OperatorEnv;
}

export interface RunningOperator {
  controller: Controller;
  url: string;
  config: OperatorConfig;
  close(): Promise<void>;
}

export async function startOperator(opts: OperatorOptions, logger: Logger): Promise<RunningOperator> {
  const { env } = opts;
  const config = loadOperatorConfig(opts.configFile, env);
  const kc = loadKubeConfig({
    file: opts.kubeconfig,
    kubeconfigEnv: env.KUBECONFIG,
    inCluster: Boolean(env.KUBERNETES_SERVICE_HOST),
  });
  const identity = env.POD_NAME || `${os.hostname()}-${crypto.randomBytes(3).toString("hex")}`;
  const leaderElection = resolveLeaderElection(config.leaderElection, placement(kc, env));
  const controller = new Controller({ kc, config, logger, identity, leaderElection });
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
      leaderElection: leaderElection.enabled
        ? `on: Lease ${leaderElection.lease.namespace}/${leaderElection.lease.name}`
        : `off: ${leaderElection.reason}`,
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
    .start(
      () => {
        logger.error("lost leadership: exiting");
        void close().finally(() => process.exit(1));
      },
      (err) => {
        // A setup problem no retry fixes: one clear line, and out at once.
        logger.error(err.message);
        void close().finally(() => process.exit(1));
      },
    )
    .catch((err: unknown) => {
      logger.error({ err: String(err) }, "operator failed to start");
      process.exit(1);
    });
  return { controller, url, config, close };
}

/** A pod's service account files (mounted in every pod that has one). */
const SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/** Where the operator runs: in a pod (and its namespace) or beside a cluster (its kubeconfig context's namespace). */
function placement(kc: KubeConfig, env: OperatorEnv): Placement {
  const inPod = Boolean(env.KUBERNETES_SERVICE_HOST) && fs.existsSync(SERVICE_ACCOUNT_NAMESPACE);
  const podNamespace = inPod
    ? env.POD_NAMESPACE || fs.readFileSync(SERVICE_ACCOUNT_NAMESPACE, "utf8").trim()
    : undefined;
  return { inPod, podNamespace, contextNamespace: kc.getContextObject(kc.getCurrentContext())?.namespace };
}

export async function runOperator(opts: OperatorOptions): Promise<void> {
  const logger = createLogger({ level: opts.env.GANTRY_LOG_LEVEL, name: "gantry-operator" });
  const running = await startOperator(opts, logger);
  exitOnShutdownSignals(() => running.close(), logger);
}
