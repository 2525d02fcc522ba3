// ModelApp (gantry.dev/v1alpha1): the single source of truth for the resource. The TypeScript types, the runtime
// validation the operator applies, and crds/modelapps.gantry.dev.yaml (gen-crds.ts) all derive from these schemas.
// CEL rules and Kubernetes schema extensions ride along as zod metadata, so they live next to the fields they guard.
//
// org_id = the namespace, app_id = the name. A ModelApp becomes a Deployment of `gantry serve` pods (an init container
// pulls the model into a named model volume first), a Service, the volume's PersistentVolumeClaim when missing, and a
// ConfigMap holding the Modelfile overrides when there are any.
import { z } from "zod";
import { DNS_LABEL } from "../../../server/common/kube-names.ts";
import { FLASH_ATTENTION, KV_CACHE_TYPES, kvCacheProblem } from "../../../server/common/kv-cache-settings.ts";

const QUANTIZED_CACHE_NEEDS_FA =
  "a quantized kvCacheType (q8_0, q4_0) needs flashAttention auto or on; with off only f16 can run";

export const GROUP = "gantry.dev";
export const VERSION = "v1alpha1";
export const API_VERSION = `${GROUP}/${VERSION}`;
export const KIND = "ModelApp";
export const PLURAL = "modelapps";
export const SINGULAR = "modelapp";
export const SHORT_NAMES = ["mapp"];
export const CRD_NAME = `${PLURAL}.${GROUP}`;

/**
 * Longest app name: derived object names (`<name>-modelfile`) and label values must fit 63 characters, and the
 * Service named after the app must be a DNS-1035 label.
 */
export const MAX_NAME_LENGTH = 53;

const QUANTITY =
  /^\+?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$/;
/** A Go-style duration ("30s", "5m", "1h30m"), a number of seconds, or a negative value (forever, where allowed). */
export const DURATION = /^-?(\d+(\.\d+)?|(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+)$/;

const dnsLabel = (what: string) => z.string().min(1).max(63).regex(DNS_LABEL).describe(what);

/**
 * A non-negative resource quantity ("500m", "2", "16Gi"), written as a string or an integer, as Kubernetes accepts it.
 */
export const QuantitySchema = z
  .union([z.int().nonnegative(), z.string().regex(QUANTITY)])
  .meta({ "x-kubernetes-int-or-string": true });
export type Quantity = z.infer<typeof QuantitySchema>;

const durationField = (what: string) => z.string().regex(DURATION).describe(what);

export const AUTH_MODES = ["private", "shared", "public"] as const;
export type AuthMode = (typeof AUTH_MODES)[number];

export const ACCESS_MODES = ["ReadWriteOnce", "ReadWriteOncePod", "ReadWriteMany", "ReadOnlyMany"] as const;

/** How a spec change replaces running replicas (fal's deploy strategies). */
export const ROLLOUT_STRATEGIES = ["recreate", "rolling"] as const;
export const LOAD_BALANCING_STRATEGIES = ["LeastLoad", "PrefixHash"] as const;
export type RolloutStrategy = (typeof ROLLOUT_STRATEGIES)[number];

const EnvVarSchema = z
  .object({
    name: z.string().min(1).max(256).describe("Variable name."),
    value: z.string().optional().describe("Literal value."),
    valueFrom: z
      .object({
        secretKeyRef: z
          .object({ name: z.string().min(1), key: z.string().min(1), optional: z.boolean().optional() })
          .optional()
          .describe("A key of a Secret in the app's namespace (e.g. HF_TOKEN for private hub repos)."),
        configMapKeyRef: z
          .object({ name: z.string().min(1), key: z.string().min(1), optional: z.boolean().optional() })
          .optional()
          .describe("A key of a ConfigMap in the app's namespace."),
      })
      .optional()
      .describe("Where the value comes from, instead of value."),
  })
  .describe("An environment variable of the server container.");

export const TolerationSchema = z
  .object({
    key: z.string().optional(),
    operator: z.enum(["Exists", "Equal"]).optional(),
    value: z.string().optional(),
    effect: z.enum(["NoSchedule", "PreferNoSchedule", "NoExecute"]).optional(),
    tolerationSeconds: z.int().optional(),
  })
  .describe("A pod toleration (core/v1 Toleration).");
export type Toleration = z.infer<typeof TolerationSchema>;

export const ModelAppSpecSchema = z
  .object({
    model: z
      .string()
      .min(1)
      .max(512)
      .describe(
        "The model to serve: hf.co/<org>/<repo>[:<quant>] (pulled into the model volume), or the name of a model already in the volume.",
      ),
    modelfile: z
      .string()
      .max(65536)
      .optional()
      .describe(
        "Modelfile overrides applied on top of model: TEMPLATE, SYSTEM, PARAMETER, MESSAGE, LICENSE lines (no FROM).",
      ),
    auth: z
      .enum(AUTH_MODES)
      .default("private")
      .describe(
        "Who may call the app through the gateway: private (a key of this org), shared (any valid key), public (no key).",
      ),
    resources: z
      .object({
        profile: dnsLabel(
          "A resource profile of the operator's configuration (e.g. cpu, nvidia-gpu, nvidia-l4).",
        ).default("cpu"),
        gpus: z
          .int()
          .min(0)
          .max(64)
          .optional()
          .describe("GPUs per replica; defaults to 1 on GPU profiles and 0 on CPU profiles."),
        cpu: QuantitySchema.optional().describe('CPU request per replica (e.g. "2" or 500m).'),
        memory: QuantitySchema.optional().describe("Memory request and limit per replica (e.g. 8Gi)."),
      })
      .default({ profile: "cpu" })
      .describe("What each replica runs on."),
    modelVolume: z
      .object({
        name: dnsLabel(
          "Name of the PersistentVolumeClaim holding the model store; apps of a namespace that name the same volume share it.",
        ).default("models"),
        size: QuantitySchema.default("20Gi").describe("Requested size when the operator creates the claim."),
        storageClassName: z
          .string()
          .min(1)
          .max(253)
          .optional()
          .describe("Storage class of the claim (the cluster default when unset)."),
        accessMode: z.enum(ACCESS_MODES).default("ReadWriteOnce").describe("Access mode of the claim."),
      })
      .default({ name: "models", size: "20Gi", accessMode: "ReadWriteOnce" })
      .meta({ "x-kubernetes-validations": [{ rule: "self == oldSelf", message: "modelVolume is immutable" }] })
      .describe(
        "The named model volume: created when missing, reused across pod restarts so a model is downloaded once.",
      ),
    server: z
      .object({
        parallel: z
          .int()
          .min(1)
          .max(64)
          .default(4)
          .describe("Requests each replica decodes in parallel (GANTRY_NUM_PARALLEL)."),
        contextLength: z
          .int()
          .min(256)
          .max(1048576)
          .optional()
          .describe(
            "Context tokens per request (GANTRY_CONTEXT_LENGTH); unset = the server's default: by the memory free to the replica (its limit counts), as Ollama's tiers (4096 under 24 GiB, 32768 up to 48 GiB, 262144 above), capped by the model's trained length.",
          ),
        keepAlive: durationField(
          "How long the model stays loaded when idle; negative keeps it loaded for the pod's life.",
        ).default("-1"),
        kvCacheType: z
          .enum(KV_CACHE_TYPES)
          .default("f16")
          .describe(
            "Element type of the KV cache (GANTRY_KV_CACHE_TYPE): q8_0 and q4_0 take about half and a quarter of f16's memory; they need flash attention.",
          ),
        flashAttention: z
          .enum(FLASH_ATTENTION)
          .default("auto")
          .describe("Flash attention (GANTRY_FLASH_ATTENTION): auto = where the backend runs it for the model."),
        draftModel: z
          .string()
          .trim()
          .min(1)
          .optional()
          .describe(
            "A draft model for speculative decoding, referenced as spec.model is (same vocabulary as the model): " +
              "pulled beside the model, which drafts with it (the Modelfile's PARAMETER draft_model). Drafting by " +
              "prompt lookup needs no second model: PARAMETER draft_ngram <n> in spec.modelfile.",
          ),
        promptCacheRam: z
          .union([z.int().nonnegative(), z.string().regex(/^\d+(?:\.\d+)?(?:Ki|Mi|Gi)?$/)])
          .optional()
          .meta({ "x-kubernetes-int-or-string": true })
          .describe(
            "Host memory of each replica for the KV states of prompts evicted from its sequences, restored when a later request starts with one (GANTRY_PROMPT_CACHE_RAM: bytes, or Ki/Mi/Gi; 0 = off; unset = a quarter of the memory available at start, at most 8Gi). It counts toward resources.memory.",
          ),
      })
      .refine((s) => kvCacheProblem(s.kvCacheType, s.flashAttention) === undefined, {
        message: QUANTIZED_CACHE_NEEDS_FA,
        path: ["kvCacheType"],
      })
      .meta({
        "x-kubernetes-validations": [
          { rule: "self.flashAttention != 'off' || self.kvCacheType == 'f16'", message: QUANTIZED_CACHE_NEEDS_FA },
        ],
      })
      .default({ parallel: 4, keepAlive: "-1", kvCacheType: "f16", flashAttention: "auto" })
      .describe("Model server settings."),
    scaling: z
      .object({
        minReplicas: z
          .int()
          .min(0)
          .max(1000)
          .default(0)
          .describe("Replicas kept even when idle; 0 scales the app to zero."),
        maxReplicas: z.int().min(1).max(1000).default(1).describe("Upper bound on replicas."),
        targetConcurrency: z
          .int()
          .min(1)
          .max(10000)
          .optional()
          .describe("In-flight requests per replica the autoscaler aims for; defaults to server.parallel."),
        scaleDownDelay: durationField(
          "How long load must stay lower before replicas are removed (and before scaling to zero).",
        ).default("5m"),
      })
      .default({ minReplicas: 0, maxReplicas: 1, scaleDownDelay: "5m" })
      .meta({
        "x-kubernetes-validations": [
          {
            rule: "self.minReplicas <= self.maxReplicas",
            message: "scaling.minReplicas must not exceed scaling.maxReplicas",
          },
        ],
      })
      .describe("Autoscaling between minReplicas and maxReplicas from the in-flight requests the gateway reports."),
    loadBalancing: z
      .object({
        strategy: z
          .enum(LOAD_BALANCING_STRATEGIES)
          .default("LeastLoad")
          .describe(
            "How the gateway picks a replica: LeastLoad (the one with the fewest in-flight requests) or PrefixHash (consistent hashing with bounded loads on the request's prefix, so a conversation's turns reach the replica that holds its KV cache).",
          ),
        prefixHash: z
          .object({
            meanLoadFactor: z
              .int()
              .min(100)
              .max(10000)
              .default(125)
              .describe(
                "A replica over this percentage of the mean in-flight load passes the request to the next replica on the ring.",
              ),
            replication: z
              .int()
              .min(1)
              .max(1000)
              .default(256)
              .describe("Points per replica on the hash ring (more spread conversations more evenly)."),
            prefixCharLength: z
              .int()
              .min(1)
              .max(100000)
              .default(100)
              .describe(
                "Characters hashed of a request's system text, and of its first user message (or a completion's prompt): every turn of a conversation hashes alike.",
              ),
          })
          .default({ meanLoadFactor: 125, replication: 256, prefixCharLength: 100 })
          .describe("PrefixHash's settings (KubeAI's names and defaults)."),
      })
      .default({ strategy: "LeastLoad", prefixHash: { meanLoadFactor: 125, replication: 256, prefixCharLength: 100 } })
      .describe("How the gateway spreads requests over the app's ready replicas."),
    strategy: z
      .enum(ROLLOUT_STRATEGIES)
      .optional()
      .describe(
        "How a spec change replaces running replicas: recreate (old pods stop, then new ones start) or rolling (a new pod is ready before an old one stops; its volume must be mountable beside the old pod's: ReadWriteMany, or one node). Defaults to rolling for ReadWriteMany and ReadOnlyMany volumes, recreate otherwise.",
      ),
    replicas: z
      .int()
      .min(0)
      .max(1000)
      .optional()
      .describe(
        "Desired replicas, written by the autoscaler through the scale subresource (kubectl scale works too); kept within the scaling bounds.",
      ),
    image: z
      .string()
      .min(1)
      .max(1024)
      .optional()
      .describe("Server image; defaults to the operator's image for the profile."),
    env: z.array(EnvVarSchema).max(64).optional().describe("Extra environment of the server container."),
    nodeSelector: z
      .record(z.string(), z.string())
      .optional()
      .describe("Extra node selector, merged over the profile's."),
    tolerations: z.array(TolerationSchema).max(32).optional().describe("Extra tolerations, added to the profile's."),
  })
  .describe("What to serve and how.");
export type ModelAppSpec = z.infer<typeof ModelAppSpecSchema>;
/** The spec as written by a user (defaults not yet applied). */
export type ModelAppSpecInput = z.input<typeof ModelAppSpecSchema>;

export const CONDITION_STATUSES = ["True", "False", "Unknown"] as const;

export const ConditionSchema = z
  .object({
    type: z.string().min(1).max(316).describe("Condition type: Ready, ModelCached or Scheduled."),
    status: z.enum(CONDITION_STATUSES),
    observedGeneration: z.int().min(0).optional().describe("The metadata.generation this condition describes."),
    lastTransitionTime: z.iso.datetime({ offset: true }).describe("When status last changed (RFC 3339)."),
    reason: z
      .string()
      .min(1)
      .max(1024)
      .regex(/^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/)
      .describe("CamelCase reason."),
    message: z.string().max(32768).describe("Human-readable detail."),
  })
  .describe("A metav1.Condition.");
export type Condition = z.infer<typeof ConditionSchema>;

export const ModelAppStatusSchema = z
  .object({
    observedGeneration: z.int().min(0).optional().describe("The metadata.generation the operator last reconciled."),
    conditions: z
      .array(ConditionSchema)
      .optional()
      .meta({ "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"] }),
    replicas: z.int().min(0).optional().describe("Replicas the app runs now."),
    readyReplicas: z.int().min(0).optional().describe("Replicas ready to serve."),
    selector: z.string().optional().describe("Label selector of the app's pods (for the scale subresource)."),
    url: z.string().optional().describe("Where the app is reached through the gateway: {base_url}/<org_id>/<app_id>."),
    model: z.string().optional().describe("Digest of the model being served, once it is cached in the volume."),
    modelRef: z.string().optional().describe("The spec.model that ModelCached and model describe."),
  })
  .describe("What the operator observed.");
export type ModelAppStatus = z.infer<typeof ModelAppStatusSchema>;

export const ModelAppSchema = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal(KIND),
  metadata: z
    .object({
      name: z.string(),
      namespace: z.string().optional(),
      uid: z.string().optional(),
      generation: z.int().optional(),
      resourceVersion: z.string().optional(),
      creationTimestamp: z.union([z.string(), z.date()]).optional(),
      deletionTimestamp: z.union([z.string(), z.date()]).optional(),
      labels: z.record(z.string(), z.string()).optional(),
      annotations: z.record(z.string(), z.string()).optional(),
    })
    .loose(),
  spec: ModelAppSpecSchema,
  status: ModelAppStatusSchema.optional(),
});
/** A ModelApp as read from the API server (defaults applied by the CRD, and again by the operator's parse). */
export type ModelApp = z.infer<typeof ModelAppSchema>;

/** Parses a spec read from the cluster, applying defaults; returns the issues instead of throwing. */
export function parseModelAppSpec(spec: unknown): { ok: true; spec: ModelAppSpec } | { ok: false; message: string } {
  const r = ModelAppSpecSchema.safeParse(spec ?? {});
  if (r.success) return { ok: true, spec: r.data };
  return { ok: false, message: r.error.issues.map((i) => `spec.${i.path.join(".")}: ${i.message}`).join("; ") };
}
