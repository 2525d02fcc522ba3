import assert from "node:assert/strict";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { historyPath, isLoopback, serverLogPath, serverUrl } from "../../../server/cli/server-launch.ts";

test("serverUrl follows GANTRY_HOST as OLLAMA_HOST is read", () => {
  const cases: [string | undefined, string][] = [
    [undefined, "http://127.0.0.1:11434"],
    ["", "http://127.0.0.1:11434"],
    ["127.0.0.1:18000", "http://127.0.0.1:18000"],
    ["0.0.0.0:11434", "http://127.0.0.1:11434"],
    ["example.com", "http://example.com:11434"],
    ["http://example.com", "http://example.com:80"],
    ["https://example.com", "https://example.com:443"],
    ["https://example.com:8443/", "https://example.com:8443"],
    ["[::1]:9000", "http://[::1]:9000"],
  ];
  for (const [env, want] of cases) assert.equal(serverUrl(env), want, String(env));
});

test("only loopback addresses get a server started", () => {
  assert.equal(isLoopback("http://127.0.0.1:11434"), true);
  assert.equal(isLoopback("http://localhost:1"), true);
  assert.equal(isLoopback("http://[::1]:1"), true);
  assert.equal(isLoopback("http://10.0.0.2:11434"), false);
  assert.equal(isLoopback("https://example.com:443"), false);
});

test("the server log sits next to the model store, or under ~/.gantry", () => {
  assert.equal(serverLogPath({ GANTRY_MODELS: "/data/gantry/models" }), "/data/gantry/logs/server.log");
  assert.equal(serverLogPath({}), path.join(os.homedir(), ".gantry", "logs", "server.log"));
  assert.equal(historyPath({ GANTRY_MODELS: "/data/gantry/models" }), "/data/gantry/history");
  assert.equal(historyPath({}), path.join(os.homedir(), ".gantry", "history"));
  // The image's store is the /models volume; `/` is read-only there, so the volume holds the logs.
  assert.equal(serverLogPath({ GANTRY_MODELS: "/models" }), "/models/logs/server.log");
  assert.equal(historyPath({ GANTRY_MODELS: "/models/" }), "/models/history");
});
