// The console's part of the management API, put together for gateway.ts: the session check in front of every org
// route, the console's own routes (its pages, sign-in and sign-out), the routes of one app and the playground's way
// into the app pipeline.
import type { ClientOf } from "../1-dispatch/client.ts";
import path from "node:path";
import type { Logger } from "../../common/logger.ts";
import { packageRoot } from "../../common/package-files.ts";
import type { KeyCheck } from "../2-authenticate/authorization.ts";
import type { AppAdmin } from "../management/app-admin.ts";
import type { IncomingMessage } from "node:http";
import { appInfo, type ManagementDeps } from "../management/management-api.ts";
import { createAppRoutes, type ForwardToApp } from "../management/app-api.ts";
import type { AppSource, KeyStore } from "../ports.ts";
import type { ConsoleConfig } from "./console-config.ts";
import { ConsoleSessions, SESSION_PATH } from "./console.ts";
import { MemorySessions } from "./memory-sessions.ts";
import type { SessionStore } from "./session.ts";
import { CONSOLE_PREFIX, StaticConsole } from "./static.ts";

/** Where `npm run build` puts the console (the same from the sources and from the installed package). */
export const consoleDir = (): string => path.join(packageRoot(), "dist", "console");

export interface ConsoleWiring {
  config: ConsoleConfig;
  sessions?: SessionStore;
  admin?: AppAdmin;
  apps: Pick<AppSource, "get">;
  keys: Pick<KeyStore, "byId">;
  checkHeader(req: IncomingMessage): KeyCheck;
  checkKey(key: string): KeyCheck;
  clientOf: ClientOf;
  forwardToApp: ForwardToApp;
  maxBodyBytes: number;
  publicUrl?: string;
  /** fal's queue API is on (app objects carry their queueUrl). */
  queue?: boolean;
  /** An app's latest queued requests (the console's Requests list). */
  requests?: (org: string, app: string) => Promise<unknown[]> | undefined;
  logger: Logger;
  now: () => number;
  /** The built console (default: dist/console of the package). */
  assetsDir?: string;
}

/** The management dependencies the console adds (check, console, appRoutes), and its sessions to start and stop. */
export function consoleManagement(w: ConsoleWiring): {
  deps: Pick<ManagementDeps, "check" | "console" | "appRoutes">;
  sessions: ConsoleSessions;
} {
  const sessions = new ConsoleSessions({
    config: w.config,
    sessions: w.sessions ?? new MemorySessions(),
    keys: w.keys,
    checkKey: w.checkKey,
    checkHeader: w.checkHeader,
    clientOf: w.clientOf,
    maxBodyBytes: w.maxBodyBytes,
    logger: w.logger,
    now: w.now,
  });
  const pages = new StaticConsole(w.assetsDir ?? consoleDir());
  const appRoutes = createAppRoutes({
    apps: w.apps,
    ...(w.admin ? { admin: w.admin } : {}),
    forwardToApp: w.forwardToApp,
    maxBodyBytes: w.maxBodyBytes,
    logger: w.logger,
    view: (a) => appInfo(a, w.publicUrl, w.queue === true),
    ...(w.requests ? { requests: w.requests } : {}),
  });
  return {
    sessions,
    deps: {
      check: (req) => sessions.check(req),
      appRoutes,
      console: {
        handle: async (req, res, p, requestId) => {
          if (!w.config.enabled) return false;
          if (p === SESSION_PATH) {
            await sessions.handle(req, res, requestId);
            return true;
          }
          if (p === CONSOLE_PREFIX || p.startsWith(`${CONSOLE_PREFIX}/`)) {
            pages.serve(req, res, p, requestId);
            return true;
          }
          return false;
        },
        keyRevoked: (org, keyId) => sessions.endSessionsOf(org, keyId),
      },
    },
  };
}
