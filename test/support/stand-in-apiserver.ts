// A stand-in kube-apiserver on loopback (plain HTTP, any handler) and a KubeConfig that points at it: for tests of
// what the watches and writers of client-node do when the apiserver fails, goes away or comes back.
import http from "node:http";
import type net from "node:net";
import { KubeConfig } from "@kubernetes/client-node";

export interface StandInApiserver {
  kc: KubeConfig;
  url: string;
  /** Drops every connection (open watches break) and stops listening: the apiserver is gone. */
  close(): Promise<void>;
}

export async function standInApiserver(handler: http.RequestListener): Promise<StandInApiserver> {
  const api = http.createServer(handler);
  await new Promise<void>((r) => api.listen(0, "127.0.0.1", () => r()));
  const url = `http://127.0.0.1:${(api.address() as net.AddressInfo).port}`;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "c", server: url, skipTLSVerify: true }], // plain HTTP: client-node asks for this
    users: [{ name: "u" }],
    contexts: [{ name: "x", cluster: "c", user: "u" }],
    currentContext: "x",
  });
  return {
    kc,
    url,
    close: async () => {
      api.closeAllConnections();
      await new Promise<void>((r) => api.close(() => r()));
    },
  };
}

/** Log records written by a pino logger, parsed. */
export function logRecords(): {
  lines: Array<{ level: string; msg: string; [k: string]: unknown }>;
  destination: { write(s: string): void };
} {
  const lines: Array<{ level: string; msg: string }> = [];
  return { lines, destination: { write: (s: string) => void lines.push(JSON.parse(s) as (typeof lines)[number]) } };
}
