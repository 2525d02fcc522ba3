// The Helm chart as a cluster admin uses it: lint, install, and an operator running with exactly the permissions the
// chart grants its ServiceAccount (a token of that account) reconciling and scaling apps; uninstall.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { AppsV1Api, CoreV1Api } from "@kubernetes/client-node";
import { parse, parseAllDocuments, stringify } from "yaml";
import { parseOperatorConfig } from "../../../operator/config.ts";
import { createTestNamespace } from "../../cluster/test-cluster.ts";
import {
  CHART_OPERATOR_NODE_OPTIONS,
  kubectl,
  loadReportToken,
  postLoad,
  startTestOperator,
  type TestOperator,
} from "../../support/operator.ts";
import { REPO } from "../../support/server.ts";
import { parseGatewayConfig } from "../../../server/gateway/config.ts";
import { startTestGateway } from "../../support/gateway.ts";
import {
  createApp,
  eventually,
  modelApp,
  operatorCluster,
  readApp,
  waitForCondition,
  type OperatorCluster,
} from "../operator/helpers.ts";

const CHART = path.join(REPO, "charts", "gantry");
let c: OperatorCluster, releaseNs: string, appNs: string, op: TestOperator | undefined;

const helm = (...args: string[]): string =>
  execFileSync(path.join(c.cp.binDir, "helm"), ["--kubeconfig", c.cp.kubeconfig, ...args], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });

before(async () => {
  c = await operatorCluster();
  releaseNs = await createTestNamespace(c.kc, "gantry-chart");
  appNs = await createTestNamespace(c.kc, "org-chart");
});

after(async () => {
  await op?.stop();
  try {
    helm("uninstall", "gantry", "-n", releaseNs);
  } catch {
    /* already gone */
  }
  const core = c?.kc.makeApiClient(CoreV1Api);
  for (const ns of [releaseNs, appNs]) await core?.deleteNamespace({ name: ns }).catch(() => undefined);
});

test("helm lint passes and every rendered object is accepted by the API server (dry run)", () => {
  assert.match(helm("lint", CHART, "--strict"), /1 chart\(s\) linted, 0 chart\(s\) failed/);
  const rendered = helm(
    "template",
    "gantry",
    CHART,
    "-n",
    releaseNs,
    "--set",
    "monitoring.serviceMonitor.enabled=false",
  );
  const kinds = parseAllDocuments(rendered)
    .map((d) => (d.toJS() as { kind?: string } | null)?.kind)
    .filter(Boolean)
    .sort();
  assert.deepEqual(kinds, [
    "ClusterRole",
    "ClusterRole",
    "ClusterRole", // the operator's TokenReviews
    "ClusterRoleBinding",
    "ClusterRoleBinding",
    "ClusterRoleBinding",
    "ConfigMap",
    "ConfigMap",
    "CustomResourceDefinition",
    "Deployment",
    "Deployment",
    "Pod", // the helm test hook
    "PodDisruptionBudget",
    "Role",
    "RoleBinding",
    "Service",
    "Service",
    "ServiceAccount",
    "ServiceAccount",
  ]);
  assert.match(
    kubectl(c.cp, ["apply", "--dry-run=server", "-f", "-"], rendered),
    /customresourcedefinition.apiextensions.k8s.io\/modelapps.gantry.dev .*\(server dry run\)/,
  );
  // A terminating gateway keeps serving until Services and load balancers stop sending to it (no connection is
  // refused in a rolling update), and its grace period covers that wait plus the streams' shutdownSeconds.
  const gateway = parseAllDocuments(rendered)
    .map((d) => d.toJS() as { kind?: string; metadata?: { name?: string }; spec?: Record<string, unknown> } | null)
    .find((o) => o?.kind === "Deployment" && o.metadata?.name === "gantry-gateway")!;
  const pod = (gateway.spec!.template as { spec: Record<string, unknown> }).spec;
  // The operator runs with the heap flags the bench measures (test/support/operator.ts reads the same value).
  const operator = parseAllDocuments(rendered)
    .map((d) => d.toJS() as { kind?: string; metadata?: { name?: string }; spec?: Record<string, unknown> } | null)
    .find((o) => o?.kind === "Deployment" && o.metadata?.name === "gantry-operator")!;
  const env = (
    operator.spec!.template as { spec: { containers: Array<{ env: Array<{ name: string; value?: string }> }> } }
  ).spec.containers[0]!.env;
  assert.equal(env.find((e) => e.name === "NODE_OPTIONS")?.value, CHART_OPERATOR_NODE_OPTIONS);
  const container = (pod.containers as Array<{ lifecycle?: { preStop?: { sleep?: { seconds: number } } } }>)[0]!;
  const drain = container.lifecycle?.preStop?.sleep?.seconds ?? 0;
  assert.ok(drain >= 1, "a preStop wait before SIGTERM");
  assert.ok(
    (pod.terminationGracePeriodSeconds as number) >= drain + parseGatewayConfig({}).shutdownSeconds,
    "the grace period covers the wait and the shutdown",
  );
});

test("values outside the schema are refused", () => {
  assert.throws(() => helm("template", "gantry", CHART, "--set", "operator.replicas=-1"), /replicas|minimum/);
  assert.throws(() => helm("template", "gantry", CHART, "--set", "operator.nonsense=1"), /nonsense|additional/i);
});

test("NOTES.txt: its steps work as printed (the key is kept, the curl sends the app's model to a URL this machine reaches)", () => {
  const notes = (...set: string[]): string => {
    const out = helm(
      "install",
      "r",
      CHART,
      "-n",
      "gantry-system",
      "--dry-run=client",
      "--set",
      "crds.enabled=false",
      ...set,
    );
    return out.slice(out.indexOf("NOTES:"));
  };
  const check = (text: string, base: string) => {
    const keyVar = /export (\w+)=\$\(gantry keys create --org acme /.exec(text)?.[1];
    assert.ok(keyVar, `step 1 keeps the printed key in a variable:\n${text}`);
    const model = /\n {4}model: (\S+)\n/.exec(text)?.[1];
    assert.ok(model, text);
    assert.ok(text.includes(`curl ${base}/acme/chat/v1/chat/completions`), text);
    assert.ok(text.includes(`-H "Authorization: Key $${keyVar}"`), text);
    assert.ok(text.includes(`-d '{"model":"${model}","messages":[{"role":"user","content":"hi"}]`), text);
  };
  const local = notes();
  assert.ok(local.includes("port-forward svc/r-gantry-gateway 8080:80"), local);
  check(local, "http://127.0.0.1:8080");
  const ingress = notes("--set", "gateway.ingress.enabled=true", "--set", "gateway.ingress.host=g.example.com");
  assert.ok(!ingress.includes("port-forward"), ingress);
  check(ingress, "http://g.example.com");
});

test("the gateway's /metrics (org, app and key ids) is scraped on its own port, not on the one the Service, Ingress and route publish", () => {
  type Obj = {
    kind?: string;
    metadata?: { name?: string };
    spec?: Record<string, unknown>;
    data?: Record<string, string>;
  };
  const objs = parseAllDocuments(
    helm(
      "template",
      "gantry",
      CHART,
      ...["--set", "monitoring.serviceMonitor.enabled=true", "--set", "gateway.ingress.enabled=true"],
      ...["--set", "gateway.httpRoute.enabled=true", "--set", "gateway.httpRoute.parentRefs[0].name=public"],
    ),
  )
    .map((d) => d.toJS() as Obj | null)
    .filter((o): o is Obj => Boolean(o));
  const named = (kind: string) => objs.find((o) => o.kind === kind && o.metadata?.name === "gantry-gateway");
  const config = parseGatewayConfig(parse(Object.values(named("ConfigMap")!.data!)[0]!));
  assert.ok(config.metricsListen, "a separate metrics address");
  const metricsPort = Number(config.metricsListen.split(":").pop());
  assert.notEqual(metricsPort, Number(config.listen.split(":").pop()));
  const container = (
    named("Deployment")!.spec as {
      template: { spec: { containers: { ports: { name: string; containerPort: number }[] }[] } };
    }
  ).template.spec.containers[0]!;
  const portName = container.ports.find((p) => p.containerPort === metricsPort)?.name;
  assert.ok(portName, JSON.stringify(container.ports));
  const servicePorts = (named("Service")!.spec as { ports: { name: string; targetPort: string }[] }).ports;
  const scraped = (named("ServiceMonitor")!.spec as { endpoints: { port: string; path: string }[] }).endpoints;
  assert.deepEqual(
    scraped.map((e) => [e.port, e.path]),
    [[servicePorts.find((p) => p.targetPort === portName)?.name, "/metrics"]],
  );
  // What users reach goes to the main port only, where /metrics is a 404.
  const published = JSON.stringify([named("Ingress")?.spec, named("HTTPRoute")?.spec]);
  assert.ok(!published.includes(`"${scraped[0]!.port}"`), published);
});

test("one gateway limit set alone keeps the others' defaults (helm --set gateway.config.limits.requestsPerSecond)", () => {
  const rendered = helm("template", "gantry", CHART, "--set", "gateway.config.limits.requestsPerSecond=100");
  const config = parseAllDocuments(rendered)
    .map((d) => d.toJS() as { kind?: string; metadata?: { name?: string }; data?: Record<string, string> } | null)
    .find((o) => o?.kind === "ConfigMap" && o.metadata?.name === "gantry-gateway");
  assert.ok(config?.data, "the gateway's ConfigMap");
  const limits = parseGatewayConfig(parse(Object.values(config.data)[0]!)).limits;
  assert.deepEqual([limits.requestsPerSecond, limits.burst, limits.concurrent], [100, 40, 16]);
});

test("helm install; an operator with the chart's ServiceAccount permissions reconciles, reports status and scales apps", async () => {
  helm(
    "install",
    "gantry",
    CHART,
    "-n",
    releaseNs,
    "--set",
    "crds.enabled=false",
    "--set",
    "image.tag=test",
    "--set-json",
    `operator.config.resourceProfiles={"nvidia-l4":{"gpuResource":"nvidia.com/gpu","nodeSelector":{"nvidia.com/gpu.product":"NVIDIA-L4"},"tolerations":[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}]}}`,
    "--wait",
    "--timeout",
    "2m",
  );
  const apps = c.kc.makeApiClient(AppsV1Api);
  const deployment = await apps.readNamespacedDeployment({ name: "gantry-operator", namespace: releaseNs });
  assert.equal(deployment.spec?.replicas, 2);
  assert.deepEqual(deployment.spec?.template.spec?.containers[0]?.args, [
    "operator",
    "--config",
    "/etc/gantry/operator.yaml",
  ]);
  assert.equal(deployment.spec?.template.spec?.containers[0]?.image, "gantry:test");

  // The config the chart renders is one the operator accepts.
  const cm = await c.kc
    .makeApiClient(CoreV1Api)
    .readNamespacedConfigMap({ name: "gantry-operator", namespace: releaseNs });
  const config = parse(cm.data?.["operator.yaml"] ?? "") as Record<string, unknown>;
  const parsed = parseOperatorConfig(config);
  assert.equal(parsed.profiles["nvidia-l4"]?.gpuResource, "nvidia.com/gpu");
  assert.equal(parsed.leaderElection.namespace, releaseNs);

  // Run it here as the chart's ServiceAccount: a token of that account is all it gets.
  const token = kubectl(c.cp, ["create", "token", "gantry-operator", "-n", releaseNs, "--duration=1h"]).trim();
  const kubeconfig = saKubeconfig(token);
  assert.match(
    kubectl({ ...c.cp, kubeconfig }, ["auth", "can-i", "patch", "modelapps.gantry.dev", "--subresource=status", "-A"]),
    /yes/,
  );
  assert.match(kubectlNo({ ...c.cp, kubeconfig }, ["auth", "can-i", "delete", "secrets", "-A"]), /no/);
  op = await startTestOperator({ kubeconfig }, { ...config, watchNamespace: appNs });

  await createApp(
    c,
    modelApp(appNs, "chart-app", {
      model: "hf.co/acme/tiny:Q8_0",
      resources: { profile: "nvidia-l4" },
      scaling: { minReplicas: 1 },
    }),
  );
  const app = await waitForCondition(c, appNs, "chart-app", "Ready", "True", "Serving");
  assert.equal(app.status?.readyReplicas, 1);
  await createApp(
    c,
    modelApp(appNs, "sleeper", { model: "hf.co/acme/tiny:Q8_0", scaling: { minReplicas: 0, maxReplicas: 2 } }),
  );
  await waitForCondition(c, appNs, "sleeper", "Ready", "True", "ScaledToZero");
  // Load reports are accepted from the chart's gateway ServiceAccount (a TokenReview the operator may make).
  const gatewayToken = kubectl(c.cp, ["create", "token", "gantry-gateway", "-n", releaseNs, "--duration=1h"]).trim();
  assert.equal(
    (await postLoad(op.url, loadReportToken(c.cp), { gateway: "gw", apps: [] })).status,
    403,
    "another ServiceAccount",
  );
  const r = await postLoad(op.url, gatewayToken, {
    gateway: "gw",
    apps: [{ namespace: appNs, name: "sleeper", inFlight: 1 }],
  });
  assert.equal(r.status, 204);
  await waitForCondition(c, appNs, "sleeper", "Ready", "True", "Serving");
  assert.equal(
    (await readApp(c, appNs, "sleeper")).status?.url,
    `http://gantry-gateway.${releaseNs}.svc/${appNs}/sleeper`,
    "status.url names the chart's gateway Service",
  );

  // The gateway's config from the chart, run with exactly the chart's gateway ServiceAccount: its watches list.
  const gwCm = await c.kc
    .makeApiClient(CoreV1Api)
    .readNamespacedConfigMap({ name: "gantry-gateway", namespace: releaseNs });
  const gwConfig = parseGatewayConfig(parse(gwCm.data?.["gateway.yaml"] ?? ""));
  assert.deepEqual(gwConfig.operatorUrls, [`http://gantry-operator.${releaseNs}.svc:8080`]);
  const gwKubeconfig = saKubeconfig(gatewayToken);
  assert.match(
    kubectl({ ...c.cp, kubeconfig: gwKubeconfig }, ["auth", "can-i", "watch", "endpointslices", "-A"]),
    /yes/,
  );
  const gw = await startTestGateway({ kubeconfig: gwKubeconfig }, { watchNamespace: appNs });
  assert.equal((await fetch(`${gw.url}/readyz`)).status, 200);
  assert.equal((await fetch(`${gw.url}/${appNs}/sleeper/v1/models`)).status, 401, "a private app needs a key");
  await gw.stop();
  assert.equal(await op.metric("gantry_operator_kube_requests_total", { code: "403" }), 0, "no request was forbidden");
  await op.stop();
  op = undefined;

  // Scoped to one namespace (operator.config.watchNamespace): both ServiceAccounts get Roles in that namespace only,
  // and the operator and the gateway still work with exactly those.
  helm(
    "upgrade",
    "gantry",
    CHART,
    "-n",
    releaseNs,
    "--reuse-values",
    "--set",
    `operator.config.watchNamespace=${appNs}`,
  );
  const otherNs = await createTestNamespace(c.kc, "org-other");
  for (const [who, ...what] of [
    [kubeconfig, "patch", "modelapps.gantry.dev", "--subresource=status"],
    [gwKubeconfig, "watch", "endpointslices"],
  ] as const) {
    const can = (...where: string[]) => kubectlNo({ ...c.cp, kubeconfig: who }, ["auth", "can-i", ...what, ...where]);
    assert.match(can("-n", appNs), /yes/, `${what.join(" ")} in the watched namespace`);
    assert.match(can("-n", otherNs), /no/, `${what.join(" ")} in another namespace`);
    assert.match(can("-A"), /no/, `${what.join(" ")} in all namespaces`);
  }
  const scopedCm = await c.kc
    .makeApiClient(CoreV1Api)
    .readNamespacedConfigMap({ name: "gantry-operator", namespace: releaseNs });
  const scopedConfig = parse(scopedCm.data?.["operator.yaml"] ?? "") as Record<string, unknown>;
  assert.equal(scopedConfig.watchNamespace, appNs);
  op = await startTestOperator({ kubeconfig }, scopedConfig);
  await createApp(
    c,
    modelApp(appNs, "scoped", { model: "hf.co/acme/tiny:Q8_0", scaling: { minReplicas: 0, maxReplicas: 1 } }),
  );
  await waitForCondition(c, appNs, "scoped", "Ready", "True", "ScaledToZero");
  assert.equal(
    (await postLoad(op.url, gatewayToken, { gateway: "gw", apps: [{ namespace: appNs, name: "scoped", inFlight: 1 }] }))
      .status,
    204,
    "TokenReviews stay cluster-wide",
  );
  await waitForCondition(c, appNs, "scoped", "Ready", "True", "Serving");
  const scopedGw = await startTestGateway({ kubeconfig: gwKubeconfig }, { watchNamespace: appNs });
  assert.equal((await fetch(`${scopedGw.url}/readyz`)).status, 200, "the gateway's watches list in the namespace");
  await scopedGw.stop();
  assert.equal(await op.metric("gantry_operator_kube_requests_total", { code: "403" }), 0, "no request was forbidden");
  await op.stop();
  op = undefined;
  await c.kc.makeApiClient(CoreV1Api).deleteNamespace({ name: otherNs });

  helm("uninstall", "gantry", "-n", releaseNs, "--wait");
  await eventually("the operator's objects to be gone", async () =>
    apps.readNamespacedDeployment({ name: "gantry-operator", namespace: releaseNs }).then(
      () => undefined,
      () => true,
    ),
  );
});

/** A kubeconfig that authenticates with a ServiceAccount token only. */
function saKubeconfig(token: string): string {
  const admin = parse(fs.readFileSync(c.cp.kubeconfig, "utf8")) as {
    clusters: Array<{ name: string; cluster: Record<string, unknown> }>;
  };
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "gantry-sa-")), "kubeconfig");
  fs.writeFileSync(
    file,
    stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: admin.clusters,
      "current-context": "sa",
      contexts: [{ name: "sa", context: { cluster: admin.clusters[0]!.name, user: "sa" } }],
      users: [{ name: "sa", user: { token } }],
    }),
  );
  return file;
}

function kubectlNo(cp: { binDir: string; kubeconfig: string }, args: string[]): string {
  try {
    return kubectl(cp, args);
  } catch (e) {
    return String((e as { stdout?: string }).stdout ?? "");
  }
}
