// The end-to-end checks of `helm install` to a working platform, as a cluster admin and an API user run them: install
// the chart, create an admin key with `gantry keys`, apply a ModelApp with kubectl, wait for Ready, call it through
// the gateway (curl-like fetch and the openai client), `helm test`, `helm upgrade` with a changed value (the operator
// rolls), `helm uninstall` (the CRD and the ModelApps stay). Shared by the test control plane's test
// (test/integration/chart/install.test.ts) and the kind script (test/e2e/kind.ts): only the cluster differs.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import OpenAI from "openai";
import { parse } from "yaml";

const run = promisify(execFile);

export interface PlatformTarget {
  kubeconfig: string;
  /** Dir holding kubectl and helm (empty: PATH). */
  binDir: string;
  /** Path of charts/gantry. */
  chart: string;
  release: string;
  releaseNs: string;
  /** The org (namespace) the app is deployed to. */
  org: string;
  /** What this cluster needs on top of the defaults (image, pod labels, hub). */
  installArgs: string[];
  /** The model the app serves (a ref the pods can pull). */
  model: string;
  /** How this machine reaches the gateway Service once it exists. */
  gatewayUrl(): Promise<string>;
  /** The `gantry` CLI (argv prefix), run with KUBECONFIG set. */
  gantry: string[];
  /** How long the app may take to become Ready (a cold model pull on kind takes longer). */
  readyTimeout: string;
  /**
   * The operator reconciles (and the gateway serves) only the org's namespace, made before the install: for a shared
   * cluster where another release's operator reconciles every namespace.
   */
  watchOrg?: boolean;
  /** More checks once the release is installed and ready (e.g. where its pods run). */
  afterInstall?(): Promise<void>;
  /** More checks once the app answers through the gateway (at `gateway`, with an admin key of the org). */
  afterAnswer?(o: { gateway: string; key: string; app: string; model: string }): Promise<void>;
}

const tool = (t: PlatformTarget, name: string) => (t.binDir ? `${t.binDir}/${name}` : name);

/** kubectl, never synchronous: the test's own servers (the model hub) must keep answering while it waits. */
export const kubectlOf =
  (t: PlatformTarget) =>
  (args: string[], input?: string): Promise<string> =>
    new Promise((resolve, reject) => {
      const child = execFile(
        tool(t, "kubectl"),
        ["--kubeconfig", t.kubeconfig, ...args],
        { encoding: "utf8", maxBuffer: 16 << 20 },
        (err, stdout, stderr) => (err ? reject(Object.assign(err, { stderr })) : resolve(stdout)),
      );
      child.stdin?.end(input ?? "");
    });

export const helmOf =
  (t: PlatformTarget) =>
  async (args: string[]): Promise<string> =>
    (
      await run(tool(t, "helm"), ["--kubeconfig", t.kubeconfig, ...args], {
        encoding: "utf8",
        maxBuffer: 16 << 20,
      })
    ).stdout;

const APP = "chat";
const TEST_KEY_SECRET = "gantry-helm-test-key";
const CRD = "modelapps.gantry.dev";

/** `helm install` values every target sets: helm test calls the app with the key Secret made below. */
const installValues = (t: PlatformTarget): string[] => [
  "--set",
  `tests.app=${t.org}/${APP}`,
  "--set",
  `tests.keySecret.name=${TEST_KEY_SECRET}`,
  ...(t.watchOrg ? ["--set", `operator.config.watchNamespace=${t.org}`] : []),
  ...t.installArgs,
];

/**
 * A CRD applied without Helm (kubectl apply of crds/) is adopted by the release, as `helm install` requires: the
 * ownership labels Helm checks. What a user who applied crds/ first does too (docs/kubernetes.md).
 */
async function adoptCrd(t: PlatformTarget): Promise<void> {
  const kubectl = kubectlOf(t);
  try {
    await kubectl(["get", "crd", CRD]);
  } catch {
    return;
  }
  await kubectl(["label", "--overwrite", "crd", CRD, "app.kubernetes.io/managed-by=Helm"]);
  await kubectl([
    "annotate",
    "--overwrite",
    "crd",
    CRD,
    `meta.helm.sh/release-name=${t.release}`,
    `meta.helm.sh/release-namespace=${t.releaseNs}`,
  ]);
}

/** The operator's pods, leaving out terminating ones (a rollout is complete before the old pods are gone). */
const operatorPods = async (t: PlatformTarget): Promise<string[]> =>
  (
    JSON.parse(
      await kubectlOf(t)([
        "get",
        "pods",
        "-n",
        t.releaseNs,
        "-l",
        `app.kubernetes.io/instance=${t.release},app.kubernetes.io/component=operator`,
        "-o",
        "json",
      ]),
    ) as { items: { metadata: { name: string; deletionTimestamp?: string } }[] }
  ).items
    .filter((p) => !p.metadata.deletionTimestamp)
    .map((p) => p.metadata.name)
    .sort();

async function chat(gateway: string, t: PlatformTarget, key: string, model: string): Promise<string> {
  const client = new OpenAI({
    baseURL: `${gateway}/${t.org}/${APP}/v1`,
    apiKey: "unused",
    defaultHeaders: { authorization: `Key ${key}` },
    maxRetries: 0,
    timeout: 300_000,
  });
  const r = await client.chat.completions.create({
    model,
    messages: [{ role: "user", content: "Say hi" }],
    max_tokens: 8,
  });
  return r.choices[0]?.message.content ?? "";
}

/** Runs every check in order; the first failure stops the run with the step's name in the error. */
export async function platformChecks(t: PlatformTarget, log: (line: string) => void): Promise<void> {
  const step = async (name: string, fn: () => Promise<void> | void): Promise<void> => {
    const started = Date.now();
    try {
      await fn();
    } catch (err) {
      const e = err as { message?: string; stderr?: string };
      throw new Error(`${name}: ${e.message ?? String(err)}${e.stderr ? `\n${e.stderr}` : ""}`, { cause: err });
    }
    log(`ok - ${name} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
  };
  const kubectl = kubectlOf(t),
    helm = helmOf(t);
  let key = "",
    gateway = "",
    model = "";

  await step("helm install: the operator and the gateway run and become ready", async () => {
    await adoptCrd(t);
    await kubectl(["create", "namespace", t.releaseNs]);
    if (t.watchOrg) await kubectl(["create", "namespace", t.org]);
    const out = await helm([
      "install",
      t.release,
      t.chart,
      "-n",
      t.releaseNs,
      ...installValues(t),
      "--wait",
      "--timeout",
      "5m",
    ]);
    assert.match(out, /STATUS: deployed/);
    assert.match(out, /gantry keys create --org acme --scope admin/, "NOTES.txt tells the next steps");
    for (const component of ["operator", "gateway"])
      await kubectl([
        "wait",
        "-n",
        t.releaseNs,
        "pods",
        "-l",
        `app.kubernetes.io/instance=${t.release},app.kubernetes.io/component=${component}`,
        "--for=condition=Ready",
        "--timeout=120s",
      ]);
    gateway = await t.gatewayUrl();
    const ready = await fetch(`${gateway}/readyz`);
    assert.equal(ready.status, 200, "the gateway Service answers");
    const metrics = await fetch(`${gateway}/metrics`);
    assert.equal(metrics.status, 404, "the port users reach does not publish the gateway's metrics (orgs, apps, keys)");
    await t.afterInstall?.();
  });

  await step(
    "gantry keys create --scope admin makes a key; a ModelApp applied with kubectl becomes Ready",
    async () => {
      if (!t.watchOrg) await kubectl(["create", "namespace", t.org]);
      const { stdout } = await run(
        t.gantry[0]!,
        [
          ...t.gantry.slice(1),
          "keys",
          "create",
          "--org",
          t.org,
          "--scope",
          "admin",
          "--name",
          "e2e",
          "--output",
          "json",
        ],
        { env: { ...process.env, KUBECONFIG: t.kubeconfig } },
      );
      key = (JSON.parse(stdout) as { key: string }).key;
      assert.ok(key.length > 20);
      await kubectl(
        ["apply", "-f", "-"],
        `apiVersion: gantry.dev/v1alpha1
kind: ModelApp
metadata: { name: ${APP}, namespace: ${t.org} }
spec:
  model: ${t.model}
  auth: private
  scaling: { minReplicas: 1, maxReplicas: 1 }
`,
      );
      await kubectl(["wait", "-n", t.org, `modelapp/${APP}`, "--for=condition=Ready", `--timeout=${t.readyTimeout}`]);
      const app = parse(await kubectl(["get", "-n", t.org, `modelapp/${APP}`, "-o", "yaml"])) as {
        status: { url?: string };
      };
      assert.match(
        app.status.url ?? "",
        new RegExp(`^http://${t.release}-gateway\\.${t.releaseNs}\\.svc/${t.org}/${APP}$`),
        "status.url names the chart's gateway Service (operator gatewayUrl default)",
      );
    },
  );

  await step("the app answers through the gateway with the key (curl and the openai client), not without", async () => {
    const noKey = await fetch(`${gateway}/${t.org}/${APP}/v1/models`);
    assert.equal(noKey.status, 401);
    const models = await fetch(`${gateway}/${t.org}/${APP}/v1/models`, { headers: { authorization: `Key ${key}` } });
    assert.equal(models.status, 200);
    model = ((await models.json()) as { data: Array<{ id: string }> }).data[0]?.id ?? "";
    assert.ok(model, "the app lists its model");
    const r = await fetch(`${gateway}/${t.org}/${APP}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Key ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model, messages: [{ role: "user", content: "hi" }], max_tokens: 8 }),
    });
    assert.equal(r.status, 200, await r.clone().text());
    const body = (await r.json()) as { choices: Array<{ message: { content: string } }> };
    assert.ok(body.choices[0]?.message.content.length, "an answer");
    assert.ok((await chat(gateway, t, key, model)).length > 0, "the openai client gets an answer");
    await t.afterAnswer?.({ gateway, key, app: APP, model });
  });

  await step("helm test passes: the gateway's health and the app through its Service", async () => {
    await kubectl(["create", "secret", "generic", TEST_KEY_SECRET, "-n", t.releaseNs, `--from-literal=key=${key}`]);
    const out = await helm(["test", t.release, "-n", t.releaseNs, "--logs", "--timeout", "5m"]).catch(
      async (err: unknown) => {
        // What the test pod could not reach, in the failure: the release's pods, the gateway's endpoints, events.
        const show = (args: string[]) => kubectl(["-n", t.releaseNs, ...args]).catch((e: unknown) => String(e));
        const state = await Promise.all([
          show(["get", "pods", "-o", "wide"]),
          show(["get", "endpointslices", "-o", "wide"]),
          show(["get", "events", "--sort-by=.lastTimestamp"]),
        ]);
        throw new Error(`${String(err)}\n${state.join("\n")}`, { cause: err });
      },
    );
    assert.match(out, /Phase:\s+Succeeded/);
    assert.match(out, /GET \/readyz: 200/);
    assert.match(out, new RegExp(`GET /${t.org}/${APP}/v1/models: 200`));
  });

  await step("helm upgrade with a changed operator value rolls the operator; the app keeps answering", async () => {
    const before = await operatorPods(t);
    const checksum = () =>
      kubectl([
        "get",
        "deploy",
        "-n",
        t.releaseNs,
        `${t.release}-operator`,
        "-o",
        "jsonpath={.spec.template.metadata.annotations.checksum/config}",
      ]);
    const oldSum = await checksum();
    await helm([
      "upgrade",
      t.release,
      t.chart,
      "-n",
      t.releaseNs,
      "--reuse-values",
      "--set",
      "operator.config.workers=3",
      "--wait",
      "--timeout",
      "5m",
    ]);
    assert.notEqual(await checksum(), oldSum, "the config checksum changed");
    await kubectl(["rollout", "status", "-n", t.releaseNs, `deploy/${t.release}-operator`, "--timeout=180s"]);
    const cm = await kubectl([
      "get",
      "configmap",
      "-n",
      t.releaseNs,
      `${t.release}-operator`,
      "-o",
      "jsonpath={.data.operator\\.yaml}",
    ]);
    assert.equal((parse(cm) as { workers: number }).workers, 3);
    const after = await operatorPods(t);
    assert.ok(
      after.every((p) => !before.includes(p)),
      `new operator pods (${before.join(",")} -> ${after.join(",")})`,
    );
    assert.ok((await chat(gateway, t, key, model)).length > 0);
  });

  await step("helm uninstall leaves the CRD and the ModelApps", async () => {
    await helm(["uninstall", t.release, "-n", t.releaseNs, "--wait", "--timeout", "3m"]);
    assert.match(await kubectl(["get", "crd", CRD, "-o", "name"]), new RegExp(CRD));
    assert.match(
      await kubectl(["get", "modelapps", "-n", t.org, "-o", "name"]),
      new RegExp(`modelapp.gantry.dev/${APP}`),
    );
    assert.doesNotMatch(
      await kubectl(["get", "deploy", "-n", t.releaseNs, "-o", "name"]),
      /operator|gateway/,
      "the chart's workloads are gone",
    );
  });
}
