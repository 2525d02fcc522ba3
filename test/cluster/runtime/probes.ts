// One probe attempt, as a kubelet runs it. httpGet and tcpSocket always target the pod's own IP (probe `host` is
// ignored on purpose: the harness contacts nothing but the addresses it created); exec runs inside the pod.
import net from "node:net";
import type { V1Container, V1Probe } from "@kubernetes/client-node";

export interface ProbeTarget { podIp: string; container: V1Container; exec(command: string[], timeoutMs: number): Promise<number> }

function resolvePort(port: number | string | undefined, container: V1Container): number {
  if (typeof port === "number") return port;
  if (port !== undefined && /^\d+$/.test(port)) return Number(port);
  const named = container.ports?.find((p) => p.name === port);
  if (!named) throw new Error(`probe port ${String(port)} is not a port of container ${container.name}`);
  return named.containerPort;
}

function tcpOpen(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect({ host, port });
    const done = (ok: boolean): void => { sock.destroy(); resolve(ok); };
    sock.setTimeout(timeoutMs, () => done(false));
    sock.once("connect", () => done(true));
    sock.once("error", () => done(false));
  });
}

export async function probeOnce(probe: V1Probe, target: ProbeTarget): Promise<boolean> {
  const timeoutMs = (probe.timeoutSeconds ?? 1) * 1000;
  try {
    if (probe.httpGet) {
      const port = resolvePort(probe.httpGet.port as number | string, target.container);
      const headers = Object.fromEntries((probe.httpGet.httpHeaders ?? []).map((h) => [h.name, h.value]));
      const pathPart = probe.httpGet.path ?? "/";
      const res = await fetch(`http://${target.podIp}:${port}${pathPart.startsWith("/") ? pathPart : `/${pathPart}`}`,
        { headers, signal: AbortSignal.timeout(timeoutMs), redirect: "manual" });
      await res.body?.cancel();
      return res.status >= 200 && res.status < 400;
    }
    if (probe.tcpSocket) return await tcpOpen(target.podIp, resolvePort(probe.tcpSocket.port as number | string, target.container), timeoutMs);
    if (probe.exec?.command?.length) return (await target.exec(probe.exec.command, timeoutMs)) === 0;
  } catch {
    return false;
  }
  return false;
}
