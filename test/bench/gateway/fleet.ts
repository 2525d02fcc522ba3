// The gateway beside a fleet (`npm run bench operator`, with the largest fleet): a kube-mode `gantry gateway` watching
// every namespace, and a probe app of its own whose EndpointSlice points at a stand-in pod on this host. Latency of a
// request through the gateway to the probe when its app table holds 1 app, then again with the whole fleet in it (the
// table and the EndpointSlice watch at 2,000 apps), against going direct; and a check that every fleet app is known
// (answers 401 without a key, not 404).
import { spawn } from "node:child_process";
import { execFile } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { CustomObjectsApi, DiscoveryV1Api, type KubeConfig } from "@kubernetes/client-node";
import { GROUP, PLURAL, VERSION } from "../../../operator/api/v1alpha1/modelapp.ts";
import { MANAGED_BY } from "../../../operator/api/v1alpha1/labels.ts";
import type { ControlPlane } from "../../cluster/control-plane.ts";
import { createTestNamespace } from "../../cluster/test-cluster.ts";
import { startTestGateway, type TestGateway } from "../../support/gateway.ts";
import { freePort } from "../../support/server.ts";

const run = promisify(execFile);
const HERE = import.meta.dirname;

/** This host's first non-loopback IPv4 address outside the pod network: an EndpointSlice refuses loopback. */
function hostAddress(): string | undefined {
  for (const addrs of Object.values(os.networkInterfaces()))
    for (const a of addrs ?? [])
      if (a.family === "IPv4" && !a.internal && !a.address.startsWith("10.244.")) return a.address;
  return undefined;
}

export interface ProbeLatency {
  apps: number;
  gatewayP50Ms: number;
  gatewayP99Ms: number;
  directP50Ms: number;
  addedP50Ms: number;
}

export class GatewayProbe {
  private readonly gw: TestGateway;
  private readonly upstream: { kill(): void };
  private readonly gatewayUrl: string;
  private readonly directUrl: string;

  private constructor(gw: TestGateway, upstream: { kill(): void }, gatewayUrl: string, directUrl: string) {
    this.gw = gw;
    this.upstream = upstream;
    this.gatewayUrl = gatewayUrl;
    this.directUrl = directUrl;
  }

  static async start(cp: ControlPlane, kc: KubeConfig): Promise<GatewayProbe> {
    const host = hostAddress();
    if (!host) throw new Error("no non-loopback IPv4 address for the probe's EndpointSlice");
    const port = await freePort();
    const upstream = spawn(process.execPath, [path.join(HERE, "stand-in.ts"), String(port), "0.0.0.0"], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    await new Promise<void>((resolve, reject) => {
      upstream.stdout!.once("data", () => resolve());
      upstream.once("exit", (c) => reject(new Error(`stand-in exited with ${c}`)));
    });
    const ns = await createTestNamespace(kc, "probe");
    await kc.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural: PLURAL,
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: "ModelApp",
        metadata: { name: "probe", namespace: ns },
        spec: { model: "hf.co/bench/probe-GGUF:Q4_K_M", auth: "public" },
      },
    });
    await kc.makeApiClient(DiscoveryV1Api).createNamespacedEndpointSlice({
      namespace: ns,
      body: {
        metadata: {
          name: "probe-stand-in",
          labels: { "app.kubernetes.io/managed-by": MANAGED_BY, "kubernetes.io/service-name": "probe" },
        },
        addressType: "IPv4",
        ports: [{ name: "http", port, protocol: "TCP" }],
        endpoints: [{ addresses: [host], conditions: { ready: true } }],
      },
    });
    const gw = await startTestGateway(cp, {});
    const probe = new GatewayProbe(
      gw,
      upstream,
      `${gw.url}/${ns}/probe/api/version`,
      `http://${host}:${port}/api/version`,
    );
    for (let i = 0; (await fetch(probe.gatewayUrl)).status !== 200; i++) {
      if (i > 600) throw new Error("the gateway never routed to the probe app");
      await new Promise((r) => setTimeout(r, 100));
    }
    return probe;
  }

  private async latency(url: string, count: number) {
    const r = await run(process.execPath, [path.join(HERE, "load.ts"), url, "-", "1", String(count), "latency"]);
    return JSON.parse(r.stdout) as { p50: number; p99: number };
  }

  /** Interleaved rounds through the gateway and direct; medians of each. */
  async measure(apps: number, rounds = 3, count = 2000): Promise<ProbeLatency> {
    const g: number[] = [],
      g99: number[] = [],
      d: number[] = [];
    for (let i = 0; i < rounds; i++) {
      const through = await this.latency(this.gatewayUrl, count);
      g.push(through.p50);
      g99.push(through.p99);
      d.push((await this.latency(this.directUrl, count)).p50);
    }
    const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    return {
      apps,
      gatewayP50Ms: med(g),
      gatewayP99Ms: med(g99),
      directP50Ms: med(d),
      addedP50Ms: med(g.map((x, i) => x - d[i]!)),
    };
  }

  /** How many of the named apps the gateway knows (401 without a key; an unknown app is 404). */
  async known(namespace: string, names: readonly string[]): Promise<number> {
    let n = 0;
    for (const name of names) {
      const r = await fetch(`${this.gw.url}/${namespace}/${name}/api/version`);
      await r.body?.cancel();
      if (r.status === 401) n++;
    }
    return n;
  }

  async stop(): Promise<void> {
    this.upstream.kill();
    await this.gw.stop();
  }
}
