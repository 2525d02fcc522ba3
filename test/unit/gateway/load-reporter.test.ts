import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { silentLogger } from "../../../server/common/logger.ts";
import { NO_OPERATOR, OperatorLoadReporter, refusedReports } from "../../../server/gateway/kube/load-reporter.ts";

test("why refused reports wake nothing names the cause and the fix", () => {
  assert.match(
    refusedReports(401, undefined),
    /\(401\): no token was sent.*--operator-token-file.*kubectl create token gantry-gateway/,
  );
  assert.match(refusedReports(401, "/t/token"), /the token in \/t\/token is not one the API server knows/);
  assert.match(refusedReports(403, "/t/token"), /not in the operator's loadReports\.serviceAccounts/);
  assert.match(NO_OPERATOR, /operatorUrls is empty.*--operator-url/);
});

test("cannotWake follows the operator's answers: none configured, refused, accepted again", async () => {
  assert.equal(
    new OperatorLoadReporter({ gateway: "g", urls: [], intervalMs: 1000, snapshot: () => [], logger: silentLogger })
      .cannotWake,
    NO_OPERATOR,
  );
  let status = 401;
  const operator = http.createServer((req, res) => {
    req.resume();
    res.writeHead(status).end();
  });
  await new Promise<void>((r) => operator.listen(0, "127.0.0.1", r));
  try {
    const url = `http://127.0.0.1:${(operator.address() as AddressInfo).port}`;
    const r = new OperatorLoadReporter({
      gateway: "g",
      urls: [url],
      intervalMs: 1000,
      snapshot: () => [],
      logger: silentLogger,
    });
    let changes = 0;
    r.onWakeChange(() => changes++);
    assert.equal(r.cannotWake, undefined, "not known before an answer");
    await r.send();
    assert.match(r.cannotWake ?? "", /refuses its load reports \(401\)/);
    status = 200;
    await r.send();
    assert.equal(r.cannotWake, undefined);
    assert.equal(changes, 2);
  } finally {
    operator.close();
  }
});
