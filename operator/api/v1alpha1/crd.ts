// The ModelApp CustomResourceDefinition, derived from the zod schemas. Pure.
//
// z.toJSONSchema gives OpenAPI 3.0; a CRD needs a *structural* schema, so structuralSchema() post-processes it: no
// `additionalProperties: false` beside `properties` (the API server prunes unknown fields anyway), int-or-string
// quantities as `x-kubernetes-int-or-string` with bare integer/string branches, and no JavaScript safe-integer bounds.
import { z } from "zod";
import {
  API_VERSION,
  CRD_NAME,
  GROUP,
  KIND,
  MAX_NAME_LENGTH,
  ModelAppSpecSchema,
  ModelAppStatusSchema,
  PLURAL,
  SHORT_NAMES,
  SINGULAR,
  VERSION,
} from "./modelapp.ts";

type JsonSchema = { [key: string]: unknown };

const isObject = (v: unknown): v is JsonSchema => typeof v === "object" && v !== null && !Array.isArray(v);

/** Rewrites zod's OpenAPI output into a Kubernetes structural schema (recursively). */
export function structuralSchema(schema: JsonSchema): JsonSchema {
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "$schema") continue;
    if (key === "additionalProperties" && value === false) continue;
    if (
      (key === "maximum" && value === Number.MAX_SAFE_INTEGER) ||
      (key === "minimum" && value === Number.MIN_SAFE_INTEGER)
    )
      continue;
    if (key === "properties" && isObject(value)) {
      out.properties = Object.fromEntries(
        Object.entries(value).map(([k, v]) => [k, structuralSchema(v as JsonSchema)]),
      );
    } else if ((key === "items" || key === "additionalProperties") && isObject(value)) {
      out[key] = structuralSchema(value);
    } else {
      out[key] = value;
    }
  }
  if (out["x-kubernetes-int-or-string"] === true && Array.isArray(out.anyOf)) {
    // Value checks move out of the branches (a pattern only ever applies to the string form).
    for (const branch of out.anyOf as JsonSchema[]) {
      if (branch.pattern !== undefined) out.pattern = branch.pattern;
      if (branch.minimum !== undefined && out.minimum === undefined) out.minimum = branch.minimum;
    }
    out.anyOf = [{ type: "integer" }, { type: "string" }];
  }
  return out;
}

const openApi = (schema: z.ZodType): JsonSchema =>
  structuralSchema(
    z.toJSONSchema(schema, { io: "input", target: "openapi-3.0", unrepresentable: "throw" }) as JsonSchema,
  );

/** Root-level rules: a name that every derived object name and the Service (a DNS-1035 label) can carry. */
export const NAME_RULES = [
  {
    rule: `self.metadata.name.size() <= ${MAX_NAME_LENGTH}`,
    message: `metadata.name must be at most ${MAX_NAME_LENGTH} characters (derived object names must fit 63)`,
  },
  {
    rule: "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
    message: "metadata.name must start with a letter and hold only a-z, 0-9 and '-' (it names the app's Service)",
  },
];

export const PRINTER_COLUMNS = [
  { name: "Model", type: "string", jsonPath: ".spec.model" },
  { name: "Auth", type: "string", jsonPath: ".spec.auth" },
  { name: "Replicas", type: "integer", jsonPath: ".status.replicas" },
  { name: "Ready", type: "integer", jsonPath: ".status.readyReplicas" },
  { name: "Status", type: "string", jsonPath: '.status.conditions[?(@.type=="Ready")].reason', priority: 1 },
  { name: "URL", type: "string", jsonPath: ".status.url" },
  { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
];

export function modelAppCrd(): JsonSchema {
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: { name: CRD_NAME, labels: { "app.kubernetes.io/name": "gantry", "app.kubernetes.io/part-of": "gantry" } },
    spec: {
      group: GROUP,
      names: {
        kind: KIND,
        listKind: `${KIND}List`,
        plural: PLURAL,
        singular: SINGULAR,
        shortNames: SHORT_NAMES,
        categories: ["gantry"],
      },
      scope: "Namespaced",
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: {
              type: "object",
              description: `${KIND} (${API_VERSION}) serves a GGUF chat model: org_id is the namespace, app_id the name.`,
              required: ["spec"],
              properties: {
                apiVersion: { type: "string" },
                kind: { type: "string" },
                metadata: { type: "object" },
                spec: openApi(ModelAppSpecSchema),
                status: openApi(ModelAppStatusSchema),
              },
              "x-kubernetes-validations": NAME_RULES,
            },
          },
          subresources: {
            status: {},
            scale: {
              specReplicasPath: ".spec.replicas",
              statusReplicasPath: ".status.replicas",
              labelSelectorPath: ".status.selector",
            },
          },
          additionalPrinterColumns: PRINTER_COLUMNS,
        },
      ],
    },
  };
}
