import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { ConfigError } from "../../../server/common/config.ts";
import { loadGatewayConfig, parseGatewayConfig } from "../../../server/gateway/config.ts";

test("defaults", () => {
  const c = parseGatewayConfig({});
  assert.equal(c.listen, "0.0.0.0:8080");
  assert.deepEqual(c.operatorUrls, []);
  assert.equal(c.hold.timeoutSeconds, 600);
  assert.equal(c.limits.orgs && Object.keys(c.limits.orgs).length, 0);
  assert.deepEqual(c.clientTimeouts, { headersSeconds: 60, requestSeconds: 300, keepAliveSeconds: 65 });
  assert.deepEqual(c.clientLimits, { maxHeaderBytes: 16384, connectionsPerAddress: 1024 });
});

test("a section given in part keeps the defaults of the rest (limits as hold and upstream do)", () => {
  const c = parseGatewayConfig({ limits: { requestsPerSecond: 100 }, hold: { timeoutSeconds: 60 } });
  assert.deepEqual(c.limits, { requestsPerSecond: 100, burst: 40, concurrent: 16, orgs: {} });
  assert.equal(c.hold.maxPerApp, 256);
  // Per-org overrides stay partial: what an org does not set is the defaults'.
  assert.deepEqual(parseGatewayConfig({ limits: { orgs: { acme: { concurrent: 4 } } } }).limits.orgs, {
    acme: { concurrent: 4 },
  });
});

test("every invalid key is reported; unknown keys are refused", () => {
  try {
    parseGatewayConfig({ listen: 1, operatorUrls: ["not a url"], hold: { maxPerApp: -1 }, nonsense: true });
    assert.fail("accepted");
  } catch (e) {
    assert.ok(e instanceof ConfigError);
    const text = e.issues.join("\n");
    for (const k of ["listen", "operatorUrls.0", "hold.maxPerApp", "nonsense"])
      assert.match(text, new RegExp(k.replace(".", "\\.")));
  }
});

test("listen addresses are host:port: a bare port, a missing host or a port over 65535 says what to write", () => {
  assert.equal(parseGatewayConfig({ listen: "[::]:8081", metricsListen: "127.0.0.1:0" }).listen, "[::]:8081");
  for (const bad of ["8080", ":8080", "0.0.0.0:99999", "http://0.0.0.0:8080"])
    for (const key of ["listen", "metricsListen"])
      assert.throws(
        () => parseGatewayConfig({ [key]: bad }),
        (e: unknown) =>
          e instanceof ConfigError &&
          e.issues.some((i) => i.includes(key) && i.includes("host:port") && i.includes(bad)),
        `${key}: ${bad}`,
      );
});

test("a YAML file, with flags over it", () => {
  const f = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "gw-config-")), "gateway.yaml");
  fs.writeFileSync(
    f,
    "listen: 127.0.0.1:9000\nlimits: { requestsPerSecond: 5, burst: 5, concurrent: 2, orgs: { acme: { concurrent: 9 } } }\n",
  );
  const c = loadGatewayConfig(f, { listen: "127.0.0.1:9001" });
  assert.equal(c.listen, "127.0.0.1:9001");
  assert.equal(c.limits.orgs.acme?.concurrent, 9);
  assert.throws(() => loadGatewayConfig("/no/such/file"), /cannot read config file/);
});

test("a partial limits block keeps the other limits' defaults (like hold and upstream)", () => {
  const c = parseGatewayConfig({ limits: { requestsPerSecond: 100 } });
  assert.deepEqual([c.limits.requestsPerSecond, c.limits.burst, c.limits.concurrent, c.limits.orgs], [100, 40, 16, {}]);
  // An org override still names only what it overrides.
  const o = parseGatewayConfig({ limits: { concurrent: 4, orgs: { acme: { concurrent: 9 } } } });
  assert.deepEqual(o.limits.orgs.acme, { concurrent: 9 });
});
