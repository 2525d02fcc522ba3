import assert from "node:assert/strict";
import { test } from "node:test";
import { openApiDocument } from "../../../server/gateway/management/openapi.ts";

test("the management API's OpenAPI document is derived from the zod schemas", () => {
  const doc = openApiDocument() as {
    openapi: string;
    paths: Record<string, Record<string, { requestBody?: unknown; responses?: Record<string, unknown> }>>;
  };
  assert.equal(doc.openapi, "3.1.0");
  assert.deepEqual(Object.keys(doc.paths).sort(), [
    "/_gantry/v1/orgs/{org}/apps",
    "/_gantry/v1/orgs/{org}/apps/{app}",
    "/_gantry/v1/orgs/{org}/apps/{app}/logs",
    "/_gantry/v1/orgs/{org}/apps/{app}/requests",
    "/_gantry/v1/orgs/{org}/apps/{app}/v1/chat/completions",
    "/_gantry/v1/orgs/{org}/keys",
    "/_gantry/v1/orgs/{org}/keys/{id}",
    "/_gantry/v1/orgs/{org}/usage",
    "/_gantry/v1/session",
  ]);
  const create = doc.paths["/_gantry/v1/orgs/{org}/keys"]!.post!;
  const body = (
    create.requestBody as { content: Record<string, { schema: { properties: Record<string, { enum?: string[] }> } }> }
  ).content["application/json"]!.schema;
  assert.deepEqual(body.properties.scope?.enum, ["api", "admin"]);
  const usage = JSON.stringify(doc.paths["/_gantry/v1/orgs/{org}/usage"]);
  for (const field of ["promptTokens", "completionTokens", "keyId", "hour", "from", "to"])
    assert.ok(usage.includes(field), field);
  // from and to take both forms the API accepts: a time or a date.
  const params = (
    doc.paths["/_gantry/v1/orgs/{org}/usage"] as unknown as { parameters: Array<{ name: string; schema: unknown }> }
  ).parameters;
  for (const name of ["from", "to"])
    assert.deepEqual(params.find((p) => p.name === name)?.schema, {
      anyOf: [
        { type: "string", format: "date-time" },
        { type: "string", format: "date" },
      ],
    });
  assert.ok(JSON.stringify(doc).includes("401") && JSON.stringify(doc).includes("403"));
  // What the API answers, as it answers: an empty body creates a key with the defaults; bodies over maxBodyBytes are
  // 413; every path has other methods (405) and an org id that is not a DNS label (404).
  assert.equal((create.requestBody as { required: boolean }).required, false);
  assert.ok(create.responses?.["413"]);
  for (const [path, item] of Object.entries(doc.paths).filter(([p]) => p.startsWith("/_gantry/v1/orgs/")))
    for (const [method, op] of Object.entries(item))
      if (method !== "parameters")
        for (const code of ["401", "403", "404", "405", "429"])
          assert.ok(op.responses?.[code], `${method} ${path} ${code}`);
});

test("the console's session routes are documented: sign-in needs no credentials, the others the session cookie", () => {
  const doc = openApiDocument() as {
    paths: Record<string, Record<string, { security?: unknown[]; responses: Record<string, unknown> }>>;
    components: { securitySchemes: Record<string, { in: string; name: string }> };
  };
  const session = doc.paths["/_gantry/v1/session"]!;
  assert.deepEqual(session.post!.security, []);
  for (const code of ["201", "401", "403", "429"]) assert.ok(session.post!.responses[code], code);
  assert.deepEqual(session.delete!.security, [{ session: [] }]);
  assert.ok(session.delete!.responses["403"], "a sign-out without X-CSRF-Token");
  assert.deepEqual(doc.components.securitySchemes.session, {
    type: "apiKey",
    in: "cookie",
    name: "gantry_session",
    description: "A console session (HttpOnly, SameSite=Strict); changes also need X-CSRF-Token.",
  });
  const logs = JSON.stringify(doc.paths["/_gantry/v1/orgs/{org}/apps/{app}/logs"]);
  for (const p of ["tail", "follow", "container", "application/x-ndjson"]) assert.ok(logs.includes(p), p);
});
