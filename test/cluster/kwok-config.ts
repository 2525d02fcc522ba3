// kwok's configuration for the test control plane: the Stages kwokctl uses by default, except that Pod stages never
// touch pods that opted into the process runtime (those get a real, process-backed status instead of a faked one).
import YAML from "yaml";

export const PROCESS_RUNTIME_LABEL = "gantry.dev/process-runtime";

interface StageDoc {
  kind?: string;
  options?: Record<string, unknown>;
  spec?: { resourceRef?: { kind?: string }; selector?: { matchExpressions?: unknown[] } };
}

/**
 * kwok selector semantics: `NotIn` matches when the jq key is absent, so unlabelled pods keep kwok's fake lifecycle.
 */
export const excludeProcessRuntimePods = {
  key: `.metadata.labels["${PROCESS_RUNTIME_LABEL}"]`,
  operator: "NotIn",
  values: ["true"],
};

/**
 * The standalone kwok binary applies no defaults to a config file's options ("playStageParallelism must be greater
 * than 0"), so the worker counts kwokctl would default are set here.
 */
export const kwokOptions = {
  podPlayStageParallelism: 4,
  nodePlayStageParallelism: 4,
  nodeLeaseParallelism: 4,
  podsOnNodeSyncParallelism: 1,
  enableDebuggingHandlers: false,
};

/** Rewrites a multi-document kwok config (KwokConfiguration + Stages). Pure. */
export function kwokConfigExcludingProcessRuntime(source: string): string {
  return YAML.parseAllDocuments(source)
    .map((d) => {
      const doc = d.toJS() as StageDoc | null;
      if (doc?.kind === "KwokConfiguration") doc.options = { ...kwokOptions, ...doc.options };
      if (doc?.kind === "Stage" && doc.spec?.resourceRef?.kind === "Pod") {
        doc.spec.selector ??= {};
        doc.spec.selector.matchExpressions = [...(doc.spec.selector.matchExpressions ?? []), excludeProcessRuntimePods];
      }
      return YAML.stringify(doc);
    })
    .join("---\n");
}
