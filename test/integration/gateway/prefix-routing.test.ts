// PrefixHash on the test control plane: an app of three replicas (pods that really run `gantry serve` on the tiny
// model) with spec.loadBalancing.strategy PrefixHash, called through `gantry gateway` with the openai client. Every
// turn of a conversation reaches one pod (the gateway's access log names it) and finds its earlier turns in that pod's
// cache; conversations spread over the pods; a LeastLoad app spreads one conversation's turns; a pod deleted mid-way
// moves only its own conversations, and none of their turns fails.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, test } from "node:test";
import { CoreV1Api } from "@kubernetes/client-node";
import OpenAI from "openai";
import { createTestNamespace } from "../../cluster/test-cluster.ts";
import { startTestGateway, type TestGateway } from "../../support/gateway.ts";
import { startHubServer, type HubServer } from "../../support/hub-server.ts";
import { tinyModelPath } from "../../support/models.ts";
import { kubectl, podsOperatorConfig, startTestOperator, type TestOperator } from "../../support/operator.ts";
import { createApp, eventually, modelApp, operatorCluster, type OperatorCluster } from "../operator/helpers.ts";

const MODEL = "hf.co/acme/tiny-chat-GGUF:Q8_0";
let c: OperatorCluster, op: TestOperator, hub: HubServer, gw: TestGateway, ns: string, core: CoreV1Api;

before(async () => {
  c = await operatorCluster();
  core = c.kc.makeApiClient(CoreV1Api);
  ns = await createTestNamespace(c.kc, "org-prefix");
  hub = await startHubServer({ host: "0.0.0.0" });
  await hub.register({ org: "acme", repo: "tiny-chat-GGUF", files: { "tiny-chat-Q8_0.gguf": await tinyModelPath() } });
  op = await startTestOperator(
    c.cp,
    podsOperatorConfig({ namespace: ns, hubPort: hub.port, lease: "gantry-prefix-test" }),
  );
  gw = await startTestGateway(c.cp, { limits: { requestsPerSecond: 0, burst: 1, concurrent: 0 } });
  const spec = (strategy: string) => ({
    model: MODEL,
    auth: "public",
    resources: { profile: "cpu", cpu: "1" },
    server: { parallel: 2, contextLength: 2048 },
    scaling: { minReplicas: 3, maxReplicas: 3 },
    loadBalancing: { strategy },
  });
  await createApp(c, modelApp(ns, "sticky", spec("PrefixHash")));
  await createApp(c, modelApp(ns, "spread", { ...spec("LeastLoad"), scaling: { minReplicas: 2, maxReplicas: 2 } }));
  for (const [app, n] of [
    ["sticky", 3],
    ["spread", 2],
  ] as const)
    await eventually(
      `${app}: ${n} ready pods`,
      async () => ((await readyPods(app)).length === n ? true : undefined),
      300_000,
    );
});

after(async () => {
  await gw?.stop();
  await op?.stop();
  await core?.deleteNamespace({ name: ns }).catch(() => undefined);
  await hub?.close();
});

async function readyPods(app: string): Promise<string[]> {
  const pods = await core.listNamespacedPod({ namespace: ns, labelSelector: `gantry.dev/modelapp=${app}` });
  return pods.items
    .filter(
      (p) =>
        !p.metadata?.deletionTimestamp && p.status?.conditions?.some((x) => x.type === "Ready" && x.status === "True"),
    )
    .map((p) => p.metadata!.name!);
}

/** One turn: the answer, and the pod and choice the gateway's access log gives for it. */
async function turn(app: string, messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[]) {
  const requestId = randomUUID();
  const client = new OpenAI({ baseURL: `${gw.url}/${ns}/${app}/v1`, apiKey: "unused", maxRetries: 0 });
  const r = await client.chat.completions.create(
    { model: MODEL, messages, max_tokens: 4, temperature: 0 },
    { headers: { "x-request-id": requestId } },
  );
  const line = await eventually(`the access line of ${requestId}`, async () =>
    gw
      .logs()
      .split("\n")
      .find((l) => l.includes(`"requestId":"${requestId}"`) && l.includes('"msg":"request"')),
  );
  const log = JSON.parse(line!) as { pod: string; choice: string; status: number };
  return {
    answer: r.choices[0]!.message.content ?? "",
    cached: r.usage?.prompt_tokens_details?.cached_tokens ?? 0,
    ...log,
  };
}

/** A conversation of `turns` turns; the pods that answered each. */
async function conversation(app: string, topic: string, turns: number) {
  const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [];
  const seen: Array<Awaited<ReturnType<typeof turn>>> = [];
  for (let i = 0; i < turns; i++) {
    messages.push({ role: "user", content: `${topic}: question ${i + 1}, tell me more about it please` });
    const t = await turn(app, messages);
    seen.push(t);
    messages.push({ role: "assistant", content: t.answer });
  }
  return seen;
}

test("PrefixHash: every turn of a conversation reaches one pod and finds its earlier turns cached; conversations spread", async () => {
  const pods = new Set<string>();
  for (const topic of ["volcanoes", "tides", "glaciers", "deserts", "rivers", "comets"]) {
    const turns = await conversation("sticky", topic, 3);
    assert.equal(new Set(turns.map((t) => t.pod)).size, 1, `${topic}: ${turns.map((t) => t.pod).join(", ")}`);
    assert.deepEqual(
      turns.map((t) => t.choice),
      ["ring_first", "ring_first", "ring_first"],
    );
    for (const t of turns.slice(1)) assert.ok(t.cached > 0, `${topic}: a later turn reuses the pod's cache`);
    pods.add(turns[0]!.pod);
  }
  assert.ok(pods.size >= 2, `6 conversations on ${pods.size} pod(s)`);
  assert.ok((await gw.metric("gantry_gateway_pod_requests_total", { app: "sticky", choice: "ring_first" })) >= 18);
});

test("LeastLoad (the default): one conversation's turns are spread over the pods", async () => {
  const turns = await conversation("spread", "volcanoes", 4);
  assert.ok(new Set(turns.map((t) => t.pod)).size >= 2, turns.map((t) => t.pod).join(", "));
  assert.ok(turns.every((t) => t.choice === "least_load"));
});

test("a pod removed (scaled down) mid-conversation: its conversations move to another pod without an error, the others stay", async () => {
  const topics = ["volcanoes", "tides", "glaciers", "deserts", "rivers", "comets"];
  const home = new Map<string, string>();
  for (const t of topics) home.set(t, (await conversation("sticky", `${t} again`, 1))[0]!.pod);
  const before = await readyPods("sticky");
  kubectl(c.cp, [
    "-n",
    ns,
    "patch",
    "modelapp",
    "sticky",
    "--type",
    "merge",
    "-p",
    '{"spec":{"scaling":{"minReplicas":2,"maxReplicas":2}}}',
  ]);
  const removed = await eventually(
    "a pod removed",
    async () => {
      const now = await readyPods("sticky");
      return now.length === 2 ? before.find((p) => !now.includes(p)) : undefined;
    },
    120_000,
  );
  // The gateway routes by the app's EndpointSlice: once it lists two endpoints, the ring has two pods.
  await eventually("the EndpointSlice lists two pods", async () => {
    const slices = kubectl(c.cp, [
      "-n",
      ns,
      "get",
      "endpointslices",
      "-l",
      "kubernetes.io/service-name=sticky",
      "-o",
      "json",
    ]);
    const eps = (
      JSON.parse(slices) as { items: { endpoints?: { conditions?: { ready?: boolean } }[] }[] }
    ).items.flatMap((i) => i.endpoints ?? []);
    return eps.filter((e) => e.conditions?.ready !== false).length === 2 ? true : undefined;
  });
  for (const t of topics) {
    const [again] = await conversation("sticky", `${t} again`, 1);
    assert.equal(again!.status, 200);
    if (home.get(t) === removed) assert.notEqual(again!.pod, removed, `${t} moved off the removed pod`);
    else assert.equal(again!.pod, home.get(t), `${t} stayed on its pod`);
  }
});
