// Wire types of the gateway's management API (/_gantry/v1/orgs/<org>/{keys,apps,usage}): one zod schema each, from
// which the handlers validate and openapi.ts derives the OpenAPI document.
import { z } from "zod";
import { AUTH_MODES } from "../../operator/api/v1alpha1/modelapp.ts";
import { KEY_SCOPES, NewKeyNameSchema } from "./keys.ts";
import { UsageRowSchema } from "./usage.ts";

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
  })
  .describe("An API key, without its secret.");
export type KeyInfo = z.infer<typeof KeySchema>;

export const CreatedKeySchema = KeySchema.extend({
  key: z.string().describe("The whole key, <key_id>:<key_secret>: shown this once and never again."),
}).describe("A new key with its secret.");

export const KeyListSchema = z.object({ keys: z.array(KeySchema) }).describe("The org's keys.");

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
    ready: z
      .object({ status: z.string(), reason: z.string(), message: z.string() })
      .optional()
      .describe("The app's Ready condition."),
    replicas: z.int().optional(),
    readyReplicas: z.int().optional(),
  })
  .describe("A ModelApp of the org.");

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
