import assert from "node:assert/strict";
import { test } from "node:test";
import {
  inServiceCidr,
  kubernetesServiceIp,
  pickServiceCidr,
} from "../../../../test/cluster/runtime/service-network.ts";

test("a test cluster's Service range holds a 2,000-app fleet: a /20 of 10.96.0.0/16 from a per-cluster start", () => {
  const cidr = pickServiceCidr("00003", []);
  assert.equal(cidr, "10.96.48.0/20");
  assert.equal(kubernetesServiceIp(cidr), "10.96.48.1");
  assert.ok(inServiceCidr(cidr, "10.96.48.1") && inServiceCidr(cidr, "10.96.63.254"));
  assert.ok(!inServiceCidr(cidr, "10.96.64.1") && !inServiceCidr(cidr, "10.96.47.255"));
});

test("a block with any loopback address (another running cluster's, /24 or /20) is skipped; all taken is an error", () => {
  assert.equal(pickServiceCidr("00003", [50]), "10.96.64.0/20");
  assert.equal(pickServiceCidr("0000f", [255]), "10.96.0.0/20");
  assert.throws(
    () =>
      pickServiceCidr(
        "00000",
        Array.from({ length: 16 }, (_, k) => k * 16 + 1),
      ),
    /no free Service range/,
  );
});
