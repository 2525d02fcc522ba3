import assert from "node:assert/strict";
import { test } from "node:test";
import { openApiDocument } from "../../../server/gateway/openapi.ts";

test("the management API's OpenAPI document is derived from the zod schemas", () => {
  const doc = openApiDocument() as {
    openapi: string;
    paths: Record<string, Record<string, { requestBody?: unknown; responses?: Record<string, unknown> }>>;
  };
  assert.equal(doc.openapi, "3.1.0");
  assert.deepEqual(Object.keys(doc.paths).sort(), [
    "/_gantry/v1/orgs/{org}/apps",
    "/_gantry/v1/orgs/{org}/keys",
    "/_gantry/v1/orgs/{org}/keys/{id}",
    "/_gantry/v1/orgs/{org}/usage",
  ]);
  const create = doc.paths["/_gantry/v1/orgs/{org}/keys"]!.post!;
  const body = (
    create.requestBody as { content: Record<string, { schema: { properties: Record<string, { enum?: string[] }> } }> }
  ).content["application/json"]!.schema;
  assert.deepEqual(body.properties.scope?.enum, ["api", "admin"]);
  const usage = JSON.stringify(doc.paths["/_gantry/v1/orgs/{org}/usage"]);
  for (const field of ["promptTokens", "completionTokens", "keyId", "hour", "from", "to"])
    assert.ok(usage.includes(field), field);
  assert.ok(JSON.stringify(doc).includes("401") && JSON.stringify(doc).includes("403"));
});
