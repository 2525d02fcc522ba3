// `gantry deploy` and `gantry apps` as users run them — the installed package's bin (test/support/installed-gantry.ts)
// against the test control plane with the operator and the gateway running (the operator's gatewayUrl is the gateway's
// address, so the printed URLs are the gateway's), pods really running through the process runtime, and the model
// served from a local hub the pods reach. The example app (examples/chat.ts) deploys as is: the hub serves a tiny
// generated model under its repository's name, and the operator's nvidia-gpu profile is the default one without CUDA.
// Its printed example request is run as printed, with a key made by `gantry keys create`.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { after, before, test } from "node:test";
import { CoreV1Api, type V1Pod } from "@kubernetes/client-node";
import { Ollama } from "ollama";
import OpenAI from "openai";
import { parse as parseYaml } from "yaml";
import type { ModelApp } from "../../../operator/api/v1alpha1/modelapp.ts";
import { createTestNamespace } from "../../cluster/test-cluster.ts";
import { startTestGateway, type TestGateway } from "../../support/gateway.ts";
import { startHubServer, type HubServer } from "../../support/hub-server.ts";
import { installedGantry, type InstalledGantry } from "../../support/installed-gantry.ts";
import { tinyModelPath } from "../../support/models.ts";
import { curl, printedCurl } from "../../support/printed-example.ts";
import {
  kubectl,
  kubectlResult,
  loadReportToken,
  podsOperatorConfig,
  startTestOperator,
  type TestOperator,
} from "../../support/operator.ts";
import { userProject } from "../../support/user-project.ts";
import { freePort, REPO } from "../../support/server.ts";
import { runCli, type CliResult } from "../cli/run-cli.ts";
import { eventually, operatorCluster, readApp, type OperatorCluster } from "../operator/helpers.ts";

const MODEL = "hf.co/HuggingFaceTB/SmolLM2-135M-Instruct-GGUF:Q4_K_M";

let c: OperatorCluster, op: TestOperator, hub: HubServer, gantry: InstalledGantry, core: CoreV1Api;
let gateway: TestGateway, GATEWAY_URL: string, ns: string, work: string;

before(async () => {
  [c, gantry] = await Promise.all([operatorCluster(), installedGantry()]);
  core = c.kc.makeApiClient(CoreV1Api);
  ns = await createTestNamespace(c.kc, "org-deploy");
  work = userProject("npm-init"); // app files below are written into a project as `npm init -y` makes it
  hub = await startHubServer({ host: "0.0.0.0" });
  await hub.register({
    org: "HuggingFaceTB",
    repo: "SmolLM2-135M-Instruct-GGUF",
    files: { "SmolLM2-135M-Instruct-Q4_K_M.gguf": await tinyModelPath({ controlLogit: -8 }) },
  });
  const gatewayPort = await freePort();
  GATEWAY_URL = `http://127.0.0.1:${gatewayPort}`;
  op = await startTestOperator(
    c.cp,
    podsOperatorConfig({
      namespace: ns,
      hubPort: hub.port,
      lease: "gantry-operator-deploy-test",
      extra: { gatewayUrl: GATEWAY_URL },
    }),
  );
  const tokenFile = path.join(work, "load-report-token");
  fs.writeFileSync(tokenFile, loadReportToken(c.cp));
  gateway = await startTestGateway(c.cp, { operatorUrls: [op.url], operatorTokenFile: tokenFile }, gatewayPort);
});

after(async () => {
  await gateway?.stop();
  await op?.stop();
  await core?.deleteNamespace({ name: ns }).catch(() => undefined);
  await hub?.close();
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

/** The installed gantry with the cluster's kubeconfig (as KUBECONFIG in a user's shell), in `cwd`. */
const gantryCli = (args: string[], opts: { cwd?: string; env?: Record<string, string> } = {}): Promise<CliResult> =>
  runCli(args, {
    bin: gantry.bin,
    cwd: opts.cwd ?? work,
    env: { PATH: `${path.dirname(process.execPath)}:${process.env.PATH}`, KUBECONFIG: c.cp.kubeconfig, ...opts.env },
    timeoutMs: 300_000,
  });

async function gantryOk(args: string[], opts: { cwd?: string; env?: Record<string, string> } = {}): Promise<CliResult> {
  const r = await gantryCli(args, opts).catch((err: unknown) => {
    throw new Error(`${err instanceof Error ? err.message : String(err)}\n${clusterState()}`);
  });
  if (r.code !== 0)
    throw new Error(
      `gantry ${args.join(" ")} exited ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}\n${clusterState()}`,
    );
  return r;
}

/** The namespace's jobs and pods and the process runtime's last lines: where a deploy that never got Ready stopped. */
function clusterState(): string {
  const jobsAndPods = kubectlResult(c.cp, ["get", "jobs,pods", "-n", ns, "-o", "wide"]);
  const runtimeLog = path.join(c.cp.dir, "logs", "process-runtime.log");
  const runtime = fs.existsSync(runtimeLog) ? fs.readFileSync(runtimeLog, "utf8").split("\n").slice(-40) : [];
  return `kubectl get jobs,pods:\n${jobsAndPods.out}\nprocess runtime:\n${runtime.join("\n")}`;
}

/** An app file in the work directory, importing defineApp from "gantry" like a user's. */
function appFile(name: string, spec: Record<string, unknown>): string {
  fs.writeFileSync(
    path.join(work, name),
    `import { defineApp } from "gantry";\nexport const chat = defineApp(${JSON.stringify(spec, null, 2)});\n`,
  );
  return `${name}::chat`;
}

const readyPods = async (app: string): Promise<V1Pod[]> =>
  (await core.listNamespacedPod({ namespace: ns, labelSelector: `gantry.dev/modelapp=${app}` })).items.filter(
    (p) =>
      !p.metadata?.deletionTimestamp && p.status?.conditions?.some((x) => x.type === "Ready" && x.status === "True"),
  );
const allPods = async (app: string): Promise<V1Pod[]> =>
  (await core.listNamespacedPod({ namespace: ns, labelSelector: `gantry.dev/modelapp=${app}` })).items;

test("deploy examples/chat.ts::chat --app-name demo --auth private: the example's ModelApp, Ready, URL and a Key request", async () => {
  const r = await gantryOk(
    ["deploy", "examples/chat.ts::chat", "--app-name", "demo", "--auth", "private", "--org", ns],
    {
      cwd: REPO,
    },
  );
  assert.match(
    r.stderr,
    new RegExp(`^ModelApp ${ns}/demo created \\(generation 1\\) from examples/chat\\.ts::chat\\n`),
  );
  const url = `${GATEWAY_URL}/${ns}/demo`;
  assert.equal(
    r.stdout.split("\n")[0],
    `demo is ready (scaled to zero: the first request starts a replica) at ${url}`,
    "minReplicas 0: Ready as ScaledToZero, the gateway wakes it",
  );
  assert.ok(
    r.stdout.includes(`curl ${url}/v1/chat/completions \\\n    -H "Authorization: Key $GANTRY_API_KEY"`),
    r.stdout,
  );
  assert.ok(r.stdout.includes(`"model":"${MODEL}"`), "the served model's name in the example");
  assert.ok(r.stdout.includes(`gantry keys create --org ${ns}`));

  const app = await readApp(c, ns, "demo");
  assert.deepEqual(
    [app.spec.model, app.spec.auth, app.spec.resources.profile, app.spec.resources.gpus, app.spec.scaling.maxReplicas],
    [MODEL, "private", "nvidia-gpu", 1, 3],
  );
  assert.equal(app.status?.url, url);
  const managers = (app.metadata as { managedFields?: { manager: string; operation: string }[] }).managedFields ?? [];
  assert.ok(
    managers.some((m) => m.manager === "gantry-cli" && m.operation === "Apply"),
    JSON.stringify(managers),
  );

  // examples/chat.yaml is the same app for kubectl apply.
  const other = await createTestNamespace(c.kc, "org-yaml");
  try {
    kubectl(c.cp, ["apply", "-n", other, "-f", path.join(REPO, "examples", "chat.yaml")]);
    const fromYaml = await readApp(c, other, "demo");
    assert.deepEqual(fromYaml.spec, app.spec);
  } finally {
    await core.deleteNamespace({ name: other });
  }

  // The printed example request, as printed, through the gateway: a created key works (the first request wakes the
  // app from zero), no key or a wrong one is refused in the OpenAI shape.
  const key = (await gantryOk(["keys", "create", "--org", ns, "--name", "deploy-test"])).stdout.trim();
  const example = printedCurl(r.stdout);
  const answered = await curl(example, key);
  assert.equal(answered.status, 200, answered.body);
  const completion = JSON.parse(answered.body) as { object: string; choices: { message: { role: string } }[] };
  assert.equal(completion.choices[0]?.message.role, "assistant");
  for (const wrong of ["", `${key}x`, `${key.split(":")[0]}:${"A".repeat(43)}`]) {
    const refused = await curl(example, wrong);
    assert.equal(refused.status, 401, `key "${wrong}": ${refused.body}`);
    assert.equal(typeof (JSON.parse(refused.body) as { error: { message: string } }).error.message, "string");
  }
  const openai = (apiKey: string) => new OpenAI({ baseURL: `${url}/v1`, apiKey, maxRetries: 0 });
  assert.deepEqual(
    (await openai(key).models.list()).data.map((m) => m.id),
    [MODEL, "demo"],
    "the model first, then the app's name",
  );
  const byAppName = await openai(key).chat.completions.create({
    model: "demo",
    messages: [{ role: "user", content: "hi" }],
    max_tokens: 2,
  });
  assert.equal(byAppName.choices[0]?.message.role, "assistant", "the app's name selects its model");
  await assert.rejects(
    openai(key).chat.completions.create({ model: "other", messages: [{ role: "user", content: "hi" }] }),
    OpenAI.NotFoundError,
  );
  await assert.rejects(openai("not-a-key").models.list(), OpenAI.AuthenticationError);
  const ollama = await new Ollama({ host: url, headers: { Authorization: `Key ${key}` } }).chat({
    model: MODEL,
    messages: [{ role: "user", content: "hi" }],
    options: { num_predict: 2 },
  });
  assert.equal(ollama.eval_count, 2);
});

test("deploy follows Scheduled, ModelCached, Ready to a pod that serves; a redeploy after a change rolls the pod", async () => {
  const spec = (system: string) => ({
    model: MODEL,
    modelfile: `SYSTEM ${system}\nPARAMETER num_predict 4\n`,
    resources: { profile: "nvidia-gpu", gpus: 1 },
    server: { contextLength: 512 },
    scaling: { minReplicas: 1, maxReplicas: 2 },
  });
  const deployLive = (system: string) =>
    gantryOk(["deploy", appFile("live.ts", spec(system)), "--app-name", "live", "--org", ns, "--strategy", "rolling"]);
  const first = await deployLive("v1");
  for (const line of [
    /\n {2}Scheduled: pods run on gpu-node-\d\n/,
    new RegExp(`\\n  ModelCached: ${MODEL.replace(/[.]/g, "\\.")} is in volume models\\n`),
    /\n {2}Ready: 1 of 1 replicas ready\n/,
  ])
    assert.match(first.stderr, line);
  assert.match(first.stdout, new RegExp(`^live is ready at ${GATEWAY_URL}/${ns}/live\\n`));
  assert.ok(first.stdout.includes('"model":"live:latest"'), "a Modelfile makes the app's own model");

  const [pod] = await readyPods("live");
  assert.ok(pod, "a ready pod when deploy returns");
  const openai = new OpenAI({ baseURL: `http://${pod.status!.podIP}:11434/v1`, apiKey: "unused" });
  const answer = await openai.chat.completions.create({
    model: "live:latest",
    messages: [{ role: "user", content: "hi" }],
  });
  assert.equal(answer.choices[0]?.message.role, "assistant");
  assert.equal(answer.usage?.completion_tokens, 4, "PARAMETER num_predict from the app file");
  assert.equal(
    (await new Ollama({ host: `http://${pod.status!.podIP}:11434` }).show({ model: "live:latest" })).system,
    "v1",
  );

  const redeploy = await deployLive("v2");
  assert.match(redeploy.stderr, new RegExp(`^ModelApp ${ns}/live updated \\(generation 2\\)`));
  // Deploy returns once the new pod is ready; the Deployment then scales the old one down (a rolling update).
  let after = await allPods("live");
  for (
    let waited = 0;
    after.filter((p) => !p.metadata?.deletionTimestamp).length !== 1 && waited < 30_000;
    waited += 200
  ) {
    await new Promise((r) => setTimeout(r, 200));
    after = await allPods("live");
  }
  after = after.filter((p) => !p.metadata?.deletionTimestamp);
  assert.equal(after.length, 1, `one pod after the rollout: ${after.map((p) => p.metadata?.name).join(", ")}`);
  assert.notEqual(after[0]!.metadata!.name, pod.metadata!.name, "a new pod");
  assert.ok(after[0]!.status?.conditions?.some((x) => x.type === "Ready" && x.status === "True"));
  const shown = await new Ollama({ host: `http://${after[0]!.status!.podIP}:11434` }).show({ model: "live:latest" });
  assert.equal(shown.system, "v2", "the new pod serves the new spec");

  const again = await gantryOk([
    "deploy",
    "live.ts::chat",
    "--app-name",
    "live",
    "--org",
    ns,
    "--strategy",
    "rolling",
    "-o",
    "json",
  ]);
  assert.match(again.stderr, /updated|unchanged/);
  assert.match(again.stderr, new RegExp(`ModelApp ${ns}/live unchanged \\(generation 2\\)`));
  const out = JSON.parse(again.stdout) as { org: string; app: string; url: string; status: string; model: string };
  assert.deepEqual(
    { org: out.org, app: out.app, url: out.url, status: out.status, model: out.model },
    { org: ns, app: "live", url: `${GATEWAY_URL}/${ns}/live`, status: "Ready", model: "live:latest" },
  );
  assert.equal((await allPods("live"))[0]!.metadata!.name, after[0]!.metadata!.name, "unchanged: the pod stays");
});

test("apps list, get, scale and logs on the org's apps, with JSON for scripts", async () => {
  const list = JSON.parse((await gantryOk(["apps", "list", "--org", ns, "-o", "json"])).stdout) as {
    app: string;
    ready: boolean;
    state: string;
    url: string;
  }[];
  assert.deepEqual(
    list.map((a) => [a.app, a.state, a.url]),
    [
      ["demo", "Ready", `${GATEWAY_URL}/${ns}/demo`],
      ["live", "Ready", `${GATEWAY_URL}/${ns}/live`],
    ],
  );
  const table = (await gantryOk(["apps", "list", "--org", ns])).stdout.split("\n");
  assert.match(table[0]!, /^APP\s+MODEL\s+AUTH\s+READY\s+STATE\s+URL\s+CREATED$/);
  // MODEL is what requests send: live has a modelfile, so its pods serve live:latest.
  assert.match(table[2]!, /^live\s+live:latest\s+private\s+1\/1\s+Ready\s+http:\/\/127\.0\.0\.1:\d+\//);

  const get = (await gantryOk(["apps", "get", "live", "--org", ns])).stdout;
  assert.match(get, /^state: {4} Ready: 1 of 1 replicas ready$/m);
  assert.match(get, /^source: {4}live\.ts::chat$/m);
  assert.match(get, /^model: {5}hf\.co\/\S+\nserves as: live:latest \(the model requests send\)$/m);
  assert.match(get, /^Ready\s+True\s+Serving\s+1 of 1 replicas ready$/m);
  const yaml = parseYaml((await gantryOk(["apps", "get", "live", "--org", ns, "-o", "yaml"])).stdout) as ModelApp;
  assert.equal(yaml.kind, "ModelApp");
  assert.ok(!("managedFields" in yaml.metadata));

  const scaled = await gantryOk(["apps", "scale", "live", "--min", "1", "--max", "3", "--org", ns]);
  assert.equal(scaled.stdout, `${ns}/live scales between 1 and 3 replicas\n`);
  assert.equal((await readApp(c, ns, "live")).spec.scaling.maxReplicas, 3);
  const inverted = await gantryCli(["apps", "scale", "live", "--min", "4", "--org", ns]);
  assert.equal(inverted.code, 2, "a usage error");
  assert.equal(inverted.stderr, "Error: --min 4 exceeds --max 3\n");

  const logs = await gantryOk(["apps", "logs", "live", "--tail", "50", "--org", ns]);
  assert.match(logs.stdout, /"msg":"model ready"/);
  const prepare = await gantryOk(["apps", "logs", "live", "-c", "prepare", "--org", ns]);
  assert.match(prepare.stdout, /live:latest is ready \(sha256:[0-9a-f]{64}\)/);

  // -f follows: a request made after it started shows up in its output.
  const follow = spawn(gantry.bin, ["apps", "logs", "live", "-f", "--tail", "1", "--org", ns], {
    env: { ...process.env, PATH: `${path.dirname(process.execPath)}:${process.env.PATH}`, KUBECONFIG: c.cp.kubeconfig },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let followed = "";
  follow.stdout.on("data", (d: Buffer) => (followed += d.toString()));
  try {
    // Bounds for a loaded machine (a CLI process start and a log stream); a working -f is done in seconds.
    await eventually("the followed log's first line", async () => (followed.length > 0 ? true : undefined), 90_000);
    const [pod] = await readyPods("live");
    await fetch(`http://${pod!.status!.podIP}:11434/api/tags?followed=1`);
    await eventually(
      "the request in the followed log",
      async () => (followed.includes("/api/tags") ? true : undefined),
      90_000,
    );
  } finally {
    follow.kill("SIGINT");
  }
});

test("while the model downloads, deploy shows the init container's progress", async () => {
  // A repository of its own, served at 64 KB/s (804 KB: about 12 s), into a volume of its own (nothing cached).
  await hub.register({
    org: "acme",
    repo: "slow-GGUF",
    files: { "slow-Q8_0.gguf": await tinyModelPath({ controlLogit: -8 }) },
  });
  hub.fault("acme", "slow-GGUF", "slow-Q8_0.gguf", { bytesPerSecond: 64_000 });
  const r = await gantryOk([
    "deploy",
    appFile("slow.ts", {
      model: "hf.co/acme/slow-GGUF:Q8_0",
      modelVolume: { name: "slow" },
      scaling: { minReplicas: 1 },
    }),
    "--app-name",
    "slow",
    "--org",
    ns,
  ]);
  const percents = [...r.stderr.matchAll(/^ {2}ModelCached: pulling [0-9a-f]{12}: +(\d+)% /gm)].map((m) =>
    Number(m[1]),
  );
  assert.ok(
    percents.some((p) => p > 0 && p < 100),
    `a download part-way in the progress lines: ${r.stderr}`,
  );
  assert.match(r.stderr, /\n {2}ModelCached: hf\.co\/acme\/slow-GGUF:Q8_0 is in volume slow\n/);
  await gantryOk(["apps", "delete", "slow", "--org", ns]);
});

test("failure conditions end the wait with their message and exit code 1", async () => {
  const cases: [string, Record<string, unknown>, RegExp][] = [
    [
      "missing",
      { model: "hf.co/nobody/none-GGUF:Q4_K_M", scaling: { minReplicas: 1 } },
      new RegExp(`\\nError: ${ns}/missing cannot become ready: ModelNotFound: .*nobody/none-GGUF.*\\n$`),
    ],
    [
      // At zero replicas too: the model cache Job finds out before any request does.
      "missing-idle",
      { model: "hf.co/nobody/none-GGUF:Q4_K_M", scaling: { minReplicas: 0 } },
      new RegExp(`\\nError: ${ns}/missing-idle cannot become ready: ModelNotFound: .*nobody/none-GGUF.*\\n$`),
    ],
    [
      "big",
      { model: MODEL, resources: { profile: "nvidia-gpu", gpus: 9 }, scaling: { minReplicas: 1 } },
      /\nError: \S+\/big cannot become ready: InsufficientGPU: no node has 9 free nvidia\.com\/gpu/,
    ],
    [
      "tpu",
      { model: MODEL, resources: { profile: "tpu" } },
      /cannot become ready: InvalidSpec: spec\.resources\.profile: unknown resource profile "tpu"/,
    ],
  ];
  for (const [name, spec, message] of cases) {
    const r = await gantryCli(["deploy", appFile(`${name}.ts`, spec), "--app-name", name, "--org", ns]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, message);
  }
  const noOrg = await gantryCli(["deploy", "missing.ts::chat", "--org", "no-such-org"]);
  assert.equal(noOrg.code, 1);
  assert.match(noOrg.stderr, /^Error: apply ModelApp no-such-org\/chat: org "no-such-org" does not exist/);
  for (const [name] of cases) await gantryOk(["apps", "delete", name, "--org", ns, "--no-wait"]);
});

test("--no-wait returns after the apply; the config file's org and base URL, and --base-url, shape the URL", async () => {
  const config = path.join(work, "config.yaml");
  fs.writeFileSync(config, `org: ${ns}\nbaseUrl: https://api.example.com\n`);
  const env = { GANTRY_CONFIG: config };
  const r = await gantryOk(
    ["deploy", appFile("quick.ts", { model: MODEL }), "--app-name", "quick", "--no-wait", "-o", "json"],
    { env },
  );
  const out = JSON.parse(r.stdout) as { org: string; app: string; url: string; generation: number };
  assert.deepEqual(
    [out.org, out.app, out.url, out.generation],
    [ns, "quick", `https://api.example.com/${ns}/quick`, 1],
  );
  const text = await gantryOk(
    ["deploy", "quick.ts::chat", "--app-name", "quick", "--base-url", "https://other.example/"],
    { env },
  );
  assert.match(text.stdout, new RegExp(`^quick is ready .*at https://other\\.example/${ns}/quick\\n`));
  const none = await gantryCli(["apps", "logs", "quick", "--org", ns]);
  assert.equal(none.code, 1);
  assert.match(none.stderr, /has no pods \(scaled to zero: a request starts one\)/);
});

test("apps delete removes the app and its pods; then get names the org's apps", async () => {
  const r = await gantryOk(["apps", "delete", "live", "--org", ns]);
  assert.equal(r.stdout, `deleted ${ns}/live\n`);
  await eventually(
    "the app's pods gone",
    async () => ((await allPods("live")).length === 0 ? true : undefined),
    60_000,
  );
  const get = await gantryCli(["apps", "get", "live", "--org", ns]);
  assert.equal(get.code, 1);
  assert.equal(get.stderr, `Error: no app "live" in org ${ns} (it has: demo, quick)\n`);
});
