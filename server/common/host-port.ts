// Listen and connect addresses. Pure.
import { z } from "zod";

/** host:port from GANTRY_HOST, accepting "host", "host:port", "http://host:port" (as OLLAMA_HOST does). */
export function parseHostPort(value: string, defaultPort = 11434): { host: string; port: number } {
  let v = value.trim();
  let scheme = "http";
  const m = /^(https?):\/\/(.*)$/.exec(v);
  if (m) {
    scheme = m[1]!;
    v = m[2]!.replace(/\/+$/, "");
  }
  const ipv6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(v);
  if (ipv6) return { host: ipv6[1]!, port: ipv6[2] ? Number(ipv6[2]) : defaultPort };
  const idx = v.lastIndexOf(":");
  if (idx >= 0 && /^\d+$/.test(v.slice(idx + 1)))
    return { host: v.slice(0, idx) || "127.0.0.1", port: Number(v.slice(idx + 1)) };
  return { host: v || "127.0.0.1", port: m ? (scheme === "https" ? 443 : 80) : defaultPort };
}

/** The URL that reaches a listen address from this machine: a wildcard address (0.0.0.0, ::) through loopback. */
export function connectUrl(host: string, port: number, scheme = "http"): string {
  const h = host === "0.0.0.0" ? "127.0.0.1" : host === "::" ? "::1" : host;
  return `${scheme}://${h.includes(":") ? `[${h}]` : h}:${port}`;
}

const LISTEN = /^(?:\[([^\]]+)\]|([^\s:/[\]]+)):(\d{1,5})$/;

/**
 * A process's listen address in its config: host:port with both given (0.0.0.0:8080, 127.0.0.1:8080, [::]:8080), so
 * that a bare port or an out-of-range one is a configuration error saying what to write, not a listen on host "8080".
 */
export const ListenAddressSchema = z.string().refine(
  (v) => {
    const m = LISTEN.exec(v.trim());
    return m !== null && Number(m[3]) <= 65535;
  },
  {
    error: (i) => `${JSON.stringify(i.input)} is not host:port with a port up to 65535 (e.g. 0.0.0.0:8080, [::]:8080)`,
  },
);

/** GANTRY_HOST as Ollama's OLLAMA_HOST takes it (parseHostPort), with a port that exists. */
export const HostPortSchema = z.string().refine((v) => parseHostPort(v).port <= 65535, {
  error: (i) => `${JSON.stringify(i.input)} has a port over 65535`,
});
