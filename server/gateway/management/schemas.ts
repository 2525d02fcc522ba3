// Wire types of the gateway's management API (/_gantry/v1/orgs/<org>/{keys,apps,usage}): one zod schema each, from
// which the handlers validate and openapi.ts derives the OpenAPI document.
import { z } from "zod";
import { AUTH_MODES } from "../../../operator/api/v1alpha1/modelapp.ts";
import { KEY_SCOPES, NewKeyNameSchema } from "../2-authenticate/api-keys.ts";
import { UsageRowSchema } from "../5-account/usage.ts";

export const CreateKeyRequestSchema = z
  .object({
    scope: z.enum(KEY_SCOPES).default("api").describe("api: call the org's apps; admin: also manage the org."),
    name: NewKeyNameSchema.optional(),
    expires: z
      .string()
      .optional()
      .describe("When the key stops working: a duration from now (30d, 12h, 90m) or an RFC 3339 time; never if unset."),
  })
  .strict()
  .describe("A key to create.");

export const KeySchema = z
  .object({
    id: z.string().describe("The key id (the part of the key before the colon); safe to show and log."),
    org: z.string(),
    scope: z.enum(KEY_SCOPES),
    name: z.string(),
    created: z.string().describe("RFC 3339."),
    expires: z.string().optional().describe("RFC 3339; the key never expires when absent."),
    expired: z.literal(true).optional().describe("Present when the expiry has passed: the key no longer works."),
    lastUsed: z
      .string()
      .optional()
      .describe("When the key last called an app (RFC 3339), within the usage kept; absent when never."),
  })
  .describe("An API key, without its secret.");
export type KeyInfo = z.infer<typeof KeySchema>;

export const CreatedKeySchema = KeySchema.extend({
  key: z.string().describe("The whole key, <key_id>:<key_secret>: shown this once and never again."),
}).describe("A new key with its secret.");

export const KeyListSchema = z.object({ keys: z.array(KeySchema) }).describe("The org's keys.");

export const ConditionSchema = z
  .object({
    type: z.string(),
    status: z.string().describe("True, False or Unknown."),
    reason: z.string(),
    message: z.string(),
    lastTransitionTime: z.string().optional(),
  })
  .describe("A status condition of the app (Ready, ModelCached, Scheduled...).");

export const AppSchema = z
  .object({
    org: z.string(),
    name: z.string(),
    auth: z.enum(AUTH_MODES),
    model: z.string().optional().describe("The model the app's spec names (spec.model)."),
    servedModel: z
      .string()
      .optional()
      .describe("The name requests send as `model`: spec.model, or <app>:latest when the app has a modelfile."),
    url: z.string().optional().describe("{base_url}/<org_id>/<app_id>"),
    queueUrl: z
      .string()
      .optional()
      .describe("{base_url}/_queue/<org_id>/<app_id>: fal's queue API for the app (when the gateway has a broker)."),
    ready: z
      .object({ status: z.string(), reason: z.string(), message: z.string() })
      .optional()
      .describe("The app's Ready condition."),
    replicas: z.int().optional().describe("Replicas the app's Deployment wants now."),
    readyReplicas: z.int().optional(),
    minReplicas: z.int().optional().describe("spec.scaling.minReplicas (0: scales to zero when idle)."),
    maxReplicas: z.int().optional().describe("spec.scaling.maxReplicas."),
    conditions: z.array(ConditionSchema).optional().describe("Every condition, with its message."),
    deleting: z.literal(true).optional().describe("Present while the app is being deleted."),
    progress: z
      .string()
      .optional()
      .describe("One app's details only: the model download's last progress line while it pulls."),
  })
  .describe("A ModelApp of the org.");

/** A replica bound as the API and `gantry apps scale` take it. */
const ReplicaBound = z.int({ error: "must be a whole number" }).min(0).max(1000);

export const ScaleRequestSchema = z
  .object({
    minReplicas: ReplicaBound.optional().describe("Replicas kept at all times (0: scale to zero when idle)."),
    maxReplicas: ReplicaBound.min(1, { error: "must be at least 1 (minReplicas 0 lets the app scale to zero)" })
      .optional()
      .describe("Most replicas the autoscaler starts."),
  })
  .strict()
  .refine((b) => b.minReplicas !== undefined || b.maxReplicas !== undefined, {
    error: "give minReplicas, maxReplicas or both",
  })
  .describe("New scaling bounds of an app (as gantry apps scale --min --max).");

export const LogQuerySchema = z
  .object({
    tail: z
      .string()
      .regex(/^\d{1,5}$/, { error: "must be a number of lines (at most 99999)" })
      .optional()
      .describe("Lines from the end of each pod's log (default 100)."),
    follow: z.enum(["true", "false"]).optional().describe("Keep the answer open and send new lines as they come."),
    container: z.enum(["server", "prepare"]).optional().describe("server (default) or prepare (the model download)."),
  })
  .strict();

export const LogLineSchema = z
  .object({
    pod: z.string().optional(),
    line: z.string().optional(),
    error: z.string().optional().describe("Why the log stopped (the last line of the answer)."),
  })
  .describe("One line of NDJSON: a log line of a pod, or an error that ends the log.");

export const SignInRequestSchema = z
  .object({ key: z.string().max(200).describe("An admin key of the org, <key_id>:<key_secret>.") })
  .strict()
  .describe("A console sign-in.");

export const SessionSchema = z
  .object({
    org: z.string(),
    keyId: z.string().describe("The admin key the session was made from."),
    keyName: z.string(),
    csrfToken: z.string().describe("Send as X-CSRF-Token with every POST, PATCH and DELETE made with the session."),
    created: z.string(),
    expires: z.string().describe("When the session ends however active it is."),
    idleTimeoutSeconds: z.number().describe("The session ends after this long without a request."),
  })
  .describe("A console session (its cookie is HttpOnly; nothing here is a credential on its own).");

export const AppListSchema = z.object({ apps: z.array(AppSchema) }).describe("The org's apps.");

/** A point in time in a query: an RFC 3339 time, or a date (2026-11-25) meaning its midnight UTC. */
const Instant = z.union([z.iso.datetime({ offset: true }), z.iso.date()], {
  error: "expected an RFC 3339 time (2026-11-26T16:00:00Z, 2026-11-26T17:00:00+01:00) or a date (2026-11-26)",
});

export const UsageQuerySchema = z
  .object({
    from: Instant.optional().describe(
      "Start (RFC 3339, or a date: its midnight UTC); 24 hours before `to` by default.",
    ),
    to: Instant.optional().describe("End, exclusive (RFC 3339, or a date: its midnight UTC); now by default."),
  })
  .strict();

export const UsageResponseSchema = z
  .object({
    org: z.string(),
    from: z.string(),
    to: z.string(),
    usage: z.array(UsageRowSchema),
  })
  .describe("Hourly usage per app and key.");

export const ErrorResponseSchema = z
  .object({
    error: z.object({
      message: z.string(),
      type: z.string(),
      param: z.string().nullable(),
      code: z.string().nullable(),
    }),
  })
  .describe("An error (the OpenAI error envelope).");

/** A queued request as the app's Requests list shows it (GET /orgs/<org>/apps/<app>/requests). */
export const RequestRowSchema = z.object({
  id: z.string().describe("The request_id."),
  state: z.enum(["queued", "running", "completed", "failed"]),
  submittedAt: z.string().describe("ISO 8601."),
  latencyMs: z.number().optional().describe("Submission to the end, ms (none while it waits or runs)."),
  status: z.int().optional().describe("The answer's HTTP status, once it ended."),
  error: z.string().optional().describe("Why it failed."),
});
export const RequestListSchema = z.object({ requests: z.array(RequestRowSchema) });
