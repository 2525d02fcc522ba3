// A container's environment as the kubelet computes it: envFrom, then env (later wins), with $(VAR) references
// expanded against what is defined so far, and valueFrom resolved from the pod (fieldRef), ConfigMaps and Secrets.
import type { V1Container, V1Pod } from "@kubernetes/client-node";

export interface ObjectData {
  configMap(name: string): Promise<Record<string, string> | undefined>;
  secret(name: string): Promise<Record<string, string> | undefined>;
}

/**
 * Kubernetes' $(VAR) expansion: defined vars are substituted, `$$(` escapes, undefined references stay as written.
 * Pure.
 */
export function expandRefs(text: string, vars: Readonly<Record<string, string>>): string {
  return text.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g, (whole, name: string | undefined) => {
    if (name === undefined) return "$";
    return vars[name] ?? whole;
  });
}

/** The downward-API field paths a kubelet supports for env. Pure. */
export function fieldRefValue(pod: V1Pod, fieldPath: string, podIp: string): string {
  const m = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(fieldPath);
  if (m) return (m[1] === "labels" ? pod.metadata?.labels : pod.metadata?.annotations)?.[m[2] ?? ""] ?? "";
  const fields: Record<string, string | undefined> = {
    "metadata.name": pod.metadata?.name,
    "metadata.namespace": pod.metadata?.namespace,
    "metadata.uid": pod.metadata?.uid,
    "spec.nodeName": pod.spec?.nodeName,
    "spec.serviceAccountName": pod.spec?.serviceAccountName,
    "status.podIP": podIp,
    "status.podIPs": podIp,
    "status.hostIP": pod.status?.hostIP ?? "127.0.0.1",
  };
  if (!(fieldPath in fields)) throw new Error(`unsupported fieldRef ${fieldPath}`);
  return fields[fieldPath] ?? "";
}

async function lookup(
  kind: "configMap" | "secret",
  data: ObjectData,
  name: string,
  key: string | undefined,
  optional: boolean | undefined,
): Promise<Record<string, string> | string | undefined> {
  const obj = kind === "configMap" ? await data.configMap(name) : await data.secret(name);
  if (obj === undefined) {
    if (optional) return undefined;
    throw new Error(`${kind} ${name} not found`);
  }
  if (key === undefined) return obj;
  if (!(key in obj) && !optional) throw new Error(`key ${key} not found in ${kind} ${name}`);
  return obj[key];
}

export async function containerEnv(
  container: V1Container,
  pod: V1Pod,
  podIp: string,
  data: ObjectData,
  base: Record<string, string>,
): Promise<Record<string, string>> {
  const vars: Record<string, string> = { ...base };
  for (const src of container.envFrom ?? []) {
    const ref = src.configMapRef ?? src.secretRef;
    if (!ref?.name) continue;
    const kind = src.configMapRef ? "configMap" : "secret";
    const obj = await lookup(kind, data, ref.name, undefined, ref.optional);
    if (typeof obj === "object") for (const [k, v] of Object.entries(obj)) vars[`${src.prefix ?? ""}${k}`] = v;
  }
  for (const e of container.env ?? []) {
    const from = e.valueFrom;
    let value: string | undefined;
    if (!from) value = expandRefs(e.value ?? "", vars);
    else if (from.fieldRef) value = fieldRefValue(pod, from.fieldRef.fieldPath, podIp);
    else if (from.configMapKeyRef)
      value = (await lookup(
        "configMap",
        data,
        from.configMapKeyRef.name ?? "",
        from.configMapKeyRef.key,
        from.configMapKeyRef.optional,
      )) as string | undefined;
    else if (from.secretKeyRef)
      value = (await lookup(
        "secret",
        data,
        from.secretKeyRef.name ?? "",
        from.secretKeyRef.key,
        from.secretKeyRef.optional,
      )) as string | undefined;
    else throw new Error(`env ${e.name}: unsupported valueFrom (resourceFieldRef is not implemented)`);
    if (value !== undefined) vars[e.name] = value;
  }
  return vars;
}
