// Where the CLI finds its server (GANTRY_HOST), and starting one in the background when none answers — as `ollama run`
// does on a laptop. Only a server on this machine is ever started; a remote address that does not answer is an error.
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ServerUnreachableError, type GantryClient } from "../api/client.ts";
import type { Environment } from "../common/config.ts";
import { connectUrl, parseHostPort } from "../common/host-port.ts";
import { siblingModule } from "../common/package-files.ts";
import type { CliEnv } from "./config.ts";

const DEFAULT_HOST = "127.0.0.1:11434";
const GANTRY_CLI = fileURLToPath(siblingModule(import.meta.url, "gantry"));

/** The base URL the CLI talks to. A wildcard listen address (0.0.0.0, ::) is reached through loopback. */
export function serverUrl(gantryHost: string | undefined): string {
  const value = gantryHost?.trim() || DEFAULT_HOST;
  const scheme = /^https:\/\//i.test(value) ? "https" : "http";
  const { host, port } = parseHostPort(value);
  return connectUrl(host, port, scheme);
}

export const isLoopback = (url: string): boolean => {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, "");
  return host === "localhost" || host === "::1" || host.startsWith("127.");
};

/** The variable that places gantry's own directory (CliEnv.GANTRY_MODELS, server/cli/config.ts). */
interface HomeEnv {
  GANTRY_MODELS?: string | undefined;
}

/**
 * Gantry's own directory: the parent of GANTRY_MODELS when set, else ~/.gantry. A store at the top of the filesystem
 * (the image's /models volume) is its own home: `/` is not writable in a container, the volume is.
 */
export function gantryHome(env: HomeEnv): string {
  const models = env.GANTRY_MODELS?.trim();
  if (!models) return path.join(os.homedir(), ".gantry");
  const store = path.resolve(models);
  const parent = path.dirname(store);
  return parent === path.parse(store).root ? store : parent;
}

/** The background server's log file: <gantry home>/logs/server.log. */
export const serverLogPath = (env: HomeEnv): string => path.join(gantryHome(env), "logs", "server.log");

/** The interactive chat's input history: <gantry home>/history. */
export const historyPath = (env: HomeEnv): string => path.join(gantryHome(env), "history");

async function answers(client: GantryClient): Promise<boolean> {
  try {
    await client.version();
    return true;
  } catch (e) {
    if (e instanceof ServerUnreachableError) return false;
    return true; // something answered, even if with an error
  }
}

export interface LaunchOptions {
  /** The CLI's settings (the engine setup's among them). */
  config: CliEnv;
  /** The background server's whole environment: the CLI's own, passed through (the server parses its schema). */
  env: Environment;
  say: (line: string) => void;
  timeoutMs?: number;
}

/** Returns once a server answers at client.baseUrl, starting a detached `gantry serve` first if needed. */
export async function ensureServer(client: GantryClient, opts: LaunchOptions): Promise<void> {
  if (await answers(client)) return;
  if (!isLoopback(client.baseUrl)) throw new ServerUnreachableError(client.baseUrl, null);
  // In the foreground, so a first engine build shows its progress here rather than only in the server's log.
  const { ensureEngineOnFirstUse } = await import("../setup/engine-first-use.ts");
  await ensureEngineOnFirstUse(opts.say, opts.config);
  const log = serverLogPath(opts.config);
  fs.mkdirSync(path.dirname(log), { recursive: true });
  const fd = fs.openSync(log, "a");
  const child = spawn(process.execPath, [GANTRY_CLI, "serve"], {
    detached: true,
    stdio: ["ignore", fd, fd],
    env: { ...opts.env } as NodeJS.ProcessEnv,
  });
  fs.closeSync(fd);
  let exited: number | null = null;
  child.once("exit", (code) => {
    exited = code ?? 1;
  });
  child.unref();
  opts.say(`started gantry server in the background (pid ${child.pid}, log ${log})`);
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  while (Date.now() < deadline) {
    if (exited !== null) throw new Error(`the background server exited with code ${exited}; see ${log}`);
    if (await answers(client)) return;
    await new Promise((r) => setTimeout(r, 150));
  }
  throw new Error(
    `the background server did not answer within ${Math.round((opts.timeoutMs ?? 60_000) / 1000)}s; see ${log}`,
  );
}
