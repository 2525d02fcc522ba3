// Parts of the queue's tests: an in-process gateway with the queue on a test Redis, a stand-in pod that holds each
// request until the test releases it (and says when one was aborted), a TLS front (fal's Python client speaks only
// https), fal's Python client in a cached virtualenv, and a webhook receiver that checks fal's signature scheme
// against the gateway's JWKS.
import { execFileSync } from "node:child_process";
import { createHash, createPublicKey, verify, type JsonWebKey } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { silentLogger } from "../../server/common/logger.ts";
import { parseGatewayConfig } from "../../server/gateway/config.ts";
import { Gateway } from "../../server/gateway/gateway.ts";
import { createGatewayServer } from "../../server/gateway/http-server.ts";
import type { MemoryKeys, StaticApps } from "../../server/gateway/memory.ts";

export const listen = async (s: http.Server | https.Server, port = 0): Promise<string> => {
  await new Promise<void>((r) => s.listen(port, "127.0.0.1", () => r()));
  return `${s instanceof https.Server ? "https" : "http"}://127.0.0.1:${(s.address() as AddressInfo).port}`;
};

export interface QueueGateway {
  gateway: Gateway;
  base: string;
  close(): Promise<void>;
}

export async function startQueueGateway(
  apps: StaticApps,
  keys: MemoryKeys,
  config: Record<string, unknown>,
  publicUrl?: string,
  port = 0,
  /** The gateway's own address as its public URL (known once it listens). */
  selfUrl = false,
): Promise<QueueGateway> {
  const c = parseGatewayConfig(config);
  const own: { gateway?: Gateway } = {};
  const server = createGatewayServer(c, (req, res) => own.gateway!.handle(req, res));
  const base = await listen(server, port);
  const url = publicUrl ?? (selfUrl ? base : undefined);
  const gateway = new Gateway({ config: c, apps, keys, logger: silentLogger, ...(url ? { publicUrl: url } : {}) });
  own.gateway = gateway;
  await gateway.queue?.start();
  return {
    gateway,
    base,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await gateway.close(0);
    },
  };
}

/** A stand-in pod: answers each request only when the test releases it (or at once, `autoRelease`), or answers it with
 * a status and body of the test's; says which were aborted. */
export class HoldingPod {
  autoRelease = false;
  /** Request ids in the order they arrived (a request run again arrives twice). */
  readonly arrivals: string[] = [];
  readonly server: http.Server;
  readonly held: Array<{
    id: string;
    body: string;
    release: () => void;
    answer: (status: number, body: unknown) => void;
  }> = [];
  readonly aborted = new Set<string>();
  private waiters: Array<() => void> = [];

  constructor() {
    this.server = http.createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        const id = String(req.headers["x-request-id"]);
        res.on("close", () => {
          if (!res.writableFinished) {
            this.aborted.add(id);
            this.notify();
          }
        });
        const answer = (status: number, answerBody: unknown) => {
          if (res.headersSent || res.destroyed) return; // answered, or aborted, already
          res.writeHead(status, { "content-type": "application/json" });
          res.end(JSON.stringify(answerBody));
        };
        const release = () => answer(200, { id, echo: body ? JSON.parse(body) : null });
        this.arrivals.push(id);
        if (this.autoRelease) release();
        else this.held.push({ id, body, release, answer });
        this.notify();
      });
    });
  }

  /** Answers every request held now and every one to come. */
  releaseAll(): void {
    this.autoRelease = true;
    for (const h of this.held.splice(0)) h.release();
  }

  private notify(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  /** Resolves when `pred` holds (checked on each arrival or abort). */
  async until(pred: () => boolean): Promise<void> {
    while (!pred()) await new Promise<void>((r) => this.waiters.push(r));
  }
}

/** An https front for the gateway (a throw-away self-signed certificate for 127.0.0.1), and its CA file. */
export async function startTlsFront(target: string, port = 0): Promise<{ url: string; caFile: string; close(): void }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gantry-tls-"));
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:P-256",
      "-nodes",
      "-days",
      "1",
      "-subj",
      "/CN=127.0.0.1",
      "-addext",
      "subjectAltName=IP:127.0.0.1",
      "-keyout",
      "key.pem",
      "-out",
      "cert.pem",
    ],
    { cwd: dir, stdio: "ignore" },
  );
  const t = new URL(target);
  const server = https.createServer(
    { key: fs.readFileSync(path.join(dir, "key.pem")), cert: fs.readFileSync(path.join(dir, "cert.pem")) },
    (req, res) => {
      const up = http.request(
        { host: t.hostname, port: t.port, method: req.method, path: req.url, headers: req.headers },
        (r) => {
          res.writeHead(r.statusCode ?? 502, r.headers);
          r.pipe(res);
        },
      );
      up.on("error", () => res.destroy());
      req.pipe(up);
    },
  );
  const url = await listen(server, port);
  return { url, caFile: path.join(dir, "cert.pem"), close: () => (server.closeAllConnections(), server.close()) };
}

/** fal's Python client (fal-client 1.0.x from PyPI) in a virtualenv cached under $GANTRY_CACHE; its python. */
export function falPython(): string {
  const cache = process.env.GANTRY_CACHE || path.join(os.homedir(), ".cache", "gantry");
  const venv = path.join(cache, "fal-client-1.0.3");
  const python = path.join(venv, "bin", "python");
  if (fs.existsSync(path.join(venv, ".done"))) return python;
  fs.rmSync(venv, { recursive: true, force: true });
  execFileSync("python3", ["-m", "venv", venv], { stdio: "ignore" });
  execFileSync(python, ["-m", "pip", "install", "--quiet", "fal-client==1.0.3"], { stdio: "ignore" });
  fs.writeFileSync(path.join(venv, ".done"), "");
  return python;
}

export interface Delivery {
  headers: http.IncomingHttpHeaders;
  body: string;
  verified: boolean;
}

/** Checks a delivery as fal documents it: Ed25519 over request_id, user_id, timestamp, hex sha256 of the body. */
export function verifyFalSignature(jwks: { keys: JsonWebKey[] }, h: http.IncomingHttpHeaders, body: string): boolean {
  const ts = Number(h["x-fal-webhook-timestamp"]);
  if (!Number.isFinite(ts) || Math.abs(Date.now() / 1000 - ts) > 300) return false;
  const digest = createHash("sha256").update(body).digest("hex");
  const message = Buffer.from(
    `${String(h["x-fal-webhook-request-id"])}\n${String(h["x-fal-webhook-user-id"])}\n${ts}\n${digest}`,
  );
  const sig = Buffer.from(String(h["x-fal-webhook-signature"]), "hex");
  return jwks.keys.some((k) => verify(null, message, createPublicKey({ key: k, format: "jwk" }), sig));
}

/** A webhook receiver: `down` answers 503 (a receiver that is failing); deliveries are verified against `jwksUrl`. */
export class WebhookReceiver {
  readonly server: http.Server;
  readonly deliveries: Delivery[] = [];
  refused = 0;
  down = false;
  private waiters: Array<() => void> = [];

  constructor(jwksUrl: () => string) {
    this.server = http.createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        void (async () => {
          if (this.down) {
            this.refused++;
            res.writeHead(503).end();
          } else {
            const jwks = (await (await fetch(jwksUrl())).json()) as { keys: JsonWebKey[] };
            this.deliveries.push({ headers: req.headers, body, verified: verifyFalSignature(jwks, req.headers, body) });
            res.writeHead(200).end();
          }
          for (const w of this.waiters.splice(0)) w();
        })();
      });
    });
  }

  async until(pred: () => boolean): Promise<void> {
    while (!pred()) await new Promise<void>((r) => this.waiters.push(r));
  }
}
