import assert from "node:assert/strict";
import { test } from "node:test";
import { ModelAppSpecSchema } from "../../../operator/api/v1alpha1/modelapp.ts";
import { InvalidSpecError } from "../../../operator/api/v1alpha1/spec-checks.ts";
import {
  appPathFor,
  localAppUrl,
  localAuth,
  localServerEnv,
  planLocalModel,
  runningAppText,
} from "../../../server/platform/local-app.ts";

const HUB = "hf.co/org/repo-GGUF:Q4_K_M";
const spec = (extra: Record<string, unknown> = {}) => ModelAppSpecSchema.parse({ model: HUB, ...extra });

test("auth: the flag, else the definition's own, else public (a one-off server is public)", () => {
  assert.equal(localAuth(undefined, { model: HUB }), "public");
  assert.equal(localAuth(undefined, { model: HUB, auth: "private" }), "private");
  assert.equal(localAuth("shared", { model: HUB, auth: "private" }), "shared");
  assert.equal(localAuth("public", { model: HUB, auth: "private" }), "public");
});

test("the local server gets the app's server settings and plain env values, never its address or store", () => {
  const env = localServerEnv(
    spec({
      server: { parallel: 3, contextLength: 2048, keepAlive: "10m" },
      env: [
        { name: "GANTRY_LOG_LEVEL", value: "debug" },
        { name: "GANTRY_HOST", value: "0.0.0.0:11434" },
        { name: "GANTRY_MODELS", value: "/models" },
        { name: "HF_TOKEN", valueFrom: { secretKeyRef: { name: "hf", key: "token" } } },
      ],
    }),
    { GANTRY_MODELS: "/home/me/.gantry/models", HF_TOKEN: "mine", GANTRY_NUM_PARALLEL: "9" },
  );
  assert.equal(env.GANTRY_NUM_PARALLEL, "3", "the app's setting over the user's");
  assert.equal(env.GANTRY_CONTEXT_LENGTH, "2048");
  const unset = localServerEnv(spec({}), { GANTRY_CONTEXT_LENGTH: "8192" });
  assert.equal(unset.GANTRY_CONTEXT_LENGTH, "8192", "no server.contextLength: the server's own default or setting");
  assert.equal(localServerEnv(spec({}), {}).GANTRY_CONTEXT_LENGTH, undefined);
  assert.equal(env.GANTRY_KEEP_ALIVE, "10m");
  assert.equal(env.GANTRY_LOG_LEVEL, "debug");
  assert.equal(env.GANTRY_MODELS, "/home/me/.gantry/models", "the user's store: a model is downloaded once");
  assert.equal(env.GANTRY_HOST, "127.0.0.1:0", "a free loopback port: only the gateway talks to it");
  assert.equal(env.HF_TOKEN, "mine", "a Secret's value exists only in the cluster: the user's environment supplies it");
});

test("the served model: the hub model's name, or <app>:latest with Modelfile overrides (as in the cluster)", () => {
  assert.deepEqual(planLocalModel("chat", spec()), { base: HUB, served: HUB });
  assert.deepEqual(planLocalModel("demo", spec({ modelfile: "SYSTEM be brief\n" })), {
    base: HUB,
    overrides: "SYSTEM be brief\n",
    served: "demo:latest",
  });
  // A GGUF file of this machine: its name is known once imported, unless overrides name it.
  assert.deepEqual(planLocalModel("chat", spec({ model: "./tiny.gguf" })), { base: "./tiny.gguf" });
  assert.deepEqual(planLocalModel("chat", spec({ model: "./tiny.gguf", modelfile: "PARAMETER num_predict 4" })), {
    base: "./tiny.gguf",
    overrides: "PARAMETER num_predict 4",
    served: "chat:latest",
  });
  assert.throws(
    () => planLocalModel("chat", spec({ modelfile: "FROM other\n" })),
    (e: unknown) => e instanceof InvalidSpecError && /spec\.modelfile/.test(e.message),
  );
});

test("plain /v1 and /api paths are the app's; app paths and the gateway's own are left alone", () => {
  const cases: [string, string][] = [
    ["/v1/chat/completions", "/local/chat/v1/chat/completions"],
    ["/v1", "/local/chat/v1"],
    ["/v1?x=1", "/local/chat/v1?x=1"],
    ["/api/tags", "/local/chat/api/tags"],
    ["/local/chat/v1/models", "/local/chat/v1/models"],
    ["/v10/models", "/v10/models"],
    ["/apix", "/apix"],
    ["/healthz", "/healthz"],
    ["/metrics", "/metrics"],
    ["/_gantry/keys", "/_gantry/keys"],
  ];
  for (const [url, want] of cases) assert.equal(appPathFor(url, "local", "chat"), want, url);
});

test("what run prints: the URL, both base URLs, the key once when private, a curl and an openai snippet", () => {
  const base = "http://127.0.0.1:8080";
  assert.equal(localAppUrl({ base, org: "local", app: "chat" }), `${base}/local/chat`);
  const pub = runningAppText({ org: "local", app: "chat", base, model: HUB, auth: "public" });
  assert.match(pub, /^chat is running at http:\/\/127\.0\.0\.1:8080\/local\/chat \(public: no key needed\)\n/);
  assert.ok(pub.includes(`${base}/v1 (OpenAI clients)`));
  assert.ok(pub.includes(`curl ${base}/local/chat/v1/chat/completions`));
  assert.ok(!pub.includes("Authorization"));
  assert.ok(pub.includes('import OpenAI from "openai";'));
  const priv = runningAppText({ org: "local", app: "chat", base, model: HUB, auth: "private", key: "gk_secret" });
  assert.match(priv, /\(private: requests need the key below/);
  assert.ok(priv.includes("  export GANTRY_API_KEY=gk_secret\n"));
  assert.ok(priv.includes('-H "Authorization: Key $GANTRY_API_KEY"'));
  assert.ok(priv.includes("apiKey: process.env.GANTRY_API_KEY"));
});
