// The OpenAPI 3.1 document of the management API, derived from the zod schemas (z.toJSONSchema), served at
// /_gantry/v1/openapi.json.
import { z } from "zod";
import { VERSION } from "../../common/version.ts";
import {
  AppSchema,
  AppListSchema,
  LogLineSchema,
  LogQuerySchema,
  ScaleRequestSchema,
  SessionSchema,
  SignInRequestSchema,
  CreatedKeySchema,
  CreateKeyRequestSchema,
  ErrorResponseSchema,
  KeyListSchema,
  UsageQuerySchema,
  UsageResponseSchema,
  RequestListSchema,
} from "./schemas.ts";

const schema = (s: z.ZodType, io: "input" | "output" = "output") => {
  const { $schema: _, ...rest } = z.toJSONSchema(s, { io, unrepresentable: "any" }) as Record<string, unknown>;
  return rest;
};

const json = (s: z.ZodType, description: string) => ({
  description,
  content: { "application/json": { schema: schema(s) } },
});

const errors = {
  "401": json(ErrorResponseSchema, "No key, or an invalid one (WWW-Authenticate: Key)."),
  "403": json(ErrorResponseSchema, "Not an admin key of this org."),
  "404": json(ErrorResponseSchema, "The org id is not a DNS label."),
  "405": json(ErrorResponseSchema, "Another method: the Allow header lists the path's methods."),
  "429": json(ErrorResponseSchema, "The admin key's request limits are reached (Retry-After says when to retry)."),
};

const appParam = {
  name: "app",
  in: "path",
  required: true,
  description: "The app id (the ModelApp's name).",
  schema: { type: "string", pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", maxLength: 63 },
};

const queryParamsOf = (s: z.ZodType) =>
  Object.entries((schema(s, "input") as { properties: Record<string, Record<string, unknown>> }).properties).map(
    ([name, p]) => ({ name, in: "query", required: false, description: p.description, schema: p }),
  );

const orgParam = {
  name: "org",
  in: "path",
  required: true,
  description: "The org id (the Kubernetes namespace).",
  schema: { type: "string", pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", maxLength: 63 },
};

export function openApiDocument(): Record<string, unknown> {
  const query = schema(UsageQuerySchema, "input") as { properties: Record<string, Record<string, unknown>> };
  return {
    openapi: "3.1.0",
    info: {
      title: "Gantry gateway management API",
      version: VERSION,
      description:
        "Manage an org's API keys and apps and see its usage. Every /orgs/{org} operation needs an admin key of the org (Authorization: Key <key_id>:<key_secret>, Bearer is accepted too) or a console session made from one (the gantry_session cookie from POST /_gantry/v1/session; then POST, PATCH and DELETE also need the session's X-CSRF-Token header).",
    },
    components: {
      securitySchemes: {
        key: { type: "apiKey", in: "header", name: "Authorization", description: "Key <key_id>:<key_secret>" },
        session: {
          type: "apiKey",
          in: "cookie",
          name: "gantry_session",
          description: "A console session (HttpOnly, SameSite=Strict); changes also need X-CSRF-Token.",
        },
      },
    },
    security: [{ key: [] }, { session: [] }],
    paths: {
      "/_gantry/v1/session": {
        post: {
          summary: "Sign in to the console: an admin key exchanged for a session cookie (Set-Cookie)",
          security: [],
          requestBody: {
            required: true,
            content: { "application/json": { schema: schema(SignInRequestSchema, "input") } },
          },
          responses: {
            "201": json(SessionSchema, "Signed in: the session, with the CSRF token for changes."),
            "400": json(ErrorResponseSchema, "Invalid body."),
            "401": json(ErrorResponseSchema, "A wrong, malformed or expired key (the message says which)."),
            "403": json(
              ErrorResponseSchema,
              "An api key (it cannot manage the org), or a sign-in posted from another site.",
            ),
            "429": json(
              ErrorResponseSchema,
              "Too many failed sign-ins from this address (Retry-After says when to retry).",
            ),
          },
        },
        get: {
          summary: "The current console session, with a fresh CSRF token",
          security: [{ session: [] }],
          responses: {
            "200": json(SessionSchema, "The session."),
            "401": json(ErrorResponseSchema, "Not signed in, or the session ended (idle, too old, its key revoked)."),
          },
        },
        delete: {
          summary: "Sign out (needs X-CSRF-Token): the session ends and its cookie is removed",
          security: [{ session: [] }],
          responses: {
            "204": { description: "Signed out." },
            "401": json(ErrorResponseSchema, "The session had already ended."),
            "403": json(ErrorResponseSchema, "Missing or invalid X-CSRF-Token."),
          },
        },
      },
      "/_gantry/v1/orgs/{org}/keys": {
        parameters: [orgParam],
        get: {
          summary: "List the org's keys (never their secrets)",
          responses: { "200": json(KeyListSchema, "The keys."), ...errors },
        },
        post: {
          summary: "Create a key; its secret is in the answer, once",
          requestBody: {
            // An empty body is a key with the defaults (scope api, no name, no expiry).
            required: false,
            content: { "application/json": { schema: schema(CreateKeyRequestSchema, "input") } },
          },
          responses: {
            ...errors,
            "201": json(CreatedKeySchema, "The new key."),
            "400": json(ErrorResponseSchema, "Invalid body."),
            "413": json(ErrorResponseSchema, "A body over the gateway's maxBodyBytes."),
          },
        },
      },
      "/_gantry/v1/orgs/{org}/keys/{id}": {
        parameters: [orgParam, { name: "id", in: "path", required: true, schema: { type: "string" } }],
        delete: {
          summary: "Revoke a key: it stops working on every gateway within a second",
          responses: {
            ...errors,
            "204": { description: "Revoked." },
            "404": json(ErrorResponseSchema, "The org has no such key, or the org id is not a DNS label."),
          },
        },
      },
      "/_gantry/v1/orgs/{org}/apps": {
        parameters: [orgParam],
        get: {
          summary: "The org's apps with their status and URL",
          responses: { "200": json(AppListSchema, "The apps."), ...errors },
        },
      },
      "/_gantry/v1/orgs/{org}/apps/{app}": {
        parameters: [orgParam, appParam],
        get: {
          summary: "One app: status, every condition, scaling bounds, and the model download's progress while it pulls",
          responses: {
            ...errors,
            "200": json(AppSchema, "The app."),
            "404": json(ErrorResponseSchema, "The org has no such app, or an id is not a DNS label."),
          },
        },
        patch: {
          summary: "Set the app's scaling bounds (as gantry apps scale --min --max)",
          requestBody: {
            required: true,
            content: { "application/json": { schema: schema(ScaleRequestSchema, "input") } },
          },
          responses: {
            ...errors,
            "200": json(AppSchema, "The app with its new bounds."),
            "400": json(ErrorResponseSchema, "Invalid bounds (named in the message)."),
            "404": json(ErrorResponseSchema, "The org has no such app."),
            "501": json(ErrorResponseSchema, "A gateway without a cluster (gantry run's local one)."),
          },
        },
        delete: {
          summary: "Delete the app and its pods (as gantry apps delete)",
          responses: {
            ...errors,
            "202": json(AppSchema, "Deletion started (deleting: true)."),
            "404": json(ErrorResponseSchema, "The org has no such app."),
            "501": json(ErrorResponseSchema, "A gateway without a cluster."),
          },
        },
      },
      "/_gantry/v1/orgs/{org}/apps/{app}/logs": {
        parameters: [orgParam, appParam, ...queryParamsOf(LogQuerySchema)],
        get: {
          summary:
            "The app's pods' log lines as NDJSON (as gantry apps logs), followed while the client stays with follow=true",
          responses: {
            ...errors,
            "200": {
              description: "One JSON object per line; an error that ends the log is the last line.",
              content: { "application/x-ndjson": { schema: schema(LogLineSchema) } },
            },
            "404": json(ErrorResponseSchema, "The org has no such app."),
            "409": json(ErrorResponseSchema, "The app has no pods (scaled to zero)."),
          },
        },
      },
      "/_gantry/v1/orgs/{org}/apps/{app}/requests": {
        parameters: [orgParam, appParam],
        get: {
          summary: "The app's latest queued requests (fal's queue API): queued, running, completed, failed",
          responses: {
            ...errors,
            "200": json(RequestListSchema, "Newest first, with latency and a failure's error."),
            "404": json(ErrorResponseSchema, "The org has no such app."),
            "501": json(ErrorResponseSchema, "A gateway without a queue (queue.redisUrl unset)."),
          },
        },
      },
      "/_gantry/v1/orgs/{org}/apps/{app}/v1/chat/completions": {
        parameters: [orgParam, appParam],
        post: {
          summary:
            "The console's playground: an OpenAI chat completion (streamed or not) sent to the app as the admin key or session that calls, metered under that key",
          requestBody: {
            required: true,
            content: {
              "application/json": { schema: { type: "object", description: "An OpenAI chat completion request." } },
            },
          },
          responses: {
            ...errors,
            "200": {
              description:
                "The app's answer, as /<org>/<app>/v1/chat/completions gives it (JSON or text/event-stream).",
            },
            "404": json(ErrorResponseSchema, "The org has no such app."),
          },
        },
      },
      "/_gantry/v1/orgs/{org}/usage": {
        parameters: [
          orgParam,
          ...Object.entries(query.properties).map(([name, s]) => ({
            name,
            in: "query",
            required: false,
            description: s.description,
            // Either form, as the schema says (without zod's long patterns: the formats name them).
            schema: { anyOf: (s.anyOf as Array<Record<string, unknown>>).map(({ pattern: _, ...form }) => form) },
          })),
        ],
        get: {
          summary: "Hourly usage per app and key (requests, errors, prompt and completion tokens, time)",
          responses: {
            ...errors,
            "200": json(UsageResponseSchema, "The usage."),
            "400": json(ErrorResponseSchema, "Invalid from/to."),
          },
        },
      },
    },
  };
}
