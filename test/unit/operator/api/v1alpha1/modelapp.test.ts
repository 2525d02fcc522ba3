import assert from "node:assert/strict";
import { test } from "node:test";
import {
  DURATION,
  ModelAppSchema,
  ModelAppSpecSchema,
  parseModelAppSpec,
  QuantitySchema,
} from "../../../../../operator/api/v1alpha1/modelapp.ts";
import { MODEL, modelApp } from "../../fixtures.ts";

test("a minimal spec gets every default a user relies on", () => {
  const spec = ModelAppSpecSchema.parse({ model: MODEL });
  assert.equal(spec.model, MODEL);
  assert.equal(spec.auth, "private");
  assert.deepEqual(spec.resources, { profile: "cpu" });
  assert.deepEqual(spec.modelVolume, { name: "models", size: "20Gi", accessMode: "ReadWriteOnce" });
  assert.deepEqual(spec.server, {
    parallel: 4,
    keepAlive: "-1",
    kvCacheType: "f16",
    flashAttention: "auto",
  });
  assert.deepEqual(spec.scaling, { minReplicas: 0, maxReplicas: 1, scaleDownDelay: "5m" });
  for (const unset of ["modelfile", "replicas", "image", "env", "nodeSelector", "tolerations"] as const) {
    assert.equal(spec[unset], undefined, unset);
  }
});

test("partially written sections are completed with the defaults of their other fields", () => {
  const spec = ModelAppSpecSchema.parse({
    model: MODEL,
    resources: { gpus: 2 },
    modelVolume: { name: "shared" },
    server: { parallel: 8 },
    scaling: { maxReplicas: 3 },
  });
  assert.deepEqual(spec.resources, { profile: "cpu", gpus: 2 });
  assert.deepEqual(spec.modelVolume, { name: "shared", size: "20Gi", accessMode: "ReadWriteOnce" });
  assert.deepEqual(spec.server, {
    parallel: 8,
    keepAlive: "-1",
    kvCacheType: "f16",
    flashAttention: "auto",
  });
  assert.deepEqual(spec.scaling, { minReplicas: 0, maxReplicas: 3, scaleDownDelay: "5m" });
});

test("valid specs are accepted", () => {
  const cases: [string, Record<string, unknown>][] = [
    ["every auth mode: shared", { auth: "shared" }],
    ["every auth mode: public", { auth: "public" }],
    ["a GPU profile with GPUs", { resources: { profile: "nvidia-gpu", gpus: 2 } }],
    ["quantities as strings", { resources: { cpu: "500m", memory: "8Gi" } }],
    ["quantities as integers", { resources: { cpu: 2, memory: 1073741824 } }],
    ["a decimal quantity", { resources: { cpu: "1.5" } }],
    ["an exponent quantity", { resources: { memory: "1e9" } }],
    ["a volume of another access mode", { modelVolume: { accessMode: "ReadWriteMany", storageClassName: "nfs" } }],
    ["durations", { server: { keepAlive: "1h30m" }, scaling: { scaleDownDelay: "30s" } }],
    ["a duration in seconds", { scaling: { scaleDownDelay: "90" } }],
    ["minReplicas 0 with replicas 0", { scaling: { minReplicas: 0, maxReplicas: 5 }, replicas: 0 }],
    ["env from a secret", { env: [{ name: "HF_TOKEN", valueFrom: { secretKeyRef: { name: "hf", key: "token" } } }] }],
    [
      "node selector and tolerations",
      {
        nodeSelector: { pool: "gpu" },
        tolerations: [{ key: "k", operator: "Exists", effect: "NoExecute", tolerationSeconds: 30 }],
      },
    ],
    ["a Modelfile override", { modelfile: "SYSTEM You are terse." }],
  ];
  for (const [name, extra] of cases) {
    const r = ModelAppSpecSchema.safeParse({ model: MODEL, ...extra });
    assert.ok(r.success, `${name}: ${r.success ? "" : r.error.message}`);
  }
});

test("invalid specs are rejected at the offending field", () => {
  // extra fields → the path of the issue
  const cases: [string, Record<string, unknown>, string][] = [
    ["no model", { model: undefined }, "model"],
    ["empty model", { model: "" }, "model"],
    ["model too long", { model: "m".repeat(513) }, "model"],
    ["unknown auth", { auth: "internal" }, "auth"],
    [
      "a KV cache type llama.cpp has no flash attention path for",
      { server: { kvCacheType: "q5_1" } },
      "server.kvCacheType",
    ],
    [
      "a quantized KV cache without flash attention",
      { server: { kvCacheType: "q8_0", flashAttention: "off" } },
      "server.kvCacheType",
    ],
    ["auth in capitals", { auth: "Public" }, "auth"],
    ["profile with capitals", { resources: { profile: "GPU" } }, "resources.profile"],
    ["profile with underscore", { resources: { profile: "nvidia_gpu" } }, "resources.profile"],
    ["profile ending in a dash", { resources: { profile: "gpu-" } }, "resources.profile"],
    ["negative gpus", { resources: { gpus: -1 } }, "resources.gpus"],
    ["fractional gpus", { resources: { gpus: 0.5 } }, "resources.gpus"],
    ["too many gpus", { resources: { gpus: 65 } }, "resources.gpus"],
    ["quantity with a bad unit", { resources: { memory: "8GB" } }, "resources.memory"],
    ["quantity with a lower-case binary unit", { resources: { memory: "8gi" } }, "resources.memory"],
    ["quantity with a space", { resources: { cpu: "2 cores" } }, "resources.cpu"],
    ["negative integer quantity", { resources: { cpu: -1 } }, "resources.cpu"],
    ["fractional number quantity", { resources: { cpu: 2.5 } }, "resources.cpu"],
    ["bad volume name", { modelVolume: { name: "My_Models" } }, "modelVolume.name"],
    ["bad volume size", { modelVolume: { size: "lots" } }, "modelVolume.size"],
    ["unknown access mode", { modelVolume: { accessMode: "ReadWriteSometimes" } }, "modelVolume.accessMode"],
    ["parallel 0", { server: { parallel: 0 } }, "server.parallel"],
    ["context too small", { server: { contextLength: 128 } }, "server.contextLength"],
    ["keepAlive with a bad unit", { server: { keepAlive: "5 minutes" } }, "server.keepAlive"],
    ["negative minReplicas", { scaling: { minReplicas: -1 } }, "scaling.minReplicas"],
    ["maxReplicas 0", { scaling: { maxReplicas: 0 } }, "scaling.maxReplicas"],
    ["targetConcurrency 0", { scaling: { targetConcurrency: 0 } }, "scaling.targetConcurrency"],
    ["scaleDownDelay in days", { scaling: { scaleDownDelay: "1d" } }, "scaling.scaleDownDelay"],
    ["negative replicas", { replicas: -1 }, "replicas"],
    ["env without a name", { env: [{ value: "x" }] }, "env.0.name"],
    ["unknown toleration operator", { tolerations: [{ key: "k", operator: "NotIn" }] }, "tolerations.0.operator"],
    ["unknown toleration effect", { tolerations: [{ effect: "NoRun" }] }, "tolerations.0.effect"],
  ];
  for (const [name, extra, path] of cases) {
    const r = ModelAppSpecSchema.safeParse({ model: MODEL, ...extra });
    assert.ok(!r.success, `${name}: accepted`);
    assert.ok(
      r.error.issues.some((i) => i.path.join(".") === path),
      `${name}: issues at ${r.error.issues.map((i) => i.path.join(".")).join(", ")}, want ${path}`,
    );
  }
});

test("a negative quantity is rejected in its string form as in its integer form", () => {
  // The integer branch is nonnegative; "-1" and "-8Gi" are no more a valid CPU request or memory size than -1
  // (the API server would reject the rendered Deployment/PVC instead of the ModelApp).
  for (const [field, value] of [
    ["cpu", "-1"],
    ["memory", "-8Gi"],
    ["cpu", "-500m"],
  ] as const) {
    assert.equal(
      ModelAppSpecSchema.safeParse({ model: MODEL, resources: { [field]: value } }).success,
      false,
      `${field}: ${value}`,
    );
  }
  assert.equal(
    ModelAppSpecSchema.safeParse({ model: MODEL, modelVolume: { size: "-20Gi" } }).success,
    false,
    "modelVolume.size: -20Gi",
  );
});

test("QuantitySchema accepts the Kubernetes quantity forms", () => {
  const ok = ["0", "1", "500m", "1.5", ".5", "16Gi", "1Ki", "100M", "2k", "1e3", "1E-3", "+1", 0, 4];
  const bad = ["", "1K", "1.5.5", "Gi", "1 Gi", "1iB", "1Gib", "1e", -4, 1.5];
  for (const q of ok) assert.ok(QuantitySchema.safeParse(q).success, `accepts ${JSON.stringify(q)}`);
  for (const q of bad) assert.ok(!QuantitySchema.safeParse(q).success, `rejects ${JSON.stringify(q)}`);
});

test("DURATION accepts Go durations, seconds and negative values only", () => {
  const ok = ["5m", "30s", "1h30m", "300ms", "1.5h", "0", "-1", "-1m", "90", "2.5"];
  const bad = ["", "5 m", "5min", "1d", "m5", "--1", "1h-30m", "forever"];
  for (const d of ok) assert.match(d, DURATION);
  for (const d of bad) assert.doesNotMatch(d, DURATION);
});

test("parseModelAppSpec returns the defaulted spec, or every issue with its spec path", () => {
  const good = parseModelAppSpec({ model: MODEL });
  assert.ok(good.ok);
  assert.equal(good.spec.auth, "private");

  const bad = parseModelAppSpec({ model: MODEL, auth: "everyone", scaling: { minReplicas: -1 } });
  assert.ok(!bad.ok);
  assert.match(bad.message, /spec\.auth: /);
  assert.match(bad.message, /spec\.scaling\.minReplicas: /);
  assert.equal(bad.message.split("; ").length, 2);

  const missing = parseModelAppSpec(undefined);
  assert.ok(!missing.ok);
  assert.match(missing.message, /spec\.model: /);
});

test("ModelAppSchema takes an object as read from the API server and keeps unknown metadata", () => {
  const raw = { ...modelApp(), metadata: { ...modelApp().metadata, managedFields: [{ manager: "kubectl" }] } };
  const app = ModelAppSchema.parse(raw);
  assert.equal(app.spec.auth, "private");
  assert.deepEqual((app.metadata as Record<string, unknown>).managedFields, [{ manager: "kubectl" }]);
  assert.ok(!ModelAppSchema.safeParse({ ...raw, apiVersion: "gantry.dev/v1" }).success);
  assert.ok(!ModelAppSchema.safeParse({ ...raw, kind: "Deployment" }).success);
});
