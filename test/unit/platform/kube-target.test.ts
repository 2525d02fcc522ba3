// Which cluster, context and org the platform commands use (as kubectl decides), and the sentences API errors become.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { ApiException } from "@kubernetes/client-node";
import { connect, kubeErrorMessage, PlatformError } from "../../../server/platform/kube-target.ts";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-kube-"));
after(() => fs.rmSync(dir, { recursive: true, force: true }));
const kubeconfig = path.join(dir, "config");
fs.writeFileSync(
  kubeconfig,
  `apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: a
  cluster: { server: "https://127.0.0.1:6443" }
- name: b
  cluster: { server: "https://10.0.0.1:6443" }
users:
- name: u
  user: { token: t }
contexts:
- name: dev
  context: { cluster: a, user: u, namespace: team-dev }
- name: prod
  context: { cluster: b, user: u }
`,
);

test("context: flag, else config file, else current; org: flag, else config file, else the context's namespace", () => {
  const env = {};
  const current = connect({ kubeconfig }, {}, env);
  assert.deepEqual([current.context, current.org, current.server], ["dev", "team-dev", "https://127.0.0.1:6443"]);
  assert.deepEqual(
    [connect({ kubeconfig }, { context: "prod" }, env).context, connect({ kubeconfig }, { context: "prod" }, env).org],
    ["prod", "default"],
  );
  const flagged = connect({ kubeconfig, context: "dev", org: "acme" }, { context: "prod", org: "other" }, env);
  assert.deepEqual([flagged.context, flagged.org], ["dev", "acme"]);
  assert.equal(connect({ kubeconfig }, { org: "other" }, env).org, "other");
  assert.equal(connect({}, { kubeconfig }, env).context, "dev", "the config file's kubeconfig");
  assert.equal(connect({}, {}, { KUBECONFIG: kubeconfig }).context, "dev", "KUBECONFIG");
});

test("an unknown context lists the kubeconfig's; a bad org or a missing kubeconfig is a clear error", () => {
  assert.throws(() => connect({ kubeconfig, context: "staging" }, {}, {}), {
    message: 'no context "staging" in the kubeconfig (it has: dev, prod)',
  });
  assert.throws(() => connect({ kubeconfig, org: "Acme" }, {}, {}), /org "Acme" is not a DNS label/);
  assert.throws(
    () => connect({ kubeconfig: path.join(dir, "nope") }, {}, {}),
    (e: unknown) => e instanceof PlatformError && /cannot read the kubeconfig/.test(e.message),
  );
});

test("API errors read as sentences: no CRD, no namespace, forbidden, refused by validation, unreachable", () => {
  const target = connect({ kubeconfig }, {}, {});
  const status = (code: number, body: object) => new ApiException(code, "", JSON.stringify(body), {});
  const namespaceGone = {
    reason: "NotFound",
    message: 'namespaces "acme" not found',
    details: { name: "acme", kind: "namespaces" },
  };
  const cases: [unknown, string | RegExp][] = [
    [
      new ApiException(404, "", "404 page not found", {}),
      /^apply: the cluster has no ModelApp resource type \(install Gantry/,
    ],
    [
      status(404, namespaceGone),
      'apply: org "acme" does not exist (an org is a namespace: kubectl create namespace acme)',
    ],
    [status(403, { reason: "Forbidden", message: "User bob cannot patch" }), "apply: forbidden: User bob cannot patch"],
    [
      status(422, { reason: "Invalid", message: "modelVolume is immutable" }),
      "apply: the cluster refused the ModelApp: modelVolume is immutable",
    ],
    [
      Object.assign(new TypeError("fetch failed"), { cause: { code: "ECONNREFUSED" } }),
      "cannot reach the cluster at https://127.0.0.1:6443 (context dev): ECONNREFUSED",
    ],
  ];
  for (const [err, expected] of cases) {
    const message = kubeErrorMessage(err, target, "apply");
    if (typeof expected === "string") assert.equal(message, expected);
    else assert.match(message, expected);
  }
});
