import assert from "node:assert/strict";
import { test } from "node:test";
import { InvalidSpecError, resolveApp } from "../../../../operator/render/resolve.ts";
import { config, MODEL, modelApp, resolved } from "../fixtures.ts";

const invalid = (spec: Record<string, unknown>, cfg = config()): string => {
  try {
    resolveApp(modelApp(spec), cfg);
  } catch (e) {
    assert.ok(e instanceof InvalidSpecError, String(e));
    assert.equal(e.name, "InvalidSpecError");
    return e.message;
  }
  assert.fail(`accepted ${JSON.stringify(spec)}`);
};

test("a hub model resolves to a pull with the store name served", () => {
  const app = resolved();
  assert.equal(app.source, "hub");
  assert.equal(app.servedModel, "hf.co/org/repo:Q4_K_M");
  assert.equal(app.modelfile, undefined);
  assert.deepEqual([app.name, app.namespace, app.uid, app.generation], ["chat", "acme", "u1", 1]);
  assert.equal(app.profileName, "cpu");
  assert.equal(app.gpus, 0);
  assert.equal(app.spec.auth, "private", "defaults applied");
});

test("the served name is the hub store name or the volume model's canonical name", () => {
  // spec.model → [source, servedModel]
  const cases: [string, "hub" | "volume", string][] = [
    ["hf.co/org/repo:q4_k_m", "hub", "hf.co/org/repo:Q4_K_M"],
    ["hf.co/org/repo", "hub", "hf.co/org/repo:latest"],
    ["huggingface.co/org/repo:Q8_0", "hub", "hf.co/org/repo:Q8_0"],
    ["https://hf.co/org/repo:Q8_0", "hub", "hf.co/org/repo:Q8_0"],
    ["hf.co/org/repo:model-q4.gguf", "hub", "hf.co/org/repo:model-q4.gguf"],
    ["smollm2", "volume", "smollm2:latest"],
    ["smollm2:135m", "volume", "smollm2:135m"],
    ["alice/tuned:v1", "volume", "alice/tuned:v1"],
  ];
  for (const [model, source, served] of cases) {
    const app = resolved({ model });
    assert.equal(app.source, source, model);
    assert.equal(app.servedModel, served, model);
  }
});

test("an unknown profile is invalid, and the message lists the available profiles", () => {
  const msg = invalid({ resources: { profile: "tpu" } });
  assert.match(msg, /^spec\.resources\.profile: /);
  assert.match(msg, /"tpu"/);
  assert.match(msg, /cpu, nvidia-gpu/);
  const withL4 = invalid(
    { resources: { profile: "tpu" } },
    config({ resourceProfiles: { "nvidia-l4": { gpuResource: "nvidia.com/gpu" } } }),
  );
  assert.match(withL4, /cpu, nvidia-gpu, nvidia-l4/);
});

test("GPUs on a CPU profile are invalid, and the message names the GPU profiles", () => {
  const msg = invalid({ resources: { profile: "cpu", gpus: 1 } });
  assert.match(msg, /^spec\.resources\.gpus: /);
  assert.match(msg, /"cpu" has no GPUs/);
  assert.match(msg, /nvidia-gpu/);
});

test("GPUs default to 1 on a GPU profile and may be set to 0 or more", () => {
  assert.equal(resolved({ resources: { profile: "nvidia-gpu" } }).gpus, 1);
  assert.equal(resolved({ resources: { profile: "nvidia-gpu", gpus: 4 } }).gpus, 4);
  assert.equal(resolved({ resources: { profile: "nvidia-gpu", gpus: 0 } }).gpus, 0);
  assert.equal(resolved({ resources: { profile: "cpu", gpus: 0 } }).gpus, 0);
  assert.equal(resolved({ resources: { profile: "nvidia-gpu" } }).profile.gpuResource, "nvidia.com/gpu");
});

test("models a pod cannot use are invalid with a clear reason", () => {
  const cases: [string, RegExp][] = [
    ["./x.gguf", /^spec\.model: "\.\/x\.gguf" is a file path/],
    ["/models/x.gguf", /file path/],
    ["~/x.gguf", /file path/],
    ["model.gguf", /file path/],
    ["hf.co/onlyorg", /^spec\.model: invalid hub reference "hf\.co\/onlyorg"/],
    ["hf.co/a/b/c", /invalid hub reference/],
    ["hf.co/org/repo:", /empty tag/],
    ["model name", /^spec\.model: .*invalid characters/],
    ["a/b/c/d", /^spec\.model: /],
  ];
  for (const [model, want] of cases) assert.match(invalid({ model }), want, model);
});

test("a schema violation is an InvalidSpecError naming the spec field", () => {
  assert.match(invalid({ auth: "everyone" }), /spec\.auth: /);
  assert.match(invalid({ scaling: { minReplicas: -1 } }), /spec\.scaling\.minReplicas: /);
  assert.match(invalid({ model: "" }), /spec\.model: /);
});

test("minReplicas above maxReplicas is invalid", () => {
  assert.match(invalid({ scaling: { minReplicas: 3, maxReplicas: 2 } }), /minReplicas 3 exceeds maxReplicas 2/);
});

test("Modelfile overrides may not replace the model", () => {
  for (const [modelfile, word] of [
    ["FROM other", "FROM"],
    ["SYSTEM hi\nADAPTER ./lora.gguf", "ADAPTER"],
    ["from hf.co/x/y", "FROM"],
  ]) {
    const msg = invalid({ modelfile });
    assert.match(msg, /^spec\.modelfile: /, modelfile);
    assert.match(msg, new RegExp(`${word} is not allowed`), modelfile);
  }
});

test("Modelfile syntax errors give line numbers of the user's text", () => {
  // modelfile → the line the error is on, counting from the first line of spec.modelfile
  const cases: [string, number, RegExp][] = [
    ["BOGUS x", 1, /unknown command/],
    ["SYSTEM hi\nBOGUS x", 2, /unknown command/],
    ["SYSTEM hi\n\n# note\nPARAMETER nope 1", 4, /unknown parameter/],
    ["PARAMETER temperature hot", 1, /temperature/],
    ['SYSTEM hi\nTEMPLATE """never closed', 2, /unterminated/],
  ];
  for (const [modelfile, line, why] of cases) {
    const msg = invalid({ modelfile });
    assert.match(msg, new RegExp(`^spec\\.modelfile: line ${line}: `), `${JSON.stringify(modelfile)}: ${msg}`);
    assert.match(msg, why, modelfile);
  }
});

test("a valid Modelfile is prefixed with FROM spec.model and makes the app serve its own name", () => {
  const app = resolved({ modelfile: "SYSTEM You are terse.\nPARAMETER temperature 0.2" });
  assert.equal(app.modelfile, `FROM ${MODEL}\nSYSTEM You are terse.\nPARAMETER temperature 0.2\n`);
  assert.equal(app.servedModel, "chat:latest");
  assert.equal(app.source, "hub");
  for (const ok of ["TEMPLATE {{ .Prompt }}", "MESSAGE user hi", "LICENSE MIT", "# only a comment\nSYSTEM x"]) {
    assert.equal(resolved({ modelfile: ok }).servedModel, "chat:latest", ok);
  }
});

test("a blank Modelfile is no Modelfile", () => {
  for (const modelfile of ["", "  \n\t\n"]) {
    const app = resolved({ modelfile });
    assert.equal(app.modelfile, undefined, JSON.stringify(modelfile));
    assert.equal(app.servedModel, MODEL);
  }
});

test("replicas default to minReplicas and are clamped into [min, max]", () => {
  // [minReplicas, maxReplicas, spec.replicas] → replicas
  const cases: [number, number, number | undefined, number][] = [
    [0, 1, undefined, 0],
    [2, 5, undefined, 2],
    [0, 5, 3, 3],
    [0, 5, 9, 5],
    [2, 5, 0, 2],
    [1, 1, 0, 1],
    [0, 3, 0, 0],
  ];
  for (const [minReplicas, maxReplicas, replicas, want] of cases) {
    const app = resolved({ scaling: { minReplicas, maxReplicas }, ...(replicas === undefined ? {} : { replicas }) });
    assert.equal(app.replicas, want, `min ${minReplicas} max ${maxReplicas} replicas ${replicas}`);
  }
});

test("metadata without a namespace, uid or generation gets safe defaults", () => {
  const app = resolveApp({ ...modelApp(), metadata: { name: "solo" } }, config());
  assert.deepEqual([app.name, app.namespace, app.uid, app.generation], ["solo", "default", "", 0]);
});

test("only the error's line number is renumbered, not the user's text quoted in the message", () => {
  // The value the user wrote must be quoted as written: "line 9", not "line 8".
  const msg = invalid({ modelfile: "PARAMETER num_ctx line 9" });
  assert.match(msg, /^spec\.modelfile: line 1: /);
  assert.match(msg, /"line 9"/, msg);
});
