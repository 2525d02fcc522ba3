// What `gantry run <file>::<export>` decides before anything runs: the app's auth mode, the environment of its local
// model server (the app's server settings, as the operator gives them to a pod), the model it serves, the plain
// /v1 and /api paths that reach it, and what it prints once it is up. Pure.
import type { AuthMode, ModelAppSpec } from "../../operator/api/v1alpha1/modelapp.ts";
import { checkOverrides, checkSpec, servedModelName } from "../../operator/api/v1alpha1/spec-checks.ts";
import { isLocalPath } from "../common/model-ref.ts";
import type { AppSpec } from "./app-definition.ts";
import { exampleRequest } from "./modelapp-manifest.ts";

/** The org of every app run on this machine: its URL is {url}/local/<app>. */
export const LOCAL_ORG = "local";

/** --auth, else the definition's own auth (as written), else public: a one-off server is public, as fal's run is. */
export const localAuth = (flag: AuthMode | undefined, spec: AppSpec): AuthMode => flag ?? spec.auth ?? "public";

/** Variables of the server container that do not apply on this machine: the store and the address are the run's. */
const NOT_LOCAL = new Set(["GANTRY_HOST", "GANTRY_MODELS"]);

/**
 * The local model server's environment: the user's, then the app's server settings (parallel sequences, context
 * length, keep-alive) and its plain-valued env variables, as the operator sets them on a pod; it listens on a free
 * loopback port (only the gateway talks to it). Variables from Secrets or ConfigMaps exist only in the cluster: the
 * user's environment supplies them here.
 */
export function localServerEnv(
  spec: ModelAppSpec,
  env: Record<string, string | undefined>,
): Record<string, string | undefined> {
  const own: Record<string, string> = {};
  for (const e of spec.env ?? []) if (e.value !== undefined && !NOT_LOCAL.has(e.name)) own[e.name] = e.value;
  return {
    ...env,
    GANTRY_NUM_PARALLEL: String(spec.server.parallel),
    ...(spec.server.contextLength !== undefined ? { GANTRY_CONTEXT_LENGTH: String(spec.server.contextLength) } : {}),
    GANTRY_KV_CACHE_TYPE: spec.server.kvCacheType,
    GANTRY_FLASH_ATTENTION: spec.server.flashAttention,
    GANTRY_KEEP_ALIVE: spec.server.keepAlive,
    ...(spec.server.promptCacheRam !== undefined
      ? { GANTRY_PROMPT_CACHE_RAM: String(spec.server.promptCacheRam) }
      : {}),
    ...own,
    GANTRY_HOST: "127.0.0.1:0",
  };
}

export interface LocalModelPlan {
  /** spec.model: a hub reference, a model name in the local store, or a GGUF file of this machine. */
  base: string;
  /** The Modelfile overrides to apply on top of the base model (no FROM line), when the app has any. */
  overrides?: string;
  /** The model the app serves: `<app>:latest` with overrides (as in the cluster), else the base model's name. */
  served?: string;
}

/**
 * What the run puts into the local store and serves. A hub or named model is served under the same name as on a
 * cluster; a local file's name is known once it is imported (served is then undefined without overrides).
 */
export function planLocalModel(app: string, spec: ModelAppSpec): LocalModelPlan {
  const overrides = spec.modelfile?.trim() ? spec.modelfile : undefined;
  if (isLocalPath(spec.model)) {
    checkOverrides(spec);
    return { base: spec.model, ...(overrides ? { overrides, served: `${app}:latest` } : {}) };
  }
  return { base: spec.model, ...(overrides ? { overrides } : {}), served: servedModelName(app, checkSpec(spec)) };
}

/**
 * The app's path for a plain /v1/... or /api/... request (`/local/chat/v1/models`), so clients configured with a
 * plain base URL (http://127.0.0.1:8080/v1, an Ollama host) reach the app through the same gateway pipeline;
 * anything else (the app paths themselves, /_gantry, /healthz, /metrics) is left as it is.
 */
export function appPathFor(url: string, org: string, app: string): string {
  const plain = /^\/(v1|api)(?=$|[/?])/.test(url);
  return plain ? `/${org}/${app}${url}` : url;
}

export interface RunningAppInfo {
  org: string;
  app: string;
  /** The gateway's base URL, as this machine reaches it. */
  base: string;
  model: string;
  auth: AuthMode;
  /** The temporary key of a private or shared app. */
  key?: string;
}

export const localAppUrl = (i: Pick<RunningAppInfo, "base" | "org" | "app">): string => `${i.base}/${i.org}/${i.app}`;

/** What `gantry run <file>::<export>` prints on stdout once the app answers. */
export function runningAppText(i: RunningAppInfo): string {
  const url = localAppUrl(i);
  const access =
    i.auth === "public"
      ? "public: no key needed"
      : `${i.auth}: requests need the key below, as Authorization: Key <key> or Bearer <key>, or x-api-key: <key>`;
  return [
    `${i.app} is running at ${url} (${access})`,
    `plain base URLs reach it too: ${i.base}/v1 (OpenAI clients), ${i.base} (Ollama clients, /api; Anthropic clients)`,
    "",
    ...(i.key
      ? ["A temporary API key (it works until this server stops):", `  export GANTRY_API_KEY=${i.key}`, ""]
      : []),
    exampleRequest(url, i.model, i.auth),
    "",
  ].join("\n");
}
