import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { ConfigError } from "../../../server/common/config.ts";
import { VERSION } from "../../../server/common/version.ts";
import {
  GPU_TOLERATION,
  loadOperatorConfig,
  parseOperatorConfig,
  resolveLeaderElection,
} from "../../../operator/config.ts";

const tmp = (t: { after: (fn: () => void) => void }, name: string, text: string): string => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-operator-config-"));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, name);
  fs.writeFileSync(file, text);
  return file;
};

const issuesOf = (fn: () => unknown): string[] => {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof ConfigError, String(e));
    return e.issues;
  }
  assert.fail("no ConfigError");
};

test("an empty config has the defaults and both default profiles", () => {
  for (const input of [undefined, null, {}]) {
    const c = parseOperatorConfig(input);
    assert.equal(c.image, `gantry:${VERSION}`);
    assert.equal(c.gatewayUrl, "http://gantry-gateway.gantry-system.svc");
    assert.equal(c.serverPort, 11434);
    assert.equal(c.workers, 8);
    assert.equal(c.listen, "0.0.0.0:8080");
    assert.equal(c.watchNamespace, undefined);
    assert.equal(c.leaderElection.enabled, undefined, "settled by where the operator runs");
    assert.equal(c.autoscaler.reportTtlSeconds, 30);
    assert.deepEqual(c.loadReports.serviceAccounts, ["gantry-system/gantry-gateway"]);
    assert.deepEqual(Object.keys(c.profiles).sort(), ["cpu", "nvidia-gpu"]);
  }
});

test("the cpu profile has no GPUs; nvidia-gpu requests nvidia.com/gpu and tolerates the GPU taint", () => {
  const { profiles } = parseOperatorConfig({});
  assert.equal(profiles.cpu?.gpuResource, undefined);
  assert.deepEqual(profiles.cpu?.tolerations, []);
  const gpu = profiles["nvidia-gpu"]!;
  assert.equal(gpu.gpuResource, "nvidia.com/gpu");
  assert.deepEqual(gpu.tolerations, [{ key: "nvidia.com/gpu", operator: "Exists", effect: "NoSchedule" }]);
  assert.deepEqual(GPU_TOLERATION, { key: "nvidia.com/gpu", operator: "Exists", effect: "NoSchedule" });
  assert.equal(gpu.gpuBackend, "cuda");
});

test("user profiles are added next to the defaults, and a profile of the same name replaces the default", () => {
  const c = parseOperatorConfig({
    resourceProfiles: {
      "nvidia-l4": {
        gpuResource: "nvidia.com/gpu",
        nodeSelector: { "cloud.google.com/gke-accelerator": "nvidia-l4" },
        image: "gantry:cuda",
      },
      cpu: { cpu: "2", memory: "8Gi", nodeSelector: { pool: "cpu" } },
    },
  });
  assert.deepEqual(Object.keys(c.profiles).sort(), ["cpu", "nvidia-gpu", "nvidia-l4"]);
  assert.deepEqual(c.profiles["nvidia-l4"], {
    gpuResource: "nvidia.com/gpu",
    nodeSelector: { "cloud.google.com/gke-accelerator": "nvidia-l4" },
    tolerations: [],
    image: "gantry:cuda",
    env: {},
  });
  assert.equal(c.profiles.cpu?.cpu, "2");
  assert.deepEqual(c.profiles.cpu?.nodeSelector, { pool: "cpu" });
  assert.equal(c.profiles["nvidia-gpu"]?.gpuResource, "nvidia.com/gpu", "the untouched default stays");
});

test("an invalid config reports every bad key", () => {
  const issues = issuesOf(() =>
    parseOperatorConfig({
      workers: 0,
      serverPort: 70000,
      listen: "8080",
      gatewayUrl: "not a url",
      imagePullPolicy: "Sometimes",
      resourceProfiles: { Bad_Name: {}, ok: { tolerations: [{ operator: "In" }] } },
    }),
  );
  for (const key of [
    "workers",
    "serverPort",
    "listen",
    "gatewayUrl",
    "imagePullPolicy",
    "resourceProfiles.Bad_Name",
    "resourceProfiles.ok.tolerations.0.operator",
  ]) {
    assert.ok(
      issues.some((i) => i.startsWith(`${key}: `)),
      `${key} in ${JSON.stringify(issues)}`,
    );
  }
  assert.equal(issues.length, 7);
});

test("an unknown top-level key is rejected, naming the key", () => {
  const issues = issuesOf(() => parseOperatorConfig({ image: "x", gatwayUrl: "http://typo" }));
  assert.equal(issues.length, 1);
  assert.match(issues[0]!, /gatwayUrl/);
});

test("the ConfigError message lists the issues", () => {
  assert.throws(
    () => parseOperatorConfig({ workers: 100 }),
    (e: unknown) => e instanceof ConfigError && /workers: /.test(e.message),
  );
});

test("loadOperatorConfig reads a YAML file", (t) => {
  const file = tmp(
    t,
    "config.yaml",
    [
      "image: registry.example.com/gantry:1.2.3",
      "gatewayUrl: http://gw.example.com",
      "workers: 8",
      "resourceProfiles:",
      "  nvidia-a100:",
      "    gpuResource: nvidia.com/gpu",
      "    tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]",
      "",
    ].join("\n"),
  );
  const c = loadOperatorConfig(file, {});
  assert.equal(c.image, "registry.example.com/gantry:1.2.3");
  assert.equal(c.gatewayUrl, "http://gw.example.com");
  assert.equal(c.workers, 8);
  assert.equal(c.profiles["nvidia-a100"]?.gpuResource, "nvidia.com/gpu");
  assert.ok(c.profiles.cpu && c.profiles["nvidia-gpu"]);
});

test("loadOperatorConfig reads a JSON file and an empty file", (t) => {
  assert.equal(loadOperatorConfig(tmp(t, "c.json", JSON.stringify({ serverPort: 8000 })), {}).serverPort, 8000);
  assert.equal(loadOperatorConfig(tmp(t, "empty.yaml", ""), {}).serverPort, 11434);
  assert.equal(loadOperatorConfig(undefined, {}).serverPort, 11434);
});

test("the environment overrides win over the file", (t) => {
  const file = tmp(t, "config.yaml", "listen: 0.0.0.0:9000\nwatchNamespace: from-file\n");
  const fromFile = loadOperatorConfig(file, {});
  assert.equal(fromFile.listen, "0.0.0.0:9000");
  assert.equal(fromFile.watchNamespace, "from-file");
  const overridden = loadOperatorConfig(file, {
    GANTRY_OPERATOR_LISTEN: "127.0.0.1:7000",
    GANTRY_OPERATOR_NAMESPACE: "acme",
  });
  assert.equal(overridden.listen, "127.0.0.1:7000");
  assert.equal(overridden.watchNamespace, "acme");
  // Empty variables do not override.
  assert.equal(
    loadOperatorConfig(file, { GANTRY_OPERATOR_LISTEN: "", GANTRY_OPERATOR_NAMESPACE: "" }).watchNamespace,
    "from-file",
  );
  assert.equal(loadOperatorConfig(undefined, { GANTRY_OPERATOR_NAMESPACE: "acme" }).watchNamespace, "acme");
});

test("a missing file, bad YAML and an invalid value are ConfigErrors naming the problem", (t) => {
  const missing = path.join(os.tmpdir(), "gantry-no-such-dir", "config.yaml");
  assert.match(issuesOf(() => loadOperatorConfig(missing, {})).join("\n"), /cannot read config file .*config\.yaml/);
  const bad = tmp(t, "bad.yaml", "image: [unclosed\n");
  assert.match(issuesOf(() => loadOperatorConfig(bad, {})).join("\n"), /bad\.yaml/);
  const invalid = tmp(t, "invalid.yaml", "workers: many\n");
  assert.ok(issuesOf(() => loadOperatorConfig(invalid, {})).some((i) => i.startsWith("workers: ")));
});

test("leader election: on in a pod (its namespace), off beside a cluster, explicit settings win", () => {
  const { leaderElection } = parseOperatorConfig({});
  const inPod = { inPod: true, podNamespace: "gantry", contextNamespace: undefined };
  const outside = { inPod: false, contextNamespace: "dev" };
  assert.deepEqual(resolveLeaderElection(leaderElection, inPod), {
    enabled: true,
    lease: {
      namespace: "gantry",
      name: "gantry-operator",
      leaseDurationSeconds: 15,
      renewDeadlineSeconds: 10,
      retryPeriodSeconds: 2,
    },
  });
  const off = resolveLeaderElection(leaderElection, outside);
  assert.equal(off.enabled, false);
  assert.match(off.enabled ? "" : off.reason, /not running in a pod/);
  const on = resolveLeaderElection({ ...leaderElection, enabled: true }, outside);
  assert.equal(on.enabled && on.lease.namespace, "dev", "the kubeconfig context's namespace");
  const bare = resolveLeaderElection({ ...leaderElection, enabled: true }, { inPod: false });
  assert.equal(bare.enabled && bare.lease.namespace, "default");
  const chart = resolveLeaderElection(
    parseOperatorConfig({ leaderElection: { enabled: true, namespace: "x" } }).leaderElection,
    inPod,
  );
  assert.equal(chart.enabled && chart.lease.namespace, "x");
  assert.equal(resolveLeaderElection({ ...leaderElection, enabled: false }, inPod).enabled, false);
});

test("watchNamespace must be a namespace name", () => {
  assert.equal(parseOperatorConfig({ watchNamespace: "team-a" }).watchNamespace, "team-a");
  assert.match(issuesOf(() => parseOperatorConfig({ watchNamespace: "Team_A" }))[0]!, /^watchNamespace: .*DNS label/);
});
