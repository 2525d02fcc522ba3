// The queue's settings (gateway config `queue`): where the broker is, per-app limits, retention, retries and
// webhook delivery. Without `queue.redisUrl` the gateway serves synchronous calls only.
import { z } from "zod";

export const QueueConfigSchema = z
  .object({
    redisUrl: z
      .string()
      .regex(/^rediss?:\/\//, "a redis:// or rediss:// URL")
      .describe("The broker (Redis or Valkey, redis://[user:pass@]host:port[/db]); the queue is off without it."),
    prefix: z
      .string()
      .min(1)
      .default("gantry")
      .describe("Prefix of the broker's keys (several gateways may share one)."),
    maxQueuedPerApp: z
      .int()
      .min(1)
      .default(10_000)
      .describe("Requests waiting per app; a submission beyond it is answered 429 with Retry-After."),
    concurrencyPerReplica: z
      .int()
      .min(1)
      .default(4)
      .describe("Queued requests run at once per ready replica of an app (at least one replica's worth, to wake it)."),
    retentionSeconds: z
      .int()
      .min(60)
      .default(86_400)
      .describe("How long a finished request's status and result are kept (then 404)."),
    maxRetries: z
      .int()
      .min(0)
      .default(2)
      .describe("Runs again of a request whose replica died or gave no answer (502/503/504), unless x-fal-no-retry."),
    retryDelayMs: z.int().min(0).default(1000).describe("Wait before such a run again."),
    stalledSeconds: z
      .number()
      .min(1)
      .default(30)
      .describe("A running request whose gateway stopped renewing its lock this long (killed) is run again."),
    brokerTimeoutMs: z
      .int()
      .min(50)
      .default(2000)
      .describe("A submission the broker has not stored within this is answered 503 (broker down or restarting)."),
    keepAliveSeconds: z.number().positive().default(15).describe("Interval of keep-alive comments in status streams."),
    webhooks: z
      .object({
        allowPrivateAddresses: z
          .boolean()
          .default(false)
          .describe("Deliver to loopback, link-local and private addresses (off: SSRF guard; tests and labs only)."),
        attempts: z.int().min(1).default(10).describe("Deliveries tried per webhook."),
        backoffMs: z.int().min(1).default(15_000).describe("First wait between attempts (doubling after each)."),
        timeoutMs: z.int().min(100).default(15_000).describe("Time a receiver may take to answer a delivery."),
        signingKeyFile: z
          .string()
          .optional()
          .describe("PKCS#8 PEM Ed25519 key signing deliveries; default: one made once and kept in the broker."),
      })
      .prefault({})
      .describe("Webhook deliveries (?fal_webhook=<url>): signed with Ed25519, keys at /_queue/.well-known/jwks.json."),
  })
  .strict();
export type QueueConfig = z.infer<typeof QueueConfigSchema>;
