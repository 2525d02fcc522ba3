import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { isMap, isScalar, parse, parseDocument, type Pair, type Scalar } from "yaml";
import { ChartValuesSchema } from "../../../../operator/chart/values.ts";
import { valuesSchemaFile, valuesSchemaJson } from "../../../../operator/chart/gen-values-schema.ts";
import { parseOperatorConfig } from "../../../../operator/config.ts";
import { parseGatewayConfig } from "../../../../server/gateway/config.ts";

const valuesFile = path.join(path.dirname(valuesSchemaFile), "values.yaml");

test("the committed values.schema.json is what the zod schema generates (run gen-values-schema.ts when this fails)", () => {
  assert.equal(fs.readFileSync(valuesSchemaFile, "utf8"), valuesSchemaJson());
});

test("values.yaml is valid, and its operator and gateway config parts are configs the processes accept", () => {
  const values = ChartValuesSchema.parse(parse(fs.readFileSync(valuesFile, "utf8")));
  const { gatewayUrl, hubUrl, watchNamespace, ...rest } = values.operator.config;
  assert.equal(gatewayUrl, "", "empty: the chart's own gateway");
  assert.equal(hubUrl, "");
  assert.equal(watchNamespace, "");
  parseOperatorConfig(rest);
  parseGatewayConfig(values.gateway.config);
});

test("every value in values.yaml is commented (on itself or on the section holding it)", () => {
  const doc = parseDocument(fs.readFileSync(valuesFile, "utf8"));
  const missing: string[] = [];
  const walk = (node: unknown, at: string, inherited: boolean): void => {
    if (!isMap(node) || node.flow) return;
    node.items.forEach((pair: Pair, i) => {
      const key = isScalar(pair.key) ? String(pair.key.value) : "?";
      // A comment above a map's first key belongs to the map node in the yaml library's tree.
      const commented = Boolean((pair.key as Scalar).commentBefore || (i === 0 && node.commentBefore)) || inherited;
      const section = isMap(pair.value) && !pair.value.flow;
      if (!section && !commented) missing.push(`${at}${key}`);
      walk(pair.value, `${at}${key}.`, commented);
    });
  };
  walk(doc.contents, "", false);
  assert.deepEqual(missing, []);
});

test("a namespace or host name that Kubernetes would refuse is refused by the values schema, naming the value", () => {
  const base = ChartValuesSchema.parse(parse(fs.readFileSync(valuesFile, "utf8")));
  const withValues = (ns: string, host: string) => ({
    ...base,
    operator: { ...base.operator, config: { ...base.operator.config, watchNamespace: ns } },
    gateway: {
      ...base.gateway,
      ingress: { ...base.gateway.ingress, host },
      httpRoute: { ...base.gateway.httpRoute, host },
    },
  });
  for (const [ns, host] of [
    ["", ""],
    ["team-a", "api.example.com"],
    ["a", "*.example.com"],
  ])
    assert.ok(ChartValuesSchema.safeParse(withValues(ns!, host!)).success, `${ns} ${host}`);
  const paths = (ns: string, host: string) =>
    ChartValuesSchema.safeParse(withValues(ns, host)).error?.issues.map((i) => i.path.join(".")) ?? [];
  assert.deepEqual(paths("Team_A", "api.example.com"), ["operator.config.watchNamespace"]);
  assert.deepEqual(paths("team-a", "https://api.example.com"), ["gateway.ingress.host", "gateway.httpRoute.host"]);
  assert.deepEqual(paths("x".repeat(64), "API.example.com"), [
    "operator.config.watchNamespace",
    "gateway.ingress.host",
    "gateway.httpRoute.host",
  ]);
});

test("the operator's Node flags cap V8's young generation and keep its old generation under the pod's memory limit", () => {
  const { operator } = ChartValuesSchema.parse(parse(fs.readFileSync(valuesFile, "utf8")));
  const flag = (name: string) => Number(new RegExp(`--${name}=(\\d+)`).exec(operator.nodeOptions)?.[1]);
  const limitMiB = Number(/^(\d+)Gi$/.exec(String(operator.resources.limits?.memory))?.[1]) * 1024;
  assert.ok(flag("max-semi-space-size") <= 8, "young generation capped (V8 sizes it from the node's memory otherwise)");
  assert.ok(flag("max-old-space-size") <= limitMiB * 0.8, "old generation + young + native fit the limit");
  const refused = ChartValuesSchema.safeParse({
    ...parse(fs.readFileSync(valuesFile, "utf8")),
    operator: { ...operator, nodeOptions: "--x; rm -rf /" },
  });
  assert.deepEqual(
    refused.error?.issues.map((i) => i.path.join(".")),
    ["operator.nodeOptions"],
  );
});
