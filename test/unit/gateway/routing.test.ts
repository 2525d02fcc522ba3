import assert from "node:assert/strict";
import { test } from "node:test";
import { isDnsLabel } from "../../../server/common/kube-names.ts";
import { route, shapeOf } from "../../../server/gateway/1-dispatch/target.ts";
import { apiRoute } from "../../../server/gateway/routes.ts";

test("app routes: org and app are stripped, the rest and the query go to the pod", () => {
  assert.deepEqual(route("POST", "/acme/chat/v1/chat/completions?x=1"), {
    kind: "app",
    org: "acme",
    app: "chat",
    rest: "/v1/chat/completions",
    query: "?x=1",
    api: apiRoute("/v1/chat/completions"),
  });
  for (const [method, rest] of [
    ["GET", "/v1/models"],
    ["GET", "/v1/models/chat:latest"],
    ["GET", "/v1/models/hf.co%2Facme%2Fx"],
    ["POST", "/v1/completions"],
    ["POST", "/v1/embeddings"],
    ["POST", "/v1/rerank"],
    ["POST", "/v1/reranking"],
    ["POST", "/v1/responses"],
    ["POST", "/v1/messages"],
    ["POST", "/v1/messages/count_tokens"],
    ["POST", "/api/chat"],
    ["POST", "/api/generate"],
    ["POST", "/api/embed"],
    ["POST", "/api/rerank"],
    ["GET", "/api/tags"],
    ["POST", "/api/show"],
    ["GET", "/api/ps"],
    ["GET", "/api/version"],
    ["HEAD", "/api/version"],
  ] as const) {
    const r = route(method, `/acme/chat${rest}`);
    assert.equal(r.kind, "app", `${method} ${rest}`);
  }
  assert.equal((route("POST", "/acme/chat/api/tags") as { status: number }).status, 405);
  // HEAD works wherever GET does (RFC 9110 §9.3.2), so Allow says so.
  assert.equal((route("POST", "/acme/chat/api/tags") as { allow: string }).allow, "GET, HEAD");
  assert.equal((route("GET", "/acme/chat/api/chat") as { allow: string }).allow, "POST");
});

test("an absolute-form target (RFC 9112 §3.2.2: a server MUST accept it) routes as its path", () => {
  assert.deepEqual(
    route("POST", "http://gw.example:8080/acme/chat/v1/chat/completions?x=1"),
    route("POST", "/acme/chat/v1/chat/completions?x=1"),
  );
  assert.deepEqual(
    route("GET", "HTTPS://gw.example/_gantry/v1/openapi.json"),
    route("GET", "/_gantry/v1/openapi.json"),
  );
  assert.deepEqual(route("GET", "http://gw.example/healthz"), route("GET", "/healthz"));
  assert.equal(route("GET", "http://gw.example").kind, "error");
  assert.equal(route("GET", "http://gw.example?x").kind, "error");
});

test("the pods' management routes are refused with 403 in the API's shape", () => {
  for (const rest of ["/api/pull", "/api/create", "/api/delete", "/api/copy", "/api/blobs/sha256-abc", "/api/push"]) {
    const r = route("POST", `/acme/chat${rest}`);
    assert.deepEqual(
      [r.kind, (r as { status: number }).status, (r as { shape: string }).shape],
      ["error", 403, "ollama"],
    );
  }
});

test("org and app must be DNS labels; unknown paths are 404; traversal is refused", () => {
  const cases: Array<[string, number]> = [
    ["/", 404],
    ["/acme", 404],
    ["/acme/", 404],
    ["/Acme/chat/v1/models", 404],
    ["/acme/chat_1/v1/models", 404],
    [`/${"a".repeat(64)}/chat/v1/models`, 404],
    ["/acme/chat/v1/nothing", 404],
    ["/acme/chat/metrics", 404],
    ["/acme/chat/health", 404],
    ["/acme/chat/v1/../api/pull", 400],
    ["/acme/chat//api/pull", 400],
    ["/acme/chat/api/%70ull", 400],
    ["/acme/chat/v1/models/%ff", 400],
    ["/acme/chat/v1/models/a%2", 400],
  ];
  for (const [url, status] of cases) {
    const r = route("GET", url);
    assert.equal(r.kind, "error", url);
    assert.equal((r as { status: number }).status, status, url);
  }
  assert.equal((route("GET", "/acme/nope/v1/x") as { shape: string }).shape, "openai");
  assert.equal((route("GET", "/acme/nope/api/x") as { shape: string }).shape, "ollama");
  assert.equal((route("GET", "/Acme/chat/v1/models") as { shape: string }).shape, "openai", "an invalid org under /v1");
});

test("gateway routes", () => {
  assert.deepEqual(route("GET", "/healthz"), { kind: "system", path: "/healthz" });
  assert.deepEqual(route("GET", "/metrics"), { kind: "system", path: "/metrics" });
  assert.deepEqual(route("HEAD", "/readyz"), { kind: "system", path: "/readyz" });
  for (const method of ["POST", "DELETE", "PUT"])
    assert.deepEqual(route(method, "/healthz"), {
      kind: "error",
      status: 405,
      message: `method ${method} not allowed on /healthz`,
      shape: "ollama",
      allow: "GET, HEAD",
    });
  assert.deepEqual(route("GET", "/_gantry/v1/orgs/acme/keys?x"), {
    kind: "management",
    rest: "/_gantry/v1/orgs/acme/keys",
    query: "?x",
  });
});

test("DNS labels and shapes", () => {
  for (const ok of ["a", "acme", "org-1", "1org", "a".repeat(63)]) assert.ok(isDnsLabel(ok), ok);
  for (const bad of ["", "-a", "a-", "A", "a.b", "a_b", "a".repeat(64)]) assert.ok(!isDnsLabel(bad), bad);
  assert.equal(shapeOf("/v1"), "openai");
  assert.equal(shapeOf("/v1x"), "ollama");
  assert.equal(shapeOf("/v1/responses"), "openai");
  assert.equal(shapeOf("/v1/messages"), "anthropic");
  assert.equal(shapeOf("/v1/messages/count_tokens"), "anthropic");
  assert.equal(shapeOf("/v1/messagesx"), "openai");
});

test("Anthropic's Messages API is answered in its own error shape, also before the app is known", () => {
  const get = route("GET", "/acme/chat/v1/messages") as { status: number; shape: string; allow: string };
  assert.deepEqual([get.status, get.shape, get.allow], [405, "anthropic", "POST"]);
  const batches = route("POST", "/acme/chat/v1/messages/batches") as { status: number; shape: string };
  assert.deepEqual([batches.status, batches.shape], [404, "anthropic"]);
  assert.equal((route("POST", "/Acme/chat/v1/messages") as { shape: string }).shape, "anthropic");
});

test("an inference path without the org and app (a base URL missing them) is told the app URL form, in its shape", () => {
  for (const [method, target, shape] of [
    ["POST", "/v1/chat/completions", "openai"],
    ["GET", "/v1/models", "openai"],
    ["POST", "/api/chat", "ollama"],
    ["POST", "/api/generate", "ollama"],
    ["POST", "/v1/responses", "openai"],
    ["POST", "/v1/messages", "anthropic"],
  ] as const) {
    const r = route(method, target) as { kind: string; status: number; message: string; shape: string };
    assert.deepEqual([r.kind, r.status, r.shape], ["error", 404, shape], target);
    assert.match(r.message, /is not an app's URL: use \/<org_id>\/<app_id>\/v1\//, target);
  }
  // An org named v1 still reaches its apps' routes.
  assert.equal(route("POST", "/v1/chat/v1/chat/completions").kind, "app");
});
