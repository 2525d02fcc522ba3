// The operator's configuration: one zod schema, read once at start from a YAML/JSON file (the Helm chart renders it)
// with a few environment overrides. Resource profiles map a name used in ModelApps to GPU resources, scheduling and an
// image variant (KubeAI's resource profiles); the defaults `cpu` and `nvidia-gpu` can be overridden or extended.
import fs from "node:fs";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { ConfigError } from "../server/common/config.ts";
import { DNS_LABEL } from "../server/common/kube-names.ts";
import { ListenAddressSchema } from "../server/common/host-port.ts";
import { VERSION } from "../server/common/version.ts";
import type { OperatorEnv } from "./env.ts";
import { ResourceProfileSchema, type ResourceProfile } from "./render/config.ts";

export const GPU_TOLERATION = { key: "nvidia.com/gpu", operator: "Exists", effect: "NoSchedule" } as const;

export const DEFAULT_PROFILES: Record<string, z.input<typeof ResourceProfileSchema>> = {
  cpu: {},
  "nvidia-gpu": { gpuResource: "nvidia.com/gpu", tolerations: [GPU_TOLERATION], gpuBackend: "cuda" },
};

export const OperatorConfigSchema = z
  .object({
    image: z
      .string()
      .min(1)
      .default(`gantry:${VERSION}`)
      .describe("Image of the server pods (the one `npm run image` builds)."),
    imagePullPolicy: z.enum(["Always", "IfNotPresent", "Never"]).optional(),
    gatewayUrl: z
      .string()
      .url()
      .default("http://gantry-gateway.gantry-system.svc")
      .describe(
        "The gateway's base URL as users reach it; an app's URL is <gatewayUrl>/<namespace>/<name>. The default is the gateway Service the Helm chart creates for release gantry in namespace gantry-system.",
      ),
    hubUrl: z
      .string()
      .url()
      .optional()
      .describe("GANTRY_HUB_URL for the pods' model pulls (the public hub when unset)."),
    resourceProfiles: z
      .record(z.string().regex(DNS_LABEL), ResourceProfileSchema)
      .default({})
      .describe(
        "Resource profiles added to the defaults cpu and nvidia-gpu; a profile of the same name replaces a default whole.",
      ),
    podLabels: z.record(z.string(), z.string()).default({}).describe("Extra labels on every server pod."),
    podAnnotations: z.record(z.string(), z.string()).default({}).describe("Extra annotations on every server pod."),
    serverPort: z.int().min(1).max(65535).default(11434),
    watchNamespace: z
      .string()
      .max(63)
      .regex(DNS_LABEL, "must be a namespace name (a DNS label)")
      .optional()
      .describe("Reconcile only this namespace (all namespaces when unset)."),
    workers: z.int().min(1).max(64).default(8).describe("Reconciles running at once (never two for the same app)."),
    listen: ListenAddressSchema.default("0.0.0.0:8080").describe(
      "Address of /healthz, /readyz, /metrics and the load-report API.",
    ),
    leaderElection: z
      .object({
        enabled: z
          .boolean()
          .optional()
          .describe(
            "Campaign for a Lease, so that of several replicas exactly one reconciles. Unset: on in a pod, off outside one (an operator run by hand next to a cluster).",
          ),
        namespace: z
          .string()
          .min(1)
          .optional()
          .describe(
            "Namespace of the Lease (it must exist). Unset: the pod's own namespace, or the kubeconfig context's namespace outside a pod.",
          ),
        name: z.string().default("gantry-operator"),
        leaseDurationSeconds: z.int().min(2).default(15),
        renewDeadlineSeconds: z.int().min(1).default(10),
        retryPeriodSeconds: z.int().min(1).default(2),
      })
      .default({ name: "gantry-operator", leaseDurationSeconds: 15, renewDeadlineSeconds: 10, retryPeriodSeconds: 2 }),
    loadReports: z
      .object({
        serviceAccounts: z
          .array(z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?\/[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/))
          .default(["gantry-system/gantry-gateway"])
          .describe(
            "ServiceAccounts (namespace/name) whose tokens may post load reports; the gateways run as one of them.",
          ),
      })
      .default({ serviceAccounts: ["gantry-system/gantry-gateway"] })
      .describe("Who may post load reports to POST /v1/load (bearer tokens checked with a TokenReview)."),
    autoscaler: z
      .object({
        intervalSeconds: z.number().positive().default(5).describe("How often replica counts are recomputed."),
        reportTtlSeconds: z.number().positive().default(30).describe("A gateway's load report counts for this long."),
      })
      .default({ intervalSeconds: 5, reportTtlSeconds: 30 }),
  })
  .strict();
export type OperatorConfig = z.infer<typeof OperatorConfigSchema> & { profiles: Record<string, ResourceProfile> };
export type { ResourceProfile };

/** Validates a config object (from a file) and merges the profiles over the defaults. */
export function parseOperatorConfig(input: unknown): OperatorConfig {
  const r = OperatorConfigSchema.safeParse(input ?? {});
  if (!r.success) throw new ConfigError(r.error.issues.map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`));
  const profiles: Record<string, ResourceProfile> = {};
  for (const [name, p] of Object.entries({ ...DEFAULT_PROFILES, ...r.data.resourceProfiles }))
    profiles[name] = ResourceProfileSchema.parse(p);
  return { ...r.data, profiles };
}

/** Reads the config file (YAML or JSON) when one is named; environment overrides (operator/env.ts) win over it. */
export function loadOperatorConfig(
  file: string | undefined,
  env: Pick<OperatorEnv, "GANTRY_OPERATOR_LISTEN" | "GANTRY_OPERATOR_NAMESPACE"> = {},
): OperatorConfig {
  let input: Record<string, unknown> = {};
  if (file) {
    let text: string;
    try {
      text = fs.readFileSync(file, "utf8");
    } catch (e) {
      throw new ConfigError([`cannot read config file ${file}: ${(e as Error).message}`]);
    }
    try {
      input = (parseYaml(text) ?? {}) as Record<string, unknown>;
    } catch (e) {
      throw new ConfigError([`${file}: ${(e as Error).message}`]);
    }
  }
  const overrides: Record<string, unknown> = {};
  if (env.GANTRY_OPERATOR_LISTEN) overrides.listen = env.GANTRY_OPERATOR_LISTEN;
  if (env.GANTRY_OPERATOR_NAMESPACE) overrides.watchNamespace = env.GANTRY_OPERATOR_NAMESPACE;
  return parseOperatorConfig({ ...input, ...overrides });
}

/** Where the operator runs, as far as leader election cares. */
export interface Placement {
  /** In a Kubernetes pod (its service account mounted, KUBERNETES_SERVICE_HOST set). */
  inPod: boolean;
  /** The pod's namespace (in a pod). */
  podNamespace?: string | undefined;
  /** The namespace of the kubeconfig's current context, if it names one. */
  contextNamespace?: string | undefined;
}

/** The Lease an operator campaigns for. */
export interface LeaseSettings {
  namespace: string;
  name: string;
  leaseDurationSeconds: number;
  renewDeadlineSeconds: number;
  retryPeriodSeconds: number;
}

/** Leader election as the operator runs it: off (and why), or on with the Lease's namespace settled. */
export type LeaderElectionSettings = { enabled: false; reason: string } | { enabled: true; lease: LeaseSettings };

/**
 * Settles the config's unset leader-election fields: on in a pod (replicas of a Deployment), off outside one, where an
 * operator is one process started by hand and a Lease would need a namespace the cluster may not have; the Lease lives
 * in the pod's namespace, or outside a pod in the kubeconfig context's ("default" when it names none). Pure.
 */
export function resolveLeaderElection(le: OperatorConfig["leaderElection"], where: Placement): LeaderElectionSettings {
  if (!(le.enabled ?? where.inPod))
    return {
      enabled: false,
      reason:
        le.enabled === false
          ? "leaderElection.enabled is false"
          : "not running in a pod (set leaderElection.enabled: true to run several replicas)",
    };
  return {
    enabled: true,
    lease: {
      namespace: le.namespace ?? (where.inPod ? where.podNamespace : where.contextNamespace) ?? "default",
      name: le.name,
      leaseDurationSeconds: le.leaseDurationSeconds,
      renewDeadlineSeconds: le.renewDeadlineSeconds,
      retryPeriodSeconds: le.retryPeriodSeconds,
    },
  };
}
