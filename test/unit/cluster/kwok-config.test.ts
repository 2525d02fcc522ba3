import assert from "node:assert/strict";
import { test } from "node:test";
import YAML from "yaml";
import { excludeProcessRuntimePods, kwokConfigExcludingProcessRuntime } from "../../../test/cluster/kwok-config.ts";

const source = `apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options: {}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: node-initialize}
spec:
  resourceRef: {apiGroup: v1, kind: Node}
  selector:
    matchExpressions: [{key: .status.phase, operator: DoesNotExist}]
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: pod-ready}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions: [{key: .metadata.deletionTimestamp, operator: DoesNotExist}]
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: {name: pod-delete}
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
`;

test("pod stages gain a selector that skips process-runtime pods; node stages are untouched", () => {
  const docs = YAML.parseAllDocuments(kwokConfigExcludingProcessRuntime(source)).map((d) => d.toJS());
  assert.equal(docs.length, 4);
  assert.deepEqual(docs[1].spec.selector.matchExpressions, [{ key: ".status.phase", operator: "DoesNotExist" }]);
  assert.deepEqual(docs[2].spec.selector.matchExpressions, [
    { key: ".metadata.deletionTimestamp", operator: "DoesNotExist" },
    excludeProcessRuntimePods,
  ]);
  assert.deepEqual(docs[3].spec.selector.matchExpressions, [excludeProcessRuntimePods]);
});

test("the KwokConfiguration gets non-zero worker counts", () => {
  const [config] = YAML.parseAllDocuments(kwokConfigExcludingProcessRuntime(source)).map((d) => d.toJS());
  assert.equal(config.kind, "KwokConfiguration");
  assert.ok(config.options.podPlayStageParallelism > 0);
  assert.ok(config.options.nodeLeaseParallelism > 0);
});
