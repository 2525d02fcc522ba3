// Composition root of `gantry gateway`: config → logger → kubeconfig → watches (ModelApps, EndpointSlices, key
// Secrets, usage ConfigMaps, console session Secrets) → the gateway pipeline → load reports to the operator → HTTP →
// graceful shutdown.
import crypto from "node:crypto";
import type http from "node:http";
import os from "node:os";
import { parseHostPort } from "../common/host-port.ts";
import { loadKubeConfig } from "../common/kubeconfig.ts";
import { bufferedDestination, createLogger, type Logger } from "../common/logger.ts";
import { exitOnShutdownSignals } from "../common/shutdown.ts";
import { VERSION } from "../common/version.ts";
import { loadGatewayConfig, type GatewayConfig } from "./config.ts";
import type { GatewayEnv } from "./env.ts";
import { Gateway } from "./gateway.ts";
import { createGatewayServer } from "./http-server.ts";
import { KubeApps } from "./kube/apps.ts";
import { KubeAppAdmin } from "./kube/app-operations.ts";
import { KubeKeys } from "./kube/key-store.ts";
import { KubeSessions } from "./kube/sessions.ts";
import { KubeUsage } from "./kube/usage-store.ts";
import { OperatorLoadReporter } from "./kube/load-reporter.ts";

export interface GatewayOptions {
  configFile?: string;
  kubeconfig?: string;
  /** Command-line overrides of the config file (listen, operatorUrls). */
  overrides?: Partial<GatewayConfig>;
  /** The gateway's environment variables, parsed at start (server/gateway/env.ts). */
  env: GatewayEnv;
}

export interface RunningGateway {
  gateway: Gateway;
  url: string;
  config: GatewayConfig;
  close(): Promise<void>;
}

export async function startGateway(opts: GatewayOptions, logger: Logger): Promise<RunningGateway> {
  const { env } = opts;
  const config = loadGatewayConfig(opts.configFile, opts.overrides ?? {});
  const kc = loadKubeConfig({
    file: opts.kubeconfig,
    kubeconfigEnv: env.KUBECONFIG,
    inCluster: Boolean(env.KUBERNETES_SERVICE_HOST),
  });
  const identity = env.POD_NAME || `${os.hostname()}-${crypto.randomBytes(3).toString("hex")}`;
  const ns = config.watchNamespace ? { namespace: config.watchNamespace } : {};
  const apps = new KubeApps(kc, { ...ns, logger });
  const keys = new KubeKeys(kc, { ...ns, logger });
  const sessions = new KubeSessions(kc, { ...ns, logger });
  const late: { gateway?: Gateway } = {}; // the callbacks below run after the gateway exists
  const usage = new KubeUsage(kc, {
    ...ns,
    flushMs: config.usage.flushSeconds * 1000,
    retentionDays: config.usage.retentionDays,
    logger,
    onWrite: (result) => late.gateway?.metrics.usageWrites.inc({ result }),
  });
  const reporter = new OperatorLoadReporter({
    gateway: identity,
    urls: config.operatorUrls,
    ...(config.operatorTokenFile ? { tokenFile: config.operatorTokenFile } : {}),
    intervalMs: config.reportIntervalSeconds * 1000,
    snapshot: () => late.gateway?.loadSnapshot() ?? [],
    logger,
    onResult: (result) => late.gateway?.metrics.loadReports.inc({ result }),
  });
  const g = new Gateway({
    config,
    apps,
    keys,
    usage,
    load: reporter,
    sessions,
    appAdmin: new KubeAppAdmin(kc),
    logger,
    ...(config.publicUrl ? { publicUrl: config.publicUrl } : {}),
  });
  late.gateway = g;
  const refused = { onRefusedConnection: () => g.metrics.connectionsRefused.inc() };
  const server = createGatewayServer(config, g.handle, refused);
  const { host, port } = parseHostPort(config.listen, 8080);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  let metricsServer: http.Server | undefined;
  if (config.metricsListen) {
    const m = parseHostPort(config.metricsListen, 9090);
    const ms = createGatewayServer(config, g.handleSystem, refused);
    await new Promise<void>((resolve, reject) => {
      ms.once("error", reject);
      ms.listen(m.port, m.host, () => resolve());
    });
    metricsServer = ms;
  }
  const addr = server.address();
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${typeof addr === "object" && addr ? addr.port : port}`;
  logger.info(
    { url, identity, version: VERSION, namespace: config.watchNamespace ?? "(all)", operators: config.operatorUrls },
    "gantry gateway listening",
  );
  // Watches start after listen, so /healthz answers while the caches fill (/readyz says 503 until they are synced).
  void Promise.all([apps.start(), keys.start(), usage.start(), sessions.start()]).then(
    () => {
      logger.info({}, "caches synced");
      reporter.start();
    },
    (err: unknown) => {
      logger.error({ err: String(err) }, "gateway failed to start its watches");
      process.exit(1);
    },
  );
  const prune = setInterval(() => g.upstreams.retain(apps.origins()), 30_000);
  prune.unref();
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      clearInterval(prune);
      server.close();
      server.closeIdleConnections();
      await g.close(config.shutdownSeconds * 1000);
      reporter.stop();
      await reporter.send().catch(() => undefined); // the operator hears at once that this gateway's load is gone
      server.closeAllConnections();
      metricsServer?.close();
      metricsServer?.closeAllConnections();
      await usage.stop();
      await Promise.all([apps.stop(), keys.stop(), sessions.stop()]);
    })());
  return { gateway: g, url, config, close };
}

export async function runGateway(opts: GatewayOptions): Promise<void> {
  // An access log line per request: buffered (docs/decisions/0002-access-log-through-pino.md).
  const logger = createLogger({
    level: opts.env.GANTRY_LOG_LEVEL,
    name: "gantry-gateway",
    destination: bufferedDestination(1),
  });
  const running = await startGateway(opts, logger);
  exitOnShutdownSignals(() => running.close(), logger);
}
