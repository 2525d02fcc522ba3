// One probe attempt, as a kubelet runs it. httpGet and tcpSocket always target the pod's own IP (probe `host` is
// ignored on purpose: the harness contacts nothing but the addresses it created); exec runs inside the pod.
import net from "node:net";
import type { V1Container, V1Probe } from "@kubernetes/client-node";

export interface ProbeTarget {
  podIp: string;
  container: V1Container;
  exec(command: string[], timeoutMs: number): Promise<number>;
}

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
    const done = (ok: boolean): void => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(timeoutMs, () => done(false));
    sock.once("connect", () => done(true));
    sock.once("error", () => done(false));
  });
}

/** One attempt: true on success, else why it failed (for the runtime's log and the Unhealthy event). */
export async function probeOnce(probe: V1Probe, target: ProbeTarget): Promise<true | string> {
  const timeoutMs = (probe.timeoutSeconds ?? 1) * 1000;
  try {
    if (probe.httpGet) {
      const port = resolvePort(probe.httpGet.port as number | string, target.container);
      const headers = Object.fromEntries((probe.httpGet.httpHeaders ?? []).map((h) => [h.name, h.value]));
      const pathPart = probe.httpGet.path ?? "/";
      const url = `http://${target.podIp}:${port}${pathPart.startsWith("/") ? pathPart : `/${pathPart}`}`;
      const res = await fetch(url, { headers, signal: AbortSignal.timeout(timeoutMs), redirect: "manual" });
      await res.body?.cancel().catch(() => undefined);
      return res.status >= 200 && res.status < 400 ? true : `HTTP probe failed with statuscode: ${res.status}`;
    }
    if (probe.tcpSocket) {
      const port = resolvePort(probe.tcpSocket.port as number | string, target.container);
      return (await tcpOpen(target.podIp, port, timeoutMs)) ? true : `dial tcp ${target.podIp}:${port}: connect failed`;
    }
    if (probe.exec?.command?.length) {
      const code = await target.exec(probe.exec.command, timeoutMs);
      return code === 0 ? true : `command exited with ${code}`;
    }
  } catch (err) {
    return `probe error: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`;
  }
  return "probe has no handler";
}
