// The OpenAPI 3.1 document of the management API, derived from the zod schemas (z.toJSONSchema), served at
// /_gantry/v1/openapi.json.
import { z } from "zod";
import { VERSION } from "../common/version.ts";
import {
  AppListSchema,
  CreatedKeySchema,
  CreateKeyRequestSchema,
  ErrorResponseSchema,
  KeyListSchema,
  UsageQuerySchema,
  UsageResponseSchema,
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
        "Manage an org's API keys and see its apps and usage. Every operation needs an admin key of the org: Authorization: Key <key_id>:<key_secret> (Bearer is accepted too).",
    },
    components: {
      securitySchemes: {
        key: { type: "apiKey", in: "header", name: "Authorization", description: "Key <key_id>:<key_secret>" },
      },
    },
    security: [{ key: [] }],
    paths: {
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
