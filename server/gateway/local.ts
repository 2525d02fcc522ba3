// Composition root of the gateway for one app on this machine (`gantry run <file>::<export>`): the same pipeline as
// the cluster's (gateway.ts: routing, auth mode, key check, holds, proxying, usage), with the in-process seams of
// memory.ts — the app in a StaticApps table, a temporary key in MemoryKeys, usage in MemoryUsage — in front of a local
// `gantry serve`. Plain /v1 and /api requests are the app's too. See docs/gateway.md.
import { randomUUID } from "node:crypto";
import type { AuthMode } from "../../operator/api/v1alpha1/modelapp.ts";
import { connectUrl } from "../common/host-port.ts";
import type { Logger } from "../common/logger.ts";
import { appPathFor } from "../platform/local-app.ts";
import { parseGatewayConfig } from "./config.ts";
import { Gateway } from "./gateway.ts";
import { createGatewayServer } from "./http-server.ts";
import { endpointAt, MemoryKeys, MemoryUsage, StaticApps } from "./memory.ts";
import type { AppInfo } from "./ports.ts";

export interface LocalGatewayOptions {
  org: string;
  app: string;
  auth: AuthMode;
  /** The app's spec.loadBalancing (one local pod: it decides only what the access log says). */
  loadBalancing?: AppInfo["loadBalancing"];
  host: string;
  /** 0 picks a free port. */
  port: number;
  logger: Logger;
}

export interface LocalGateway {
  gateway: Gateway;
  /** Base URL as this machine reaches it (a wildcard listen address is reached through loopback). */
  base: string;
  /** The temporary admin key of the app's org, for a private or shared app (valid until close). */
  key?: string;
  /** The app answers from the server at `origin` (until then its requests are held, as for an app at zero). */
  serve(origin: string, model: string, servedModel: string): void;
  /** The app cannot start: held requests get 503 with the reason. */
  fail(reason: string, message: string): void;
  /** Lets running requests finish (up to deadlineMs), then stops listening. */
  close(deadlineMs: number): Promise<void>;
}

/** Why listening failed, said the way a user fixes it. */
function listenError(e: NodeJS.ErrnoException, host: string, port: number): Error {
  const where = `${host.includes(":") ? `[${host}]` : host}:${port}`;
  if (e.code === "EADDRINUSE")
    return new Error(`cannot listen on ${where}: the port is in use (choose another: --port)`);
  if (e.code === "EADDRNOTAVAIL" || e.code === "ENOTFOUND")
    return new Error(`cannot listen on ${where}: no such address on this machine (--host)`);
  if (e.code === "EACCES") return new Error(`cannot listen on ${where}: permission denied (choose a port above 1023)`);
  return new Error(`cannot listen on ${where}: ${e.message}`);
}

export async function startLocalGateway(o: LocalGatewayOptions): Promise<LocalGateway> {
  const apps = new StaticApps();
  const keys = new MemoryKeys();
  // One user on their own machine: no per-key limits (the cluster's defaults protect a shared gateway).
  const config = parseGatewayConfig({
    listen: `${o.host}:${o.port}`,
    limits: { requestsPerSecond: 0, burst: 1, concurrent: 0 },
    shutdownSeconds: 5,
  });
  // The gateway needs the URL, known once listening; no request is accepted before then.
  const handler: { gateway?: Gateway } = {};
  const server = createGatewayServer(config, (req, res) => {
    req.url = appPathFor(req.url ?? "/", o.org, o.app);
    handler.gateway!.handle(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (e: NodeJS.ErrnoException) => reject(listenError(e, o.host, o.port)));
    server.listen(o.port, o.host, () => resolve());
  });
  const port = (server.address() as { port: number }).port;
  const base = connectUrl(o.host, port);
  const g = new Gateway({ config, apps, keys, usage: new MemoryUsage(), logger: o.logger, publicUrl: base });
  handler.gateway = g;

  const info: AppInfo = {
    org: o.org,
    name: o.app,
    auth: o.auth,
    uid: randomUUID(),
    url: `${base}/${o.org}/${o.app}`,
    ...(o.loadBalancing ? { loadBalancing: o.loadBalancing } : {}),
  };
  const starting = { status: "False", reason: "Starting", message: "the model is being prepared" };
  apps.set({ ...info, ready: starting, replicas: 1, readyReplicas: 0 }, []);
  const key = o.auth === "public" ? undefined : (await keys.create(o.org, { scope: "admin", name: "gantry run" })).key;
  o.logger.info({ url: base, org: o.org, app: o.app, auth: o.auth }, "gateway listening");
  return {
    gateway: g,
    base,
    ...(key ? { key } : {}),
    serve(origin, model, servedModel) {
      const ready = { status: "True", reason: "Serving", message: "1 of 1 replicas ready" };
      apps.set({ ...info, model, servedModel, ready, replicas: 1, readyReplicas: 1 }, [endpointAt(origin)]);
    },
    fail(reason, message) {
      apps.set({ ...info, failed: { reason, message }, ready: { status: "False", reason, message } }, []);
    },
    async close(deadlineMs) {
      server.close();
      server.closeIdleConnections();
      await g.close(deadlineMs);
      server.closeAllConnections();
    },
  };
}
