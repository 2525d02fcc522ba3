import assert from "node:assert/strict";
import { test } from "node:test";
import { createLogger, silentLogger } from "../../../server/common/logger.ts";
import { AppError } from "../../../server/common/errors.ts";
import { LoadReportAuth, serviceAccountUser } from "../../../operator/load-auth.ts";

const reviewer = (users: Record<string, string>) => {
  const calls: string[] = [];
  return {
    calls,
    async review(token: string) {
      calls.push(token);
      if (token === "boom") throw new Error("apiserver down");
      return users[token];
    },
  };
};

const status = async (p: Promise<void>): Promise<number> =>
  p.then(
    () => 204,
    (e: unknown) => (e instanceof AppError ? e.status : 0),
  );

test("a load report needs the bearer token of an allowed ServiceAccount", async () => {
  const r = reviewer({
    gw: "system:serviceaccount:gantry-system:gantry-gateway",
    pod: "system:serviceaccount:apps:default",
  });
  const auth = new LoadReportAuth(r, ["gantry-system/gantry-gateway"], silentLogger);
  assert.equal(await status(auth.check(undefined)), 401);
  assert.equal(await status(auth.check("Basic Zm9v")), 401);
  assert.equal(await status(auth.check("Bearer unknown")), 401);
  assert.equal(await status(auth.check("Bearer pod")), 403);
  assert.equal(await status(auth.check("Bearer gw")), 204);
  assert.equal(await status(auth.check("bearer gw")), 204);
  assert.equal(await status(auth.check("Bearer boom")), 502, "a failed review is not a yes");
});

test("reviews are cached for a minute per token", async () => {
  const r = reviewer({ gw: "system:serviceaccount:gantry-system:gantry-gateway" });
  const auth = new LoadReportAuth(r, ["gantry-system/gantry-gateway"], silentLogger);
  await auth.check("Bearer gw", 0);
  await auth.check("Bearer gw", 59_000);
  assert.equal(r.calls.length, 1);
  await auth.check("Bearer gw", 61_000);
  assert.equal(r.calls.length, 2);
  assert.equal(serviceAccountUser("ns/name"), "system:serviceaccount:ns:name");
});

test("while tokens cannot be reviewed, a token reviewed before keeps its answer; warnings only at the first failure", async () => {
  let down = false;
  const calls: string[] = [];
  const r = {
    async review(token: string) {
      calls.push(token);
      if (down) throw new Error("fetch failed");
      return token === "gw" ? "system:serviceaccount:gantry-system:gantry-gateway" : undefined;
    },
  };
  const lines: Array<{ level: string; msg: string }> = [];
  const logger = createLogger({
    level: "debug",
    destination: { write: (s: string) => void lines.push(JSON.parse(s) as (typeof lines)[number]) },
  });
  const auth = new LoadReportAuth(r, ["gantry-system/gantry-gateway"], logger);
  assert.equal(await status(auth.check("Bearer gw", 0)), 204);
  assert.equal(await status(auth.check("Bearer forged", 0)), 401);
  down = true;
  for (let t = 61_000; t < 200_000; t += 1_000) {
    assert.equal(await status(auth.check("Bearer gw", t)), 204, `at ${t}`);
    assert.equal(await status(auth.check("Bearer forged", t)), 401, "a token refused before stays refused");
  }
  assert.equal(await status(auth.check("Bearer new", 200_000)), 502, "a token never reviewed is not a yes");
  assert.ok(calls.length < 70, `asked again every few seconds, not per report (${calls.length})`);
  const failed = lines.filter((l) => l.msg === "TokenReview failed");
  assert.equal(failed.filter((l) => l.level === "warn").length, 1);
  down = false;
  assert.equal(await status(auth.check("Bearer gw", 300_000)), 204);
  assert.ok(lines.some((l) => l.msg === "TokenReview works again"));
});
