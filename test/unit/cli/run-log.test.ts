import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { test } from "node:test";
import { GATEWAY_LOGGER, openRunLog, SERVER_LOGGER, terminalLine } from "../../../server/cli/run-log.ts";

test("the terminal gets one line per request through the gateway, and warnings and errors", () => {
  const request = { name: GATEWAY_LOGGER, level: "info", msg: "request", method: "POST", path: "/v1/chat/completions" };
  assert.equal(terminalLine({ ...request, status: 200, ms: 12.5 }), "POST /v1/chat/completions 200 (12.5 ms)");
  assert.equal(
    terminalLine({ ...request, status: 200, ms: 80, promptTokens: 11, completionTokens: 3 }),
    "POST /v1/chat/completions 200 (80 ms, 11 + 3 tokens)",
  );
  assert.equal(
    terminalLine({ ...request, msg: "client closed the connection", status: 499, ms: 5 }),
    "POST /v1/chat/completions 499 (client closed the connection) (5 ms)",
  );
  assert.equal(
    terminalLine({ name: SERVER_LOGGER, level: "info", msg: "request", method: "GET", path: "/x" }),
    undefined,
  );
  assert.equal(terminalLine({ name: SERVER_LOGGER, level: "info", msg: "model ready" }), undefined);
  assert.equal(
    terminalLine({ name: SERVER_LOGGER, level: "error", msg: "loading failed", err: { message: "no memory" } }),
    "error: loading failed: no memory",
  );
});

test("every log line goes to the file (no keys, no prompts); the terminal only the short lines", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-run-log-"));
  let terminal = "";
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      terminal += chunk.toString();
      done();
    },
  });
  const log = openRunLog(path.join(dir, "logs", "run-chat.log"), "info", sink);
  log.gateway.info({ method: "GET", path: "/v1/models", status: 200, ms: 3, key: "gk_secret" }, "request");
  log.server.info({ body: { prompt: "my prompt" } }, "model ready");
  log.server.debug("not at info");
  await log.close();
  const lines = fs.readFileSync(log.file, "utf8").trim().split("\n");
  assert.equal(lines.length, 2);
  assert.doesNotMatch(lines.join("\n"), /gk_secret|my prompt/);
  assert.equal(terminal, "GET /v1/models 200 (3 ms)\n");
  fs.rmSync(dir, { recursive: true });
});
