// The gateway's configuration: one zod schema, read once at start from a YAML/JSON file (`gantry gateway --config`)
// with command-line overrides. Every field is described; `gantry gateway --help` prints them.
import fs from "node:fs";
import proxyaddr from "proxy-addr";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { ConfigError } from "../common/config.ts";
import { ListenAddressSchema } from "../common/host-port.ts";
import { CONSOLE_DEFAULTS, ConsoleConfigSchema } from "./console/console-config.ts";
import { QueueConfigSchema } from "./queue/config.ts";

const LimitsSchema = z.object({
  requestsPerSecond: z.number().min(0).describe("Sustained requests per second per key (0 = unlimited)."),
  burst: z.int().min(1).describe("Requests per key that may arrive at once above the sustained rate."),
  concurrent: z.int().min(0).describe("Requests per key in flight at once (0 = unlimited)."),
});

/** Whether proxy-addr reads a trustProxy entry (an address, a CIDR range or one of its names; it throws otherwise). */
function trustable(entry: string): boolean {
  try {
    proxyaddr.compile(entry);
    return true;
  } catch {
    return false;
  }
}

const DEFAULT_LIMITS = { requestsPerSecond: 20, burst: 40, concurrent: 16 };

export const GatewayConfigSchema = z
  .object({
    listen: ListenAddressSchema.default("0.0.0.0:8080").describe(
      "Address of the gateway (apps, management API, probes).",
    ),
    metricsListen: ListenAddressSchema.optional().describe(
      "A separate address for /metrics, /healthz and /readyz (then /metrics is not served on listen, which users reach).",
    ),
    publicUrl: z
      .url()
      .optional()
      .describe("Base URL users reach the gateway at (app URLs in the management API); the apps' status.url if unset."),
    operatorUrls: z
      .array(z.url())
      .default([])
      .describe("Every operator replica's URL; load reports go to each (none: no autoscaling from this gateway)."),
    operatorTokenFile: z
      .string()
      .optional()
      .describe(
        "File holding the bearer token sent with load reports (default: the pod's ServiceAccount token when it exists).",
      ),
    watchNamespace: z.string().optional().describe("Serve only this namespace's apps (all namespaces when unset)."),
    clientTimeouts: z
      .object({
        headersSeconds: z
          .number()
          .positive()
          .default(60)
          .describe("Time a client may take to send a request's headers (then 408 and the connection is closed)."),
        requestSeconds: z
          .number()
          .positive()
          .default(300)
          .describe(
            "Time a client may take to send a whole request, body included (408 after it); answers may take longer.",
          ),
        keepAliveSeconds: z
          .number()
          .positive()
          .default(65)
          .describe(
            "How long an idle keep-alive connection is kept (longer than common load balancers' 60 s idle timeout).",
          ),
      })
      .default({ headersSeconds: 60, requestSeconds: 300, keepAliveSeconds: 65 })
      .describe("Limits on slow clients (slowloris): a connection never holds the gateway's resources forever."),
    clientLimits: z
      .object({
        maxHeaderBytes: z
          .int()
          .min(1024)
          .default(16 * 1024)
          .describe("Largest request head (request line and header fields, trailers included): 431 above it."),
        connectionsPerAddress: z
          .int()
          .min(0)
          .default(1024)
          .describe(
            "Open connections one client address may hold (0 = unlimited); more are answered 503 and closed. Behind " +
              "a proxy or ingress every connection comes from its address: raise it (or 0) there.",
          ),
      })
      .default({ maxHeaderBytes: 16 * 1024, connectionsPerAddress: 1024 })
      .describe("Limits on what one client may hold of the gateway."),
    trustProxy: z
      .array(
        z.string().refine(trustable, {
          error: 'expected an IP address, a CIDR range ("10.0.0.0/8") or "loopback", "linklocal", "uniquelocal"',
        }),
      )
      .default([])
      .describe(
        "The proxies in front of the gateway (addresses, CIDR ranges, or loopback, linklocal, uniquelocal), as " +
          "express's `trust proxy`: X-Forwarded-For and X-Forwarded-Proto are believed from these hops only, and the " +
          "client's address is the first one not among them (the console's sign-in throttle, the access log, the " +
          "X-Forwarded-For pods get). []: none is believed; pods get the address and scheme the gateway saw.",
      ),
    corsOrigins: z
      .array(z.string())
      .default(["*"])
      .describe(
        'Browser origins allowed to call the apps and the management API ("*": any; entries may hold "*" wildcards; ' +
          "[]: none). Keys are sent as headers, never as cookies, so any origin is safe by default.",
      ),
    maxBodyBytes: z
      .int()
      .min(1024)
      .default(32 << 20)
      .describe("Largest request body accepted (413 above it)."),
    limits: z
      .object({
        // Each default on its own: a config that sets one limit keeps the others' defaults.
        requestsPerSecond: LimitsSchema.shape.requestsPerSecond.default(DEFAULT_LIMITS.requestsPerSecond),
        burst: LimitsSchema.shape.burst.default(DEFAULT_LIMITS.burst),
        concurrent: LimitsSchema.shape.concurrent.default(DEFAULT_LIMITS.concurrent),
        orgs: z
          .record(z.string(), LimitsSchema.partial())
          .default({})
          .describe("Per-org overrides of the per-key limits, by org (namespace)."),
      })
      .default({ ...DEFAULT_LIMITS, orgs: {} })
      .describe("Per-key request limits; 429 with Retry-After beyond them."),
    hold: z
      .object({
        timeoutSeconds: z
          .number()
          .positive()
          .default(600)
          .describe("How long a request waits for its app to get a ready replica (then 503 with Retry-After)."),
        maxPerApp: z.int().min(0).default(256).describe("Requests held per app at once (then 429)."),
        keepAliveSeconds: z
          .number()
          .positive()
          .default(5)
          .describe("Interval of keep-alive lines sent to held streaming requests."),
      })
      .default({ timeoutSeconds: 600, maxPerApp: 256, keepAliveSeconds: 5 }),
    upstream: z
      .object({
        connectionsPerPod: z.int().min(1).default(128).describe("Keep-alive connections kept to each pod."),
        retrySeconds: z
          .number()
          .min(0)
          .default(10)
          .describe("How long a request is retried on other pods (or the same one) when a pod refuses connections."),
        headersTimeoutSeconds: z.number().positive().default(900).describe("Time a pod may take to start answering."),
        idleTimeoutSeconds: z.number().positive().default(900).describe("Longest pause inside a streaming answer."),
      })
      .default({ connectionsPerPod: 128, retrySeconds: 10, headersTimeoutSeconds: 900, idleTimeoutSeconds: 900 }),
    reportIntervalSeconds: z.number().positive().default(1).describe("How often load is reported to the operator."),
    keyCacheSeconds: z
      .number()
      .min(0)
      .default(10)
      .describe("How long a key verification is reused (a change of the key's Secret drops it at once)."),
    usage: z
      .object({
        flushSeconds: z
          .number()
          .positive()
          .default(5)
          .describe("Usage is written to its ConfigMap at most this often."),
        retentionDays: z.int().min(1).default(62).describe("Days of hourly usage kept."),
      })
      .default({ flushSeconds: 5, retentionDays: 62 }),
    console: ConsoleConfigSchema.default(CONSOLE_DEFAULTS),
    queue: QueueConfigSchema.optional().describe(
      "fal's queue API at <gateway>/_queue/<org>/<app> on a Redis/Valkey broker (off without it).",
    ),
    shutdownSeconds: z
      .number()
      .min(0)
      .default(30)
      .describe("On SIGTERM, how long running requests (streams) may take to finish."),
  })
  .strict();
export type GatewayConfig = z.infer<typeof GatewayConfigSchema>;

export function parseGatewayConfig(input: unknown): GatewayConfig {
  const r = GatewayConfigSchema.safeParse(input ?? {});
  if (!r.success) throw new ConfigError(r.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`));
  return r.data;
}

/** Reads the config file (YAML or JSON) when one is named; `overrides` (command-line flags) win over it. */
export function loadGatewayConfig(file: string | undefined, overrides: Record<string, unknown> = {}): GatewayConfig {
  let input: Record<string, unknown> = {};
  if (file) {
    let text: string;
    try {
      text = fs.readFileSync(file, "utf8");
    } catch (e) {
      throw new ConfigError([`cannot read config file ${file}: ${(e as Error).message}`]);
    }
    try {
      input = (parseYaml(text) ?? {}) as Record<string, unknown>;
    } catch (e) {
      throw new ConfigError([`${file}: ${(e as Error).message}`]);
    }
  }
  return parseGatewayConfig({ ...input, ...overrides });
}
