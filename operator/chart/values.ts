// The Helm chart's values (charts/gantry/values.yaml) as one zod schema. The parts that end up in the operator's and
// the gateway's config files are picked from their own schemas (operator/config.ts, server/gateway/config.ts), so the
// chart cannot offer a value the processes would refuse, nor miss one they accept. values.schema.json is generated
// from it (gen-values-schema.ts), so `helm install` rejects unknown and ill-typed values before anything is applied.
import { z } from "zod";
import { OperatorConfigSchema } from "../config.ts";
import { DNS_LABEL, HOST_NAME, orEmpty } from "../../server/common/kube-names.ts";
import { GatewayConfigSchema } from "../../server/gateway/config.ts";
import { QuantitySchema, TolerationSchema } from "../api/v1alpha1/modelapp.ts";

const o = OperatorConfigSchema.shape;
const labels = z.record(z.string(), z.string());
const LogLevel = z.enum(["fatal", "error", "warn", "info", "debug", "trace"]).describe("Log level of the process.");
const Resources = z
  .strictObject({ requests: z.record(z.string(), QuantitySchema), limits: z.record(z.string(), QuantitySchema) })
  .partial()
  .describe("Container resources (requests and limits).");

/** What every Deployment of the chart shares: pod placement, labels and resources. */
const workload = (what: string) => ({
  replicas: z.int().min(0).describe(`${what} replicas.`),
  podLabels: labels.describe(`Extra labels on the ${what} pods.`),
  podAnnotations: labels.describe(`Extra annotations on the ${what} pods.`),
  resources: Resources,
  nodeSelector: labels.describe(`Node selector of the ${what} pods.`),
  tolerations: z.array(TolerationSchema).describe(`Tolerations of the ${what} pods.`),
  logLevel: LogLevel,
});

/** The operator's config values; the chart sets image, listen, leader election and load-report accounts itself. */
const OperatorValuesConfig = z.strictObject({
  gatewayUrl: o.gatewayUrl
    .unwrap()
    .or(z.literal(""))
    .describe(`${o.gatewayUrl.description} Empty: the ingress/route host when enabled, else the chart's Service.`),
  hubUrl: o.hubUrl.unwrap().or(z.literal("")).describe(`${o.hubUrl.description} Empty: the public hub.`),
  resourceProfiles: o.resourceProfiles,
  podLabels: o.podLabels,
  podAnnotations: o.podAnnotations,
  watchNamespace: z
    .string()
    .max(63)
    .regex(orEmpty(DNS_LABEL), "must be empty or a namespace name (a DNS label)")
    .describe(
      `${o.watchNamespace.description} Empty: all namespaces. Also the gateway's. Set: the chart grants both Roles in that namespace (which must exist) instead of ClusterRoles.`,
    ),
  workers: o.workers,
  autoscaler: o.autoscaler,
});

/** The gateway's config values; the chart sets the addresses, the operator URLs and the watched namespace. */
const GatewayValuesConfig = GatewayConfigSchema.omit({
  listen: true,
  metricsListen: true,
  publicUrl: true,
  operatorUrls: true,
  operatorTokenFile: true,
  watchNamespace: true,
}).partial();

const Monitor = (what: string) =>
  z.strictObject({
    enabled: z.boolean().describe(`Create the ${what} (needs the Prometheus Operator's CRDs).`),
    interval: z
      .string()
      .regex(/^\d+[smh]$/)
      .describe("Scrape interval."),
    labels: labels.describe("Extra labels, e.g. the one your Prometheus selects monitors by."),
  });

export const ChartValuesSchema = z.strictObject({
  image: z.strictObject({
    repository: z.string().min(1).describe("Image of every Gantry process: operator, gateway and model servers."),
    tag: z.string().describe("Image tag; the chart's appVersion when empty."),
    pullPolicy: z.enum(["Always", "IfNotPresent", "Never"]),
  }),
  imagePullSecrets: z.array(z.strictObject({ name: z.string().min(1) })).describe("Pull secrets of the chart's pods."),
  crds: z.strictObject({
    enabled: z.boolean().describe("Install the ModelApp CRD with the chart."),
    keep: z.boolean().describe("Keep the CRD (and so every ModelApp) when the chart is uninstalled."),
  }),
  operator: z.strictObject({
    ...workload("operator"),
    config: OperatorValuesConfig,
    nodeOptions: z
      .string()
      .regex(/^(--[a-z-]+(=\S+)?( |$))*$/, "must be Node.js flags (--name or --name=value), space-separated")
      .describe(
        "NODE_OPTIONS of the operator: V8's heap sized for the pod, not the node (keep --max-old-space-size " +
          "under resources.limits.memory). Empty: Node's defaults.",
      ),
  }),
  gateway: z.strictObject({
    ...workload("gateway"),
    config: GatewayValuesConfig,
    podDisruptionBudget: z.strictObject({
      enabled: z.boolean(),
      minAvailable: z.union([z.int().min(0), z.string().regex(/^\d+%$/)]),
    }),
    service: z.strictObject({
      type: z.enum(["ClusterIP", "NodePort", "LoadBalancer"]),
      port: z.int().min(1).max(65535),
      annotations: labels,
    }),
    ingress: z.strictObject({
      enabled: z.boolean(),
      className: z.string().describe("IngressClass; the cluster's default when empty."),
      annotations: labels,
      host: z
        .string()
        .max(253)
        .regex(orEmpty(HOST_NAME), "must be empty or a host name (lowercase, e.g. api.example.com or *.example.com)")
        .describe("Host name users reach the gateway at (empty: any host)."),
      tls: z.strictObject({
        enabled: z.boolean(),
        secretName: z.string().describe("Secret with the certificate (e.g. made by cert-manager from annotations)."),
      }),
    }),
    httpRoute: z.strictObject({
      enabled: z.boolean().describe("Create a Gateway API HTTPRoute (needs the Gateway API CRDs)."),
      annotations: labels,
      host: z
        .string()
        .max(253)
        .regex(orEmpty(HOST_NAME), "must be empty or a host name (lowercase, e.g. api.example.com or *.example.com)")
        .describe("Host name of the route (empty: the parent listeners' hosts)."),
      https: z
        .boolean()
        .describe("Users reach the route over HTTPS (TLS terminates at the parent Gateway's listener)."),
      parentRefs: z
        .array(
          z.strictObject({
            name: z.string().min(1),
            namespace: z.string().optional(),
            sectionName: z.string().optional(),
          }),
        )
        .describe("The Gateway (and listener) the route attaches to."),
    }),
  }),
  broker: z.strictObject({
    enabled: z
      .boolean()
      .describe(
        "Run a Redis-compatible broker (one pod) for the gateway's queue (fal's queue API); its URL becomes " +
          "gateway.config.queue.redisUrl unless that is set. Off: the queue is off, or set that URL to an external one.",
      ),
    image: z.string().min(1).describe("The broker's image (Redis or Valkey, 7 or later)."),
    resources: Resources,
    nodeSelector: workload("broker").nodeSelector,
    tolerations: workload("broker").tolerations,
    persistence: z.strictObject({
      enabled: z
        .boolean()
        .describe("Keep the append-only file on a PersistentVolumeClaim (off: an emptyDir, lost with the pod)."),
      size: z
        .string()
        .regex(/^\d+(Ki|Mi|Gi|Ti)$/)
        .describe("Size of the claim."),
      storageClassName: z.string().describe("StorageClass of the claim; the cluster's default when empty."),
    }),
  }),
  monitoring: z.strictObject({
    serviceMonitor: Monitor("ServiceMonitors of the operator and the gateway"),
    podMonitor: Monitor("PodMonitor of the model-server pods"),
  }),
  tests: z.strictObject({
    podLabels: labels.describe("Extra labels on the `helm test` pod."),
    nodeSelector: workload("`helm test`").nodeSelector,
    tolerations: workload("`helm test`").tolerations,
    app: z
      .string()
      .regex(/^([a-z0-9]([-a-z0-9]*[a-z0-9])?\/[a-z0-9]([-a-z0-9]*[a-z0-9])?)?$/)
      .describe("An app (<namespace>/<name>) `helm test` calls through the gateway; empty: only /readyz."),
    keySecret: z
      .strictObject({ name: z.string(), key: z.string().min(1) })
      .describe("Secret (in the release namespace) holding an API key for the app."),
  }),
});
export type ChartValues = z.infer<typeof ChartValuesSchema>;

type JsonSchema = { [k: string]: unknown };

/** Objects without additionalProperties get `false`: a misspelt value is an error, not silently ignored. Pure. */
function closeObjects(s: unknown): unknown {
  if (Array.isArray(s)) return s.map(closeObjects);
  if (!s || typeof s !== "object") return s;
  const out: JsonSchema = Object.fromEntries(Object.entries(s).map(([k, v]) => [k, closeObjects(v)]));
  if (out.type === "object" && out.properties && !("additionalProperties" in out)) out.additionalProperties = false;
  return out;
}

/** values.schema.json: JSON Schema draft-07 (what Helm validates values with). Pure. */
export function chartValuesJsonSchema(): JsonSchema {
  const s = z.toJSONSchema(ChartValuesSchema, { target: "draft-7", io: "input", unrepresentable: "throw" });
  return closeObjects(s) as JsonSchema;
}
