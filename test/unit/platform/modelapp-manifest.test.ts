import assert from "node:assert/strict";
import { test } from "node:test";
import { ModelAppSchema } from "../../../operator/api/v1alpha1/modelapp.ts";
import {
  appNameProblem,
  defaultAppName,
  exampleRequest,
  renderModelApp,
  SOURCE_ANNOTATION,
} from "../../../server/platform/modelapp-manifest.ts";

const SPEC = { model: "hf.co/org/repo:Q4_K_M", scaling: { minReplicas: 0, maxReplicas: 3 } };

test("the ModelApp carries the definition as written, the flags' auth and strategy, and where it came from", () => {
  const m = renderModelApp(SPEC, {
    name: "demo",
    org: "acme",
    auth: "public",
    strategy: "rolling",
    source: "a.ts::chat",
  });
  assert.deepEqual(m.metadata, { name: "demo", namespace: "acme", annotations: { [SOURCE_ANNOTATION]: "a.ts::chat" } });
  assert.deepEqual(m.spec, { ...SPEC, auth: "public", strategy: "rolling" });
  assert.ok(ModelAppSchema.safeParse(m).success, "a valid ModelApp");
  // Without flags nothing is added: the definition's own auth (or the CRD default) stands.
  const plain = renderModelApp({ ...SPEC, auth: "shared" }, { name: "demo", org: "acme", source: "a.ts::chat" });
  assert.equal(plain.spec.auth, "shared");
  assert.ok(!("strategy" in plain.spec));
});

test("app names: DNS labels of at most 53 characters; an export name becomes one", () => {
  assert.equal(appNameProblem("demo-2"), undefined);
  assert.match(appNameProblem("Demo")!, /lowercase/);
  assert.match(appNameProblem("-demo")!, /starting and ending/);
  assert.match(appNameProblem("a".repeat(54))!, /longer than 53/);
  assert.equal(defaultAppName("chat"), "chat");
  assert.equal(defaultAppName("myChatApp_2"), "my-chat-app-2");
  assert.equal(appNameProblem(defaultAppName(`x${"Y".repeat(80)}`)), undefined);
});

test("the example request: Key header for private and shared apps, none for public ones", () => {
  const priv = exampleRequest("https://gw.example/acme/demo", "hf.co/org/repo:Q4_K_M", "private");
  assert.match(priv, /curl https:\/\/gw\.example\/acme\/demo\/v1\/chat\/completions \\\n/);
  assert.match(priv, /-H "Authorization: Key \$GANTRY_API_KEY"/);
  const body = /-d '(.*)'/.exec(priv)![1]!;
  assert.deepEqual(JSON.parse(body).model, "hf.co/org/repo:Q4_K_M");
  assert.match(priv, /baseURL: "https:\/\/gw\.example\/acme\/demo\/v1", apiKey: process\.env\.GANTRY_API_KEY/);
  const pub = exampleRequest("https://gw.example/acme/demo", "m", "public");
  assert.ok(!pub.includes("Authorization"));
  assert.match(pub, /apiKey: "unused"/);
});
