import assert from "node:assert/strict";
import { test } from "node:test";
import { modelAppCrd, structuralSchema } from "../../../../../operator/api/v1alpha1/crd.ts";
import { MAX_NAME_LENGTH } from "../../../../../operator/api/v1alpha1/modelapp.ts";

type Schema = Record<string, unknown>;

const crd = modelAppCrd() as {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  spec: {
    group: string;
    scope: string;
    names: { kind: string; listKind: string; plural: string; singular: string; shortNames: string[] };
    versions: {
      name: string;
      served: boolean;
      storage: boolean;
      schema: { openAPIV3Schema: Schema };
      subresources: { status: Schema; scale: Schema };
      additionalPrinterColumns: { name: string; type: string; jsonPath: string; priority?: number }[];
    }[];
  };
};
const version = crd.spec.versions[0]!;
const root = version.schema.openAPIV3Schema;

/** The schema at a path of property names under the root. */
function at(...path: string[]): Schema {
  let s = root;
  for (const p of path) {
    const next =
      (s.properties as Record<string, Schema> | undefined)?.[p] ?? (p === "[]" ? (s.items as Schema) : undefined);
    assert.ok(next, `no schema at ${path.join(".")}`);
    s = next;
  }
  return s;
}

/** Every (path, key, value) of a JSON tree. */
function* walk(v: unknown, path: string[] = []): Generator<[string[], string, unknown]> {
  if (Array.isArray(v)) {
    for (const [i, x] of v.entries()) yield* walk(x, [...path, String(i)]);
    return;
  }
  if (v && typeof v === "object") {
    for (const [k, x] of Object.entries(v)) {
      yield [path, k, x];
      yield* walk(x, [...path, k]);
    }
  }
}

test("structuralSchema drops $schema and additionalProperties:false, keeping the properties", () => {
  const out = structuralSchema({
    $schema: "http://json-schema.org/draft-04/schema#",
    type: "object",
    properties: { a: { type: "string" } },
    additionalProperties: false,
  });
  assert.deepEqual(out, { type: "object", properties: { a: { type: "string" } } });
});

test("structuralSchema keeps a schema-valued additionalProperties (a map) and recurses into it", () => {
  const out = structuralSchema({
    type: "object",
    additionalProperties: {
      type: "object",
      properties: { x: { type: "integer", maximum: Number.MAX_SAFE_INTEGER } },
      additionalProperties: false,
    },
  });
  assert.deepEqual(out, {
    type: "object",
    additionalProperties: { type: "object", properties: { x: { type: "integer" } } },
  });
});

test("structuralSchema drops only JavaScript's safe-integer bounds", () => {
  const out = structuralSchema({
    type: "object",
    properties: {
      any: { type: "integer", minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER },
      real: { type: "integer", minimum: 0, maximum: 64 },
    },
  });
  assert.deepEqual(out.properties, { any: { type: "integer" }, real: { type: "integer", minimum: 0, maximum: 64 } });
});

test("structuralSchema rewrites int-or-string as bare integer/string branches with the pattern lifted", () => {
  const out = structuralSchema({
    description: "a quantity",
    "x-kubernetes-int-or-string": true,
    anyOf: [
      { type: "integer", minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
      { type: "string", pattern: "^[0-9]+$" },
    ],
  });
  assert.deepEqual(out.anyOf, [{ type: "integer" }, { type: "string" }]);
  assert.equal(out.pattern, "^[0-9]+$");
  assert.equal(out.minimum, 0);
  assert.equal(out.maximum, undefined);
  assert.equal(out.description, "a quantity");
  assert.equal(out["x-kubernetes-int-or-string"], true);
});

test("structuralSchema leaves an anyOf without x-kubernetes-int-or-string alone", () => {
  const anyOf = [
    { type: "integer", minimum: 1 },
    { type: "string", pattern: "^x$" },
  ];
  assert.deepEqual(structuralSchema({ anyOf }), { anyOf });
});

test("structuralSchema recurses into nested properties and array items", () => {
  const out = structuralSchema({
    type: "object",
    properties: {
      list: {
        type: "array",
        items: {
          type: "object",
          additionalProperties: false,
          properties: {
            q: { "x-kubernetes-int-or-string": true, anyOf: [{ type: "integer" }, { type: "string", pattern: "^p$" }] },
          },
        },
      },
    },
  });
  const item = (out.properties as Record<string, Schema>).list!.items as Schema;
  assert.equal(item.additionalProperties, undefined);
  assert.equal((item.properties as Record<string, Schema>).q!.pattern, "^p$");
});

test("the CRD names the ModelApp kind in the gantry.dev group, namespaced", () => {
  assert.equal(crd.apiVersion, "apiextensions.k8s.io/v1");
  assert.equal(crd.kind, "CustomResourceDefinition");
  assert.equal(crd.metadata.name, "modelapps.gantry.dev");
  assert.equal(crd.spec.group, "gantry.dev");
  assert.equal(crd.spec.scope, "Namespaced");
  assert.deepEqual(crd.spec.names, {
    kind: "ModelApp",
    listKind: "ModelAppList",
    plural: "modelapps",
    singular: "modelapp",
    shortNames: ["mapp"],
    categories: ["gantry"],
  });
  assert.equal(crd.spec.versions.length, 1);
  assert.deepEqual([version.name, version.served, version.storage], ["v1alpha1", true, true]);
});

test("the CRD has the status and scale subresources with paths that exist in the schema", () => {
  assert.deepEqual(version.subresources.status, {});
  const scale = version.subresources.scale;
  assert.deepEqual(scale, {
    specReplicasPath: ".spec.replicas",
    statusReplicasPath: ".status.replicas",
    labelSelectorPath: ".status.selector",
  });
  assert.equal(at("spec", "replicas").type, "integer");
  assert.equal(at("status", "replicas").type, "integer");
  assert.equal(at("status", "selector").type, "string");
});

test("the printer columns show model, auth, replicas, readiness, URL and age", () => {
  const cols = version.additionalPrinterColumns;
  const byName = Object.fromEntries(cols.map((c) => [c.name, c]));
  for (const name of ["Model", "Auth", "Replicas", "Ready", "URL", "Age"]) assert.ok(byName[name], name);
  assert.deepEqual(byName.Model, { name: "Model", type: "string", jsonPath: ".spec.model" });
  assert.deepEqual(byName.Auth, { name: "Auth", type: "string", jsonPath: ".spec.auth" });
  assert.deepEqual(byName.Replicas, { name: "Replicas", type: "integer", jsonPath: ".status.replicas" });
  assert.deepEqual(byName.Ready, { name: "Ready", type: "integer", jsonPath: ".status.readyReplicas" });
  assert.deepEqual(byName.URL, { name: "URL", type: "string", jsonPath: ".status.url" });
  assert.deepEqual(byName.Age, { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" });
  // Age conventionally comes last.
  assert.equal(cols.at(-1)?.name, "Age");
});

test("the root schema requires spec and validates the name with CEL", () => {
  assert.equal(root.type, "object");
  assert.deepEqual(root.required, ["spec"]);
  assert.deepEqual(at("metadata"), { type: "object" });
  const rules = root["x-kubernetes-validations"] as { rule: string; message: string }[];
  assert.ok(
    rules.some((r) => r.rule.includes(`size() <= ${MAX_NAME_LENGTH}`)),
    "length rule",
  );
  assert.ok(
    rules.some((r) => r.rule.includes("self.metadata.name.matches(")),
    "DNS-1035 rule",
  );
  for (const r of rules) assert.ok(r.message.length > 0);
});

test("CEL rules sit on the objects they guard: scaling bounds, volume immutability, the KV cache's needs", () => {
  assert.deepEqual(at("spec", "scaling")["x-kubernetes-validations"], [
    {
      rule: "self.minReplicas <= self.maxReplicas",
      message: "scaling.minReplicas must not exceed scaling.maxReplicas",
    },
  ]);
  assert.deepEqual(at("spec", "modelVolume")["x-kubernetes-validations"], [
    { rule: "self == oldSelf", message: "modelVolume is immutable" },
  ]);
  assert.equal(
    (at("spec", "server")["x-kubernetes-validations"] as Array<{ rule: string }>)[0]!.rule,
    "self.flashAttention != 'off' || self.kvCacheType == 'f16'",
  );
  // Exactly those four places carry rules.
  const places = [...walk(root)].filter(([, k]) => k === "x-kubernetes-validations").map(([p]) => p.join("."));
  assert.deepEqual(places.sort(), [
    "",
    "properties.spec.properties.modelVolume",
    "properties.spec.properties.scaling",
    "properties.spec.properties.server",
  ]);
});

test("status conditions are a list map keyed by type", () => {
  const conditions = at("status", "conditions");
  assert.equal(conditions.type, "array");
  assert.equal(conditions["x-kubernetes-list-type"], "map");
  assert.deepEqual(conditions["x-kubernetes-list-map-keys"], ["type"]);
  const item = at("status", "conditions", "[]");
  // A list-map key must be required (or defaulted) in every item.
  assert.ok((item.required as string[]).includes("type"));
  assert.deepEqual(at("status", "conditions", "[]", "status").enum, ["True", "False", "Unknown"]);
});

test("defaults are in the schema, so the API server applies them", () => {
  assert.equal(at("spec", "auth").default, "private");
  assert.equal(at("spec", "resources", "profile").default, "cpu");
  assert.equal(at("spec", "scaling", "minReplicas").default, 0);
  assert.equal(at("spec", "scaling", "maxReplicas").default, 1);
  assert.equal(at("spec", "scaling", "scaleDownDelay").default, "5m");
  assert.equal(at("spec", "modelVolume", "name").default, "models");
  assert.equal(at("spec", "modelVolume", "size").default, "20Gi");
  assert.equal(at("spec", "server", "keepAlive").default, "-1");
  assert.deepEqual(at("spec", "scaling").default, { minReplicas: 0, maxReplicas: 1, scaleDownDelay: "5m" });
  assert.deepEqual(at("spec").required, ["model"]);
});

test("quantities are int-or-string with the quantity pattern on the string form", () => {
  for (const path of [
    ["spec", "resources", "cpu"],
    ["spec", "resources", "memory"],
    ["spec", "modelVolume", "size"],
  ]) {
    const s = at(...path);
    assert.equal(s["x-kubernetes-int-or-string"], true, path.join("."));
    assert.deepEqual(s.anyOf, [{ type: "integer" }, { type: "string" }], path.join("."));
    assert.equal(s.type, undefined, path.join("."));
    const pattern = new RegExp(s.pattern as string);
    assert.match("16Gi", pattern);
    assert.doesNotMatch("16GB", pattern);
  }
});

test("the whole CRD is structural: no $schema, $ref, additionalProperties:false or safe-integer bounds", () => {
  for (const [path, key, value] of walk(crd)) {
    const where = [...path, key].join(".");
    assert.notEqual(key, "$schema", where);
    assert.notEqual(key, "$ref", where);
    assert.notEqual(key, "$defs", where);
    assert.ok(!(key === "additionalProperties" && value === false), where);
    assert.ok(
      !((key === "maximum" || key === "minimum") && Math.abs(value as number) === Number.MAX_SAFE_INTEGER),
      where,
    );
  }
});

test("every schema node with properties or items states its type", () => {
  // Structural: each node specifies a type (int-or-string nodes excepted), so pruning and defaulting work.
  for (const [path, key, value] of walk(root)) {
    if ((key === "properties" || key === "items") && path.at(-1) !== "properties") {
      let node: unknown = root;
      for (const p of path) node = (node as Record<string, unknown>)[p];
      assert.ok((node as Schema).type !== undefined, `${path.join(".")} has ${key} but no type`);
    }
    if (path.at(-1) === "properties" && value && typeof value === "object") {
      const s = value as Schema;
      assert.ok(
        s.type !== undefined || s["x-kubernetes-int-or-string"] === true,
        `${[...path, key].join(".")} has no type`,
      );
    }
  }
});
