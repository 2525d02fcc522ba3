// Webhook deliveries as fal makes them: a POST of {request_id, gateway_request_id, status, payload, error} signed with
// Ed25519 over `request_id \n user_id \n timestamp \n hex(sha256(body))` (hex signature in x-fal-webhook-signature),
// verifiable with the gateway's JWKS. Deliveries are jobs of their own broker queue, retried with doubling waits, so
// a receiver that is down for a while (or a gateway that dies) loses none. The SSRF guard refuses loopback, link-local
// and private addresses, checked on the address actually connected to (a name that resolves to one is refused too).
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, type KeyObject } from "node:crypto";
import dns from "node:dns";
import fs from "node:fs";
import { BlockList, isIP, type LookupFunction } from "node:net";
import { Agent, request } from "undici";
import type { JobResult } from "./wire.ts";

/** Addresses a webhook may not reach unless allowed: loopback, link-local, private, CGNAT, unspecified, multicast. */
const BLOCKED = new BlockList();
for (const [net, bits] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.168.0.0", 16],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const)
  BLOCKED.addSubnet(net, bits, "ipv4");
for (const [net, bits] of [
  ["::", 128],
  ["::1", 128],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
] as const)
  BLOCKED.addSubnet(net, bits, "ipv6");

/** Whether an IP address is one a webhook must not reach (IPv4-mapped IPv6 is checked as IPv4). Pure. */
export function blockedAddress(ip: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return BLOCKED.check(mapped[1]!, "ipv4");
  const v = isIP(ip);
  return v === 0 ? true : BLOCKED.check(ip, v === 4 ? "ipv4" : "ipv6");
}

/** Why a webhook URL is refused at submission, or undefined (names are checked again when resolved). Pure. */
export function webhookUrlProblem(raw: string, allowPrivate: boolean): string | undefined {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return "fal_webhook is not a URL";
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") return "fal_webhook must be an http or https URL";
  if (u.username || u.password) return "fal_webhook must not carry credentials";
  if (allowPrivate) return undefined;
  const host = u.hostname.replace(/^\[|\]$/g, "");
  if (host === "localhost" || host.endsWith(".localhost") || (isIP(host) !== 0 && blockedAddress(host)))
    return "fal_webhook points to a loopback, link-local or private address, which this gateway does not call";
  return undefined;
}

/** A DNS lookup that fails for names resolving to a blocked address (the socket connects to what it returns). */
const guardedLookup: LookupFunction = (hostname, options, callback) => {
  dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, "", 0);
    const list = addresses as dns.LookupAddress[];
    const bad = list.find((a) => blockedAddress(a.address));
    if (bad || list.length === 0) {
      const e = Object.assign(new Error(`webhook host ${hostname} resolves to a blocked address`), {
        code: "EBLOCKED",
      });
      return callback(e, "", 0);
    }
    if (options.all) (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, list);
    else callback(null, list[0]!.address, list[0]!.family);
  });
};

/** The signing key: from a file, or made once and shared through the broker by every gateway replica. */
export class WebhookSigner {
  readonly key: KeyObject;
  readonly jwks: string;
  private readonly kid: string;

  constructor(pem: string) {
    this.key = createPrivateKey(pem);
    const jwk = createPublicKey(this.key).export({ format: "jwk" }) as { kty: string; crv: string; x: string };
    // RFC 7638 thumbprint: the required members in lexicographic order.
    this.kid = createHash("sha256")
      .update(JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x }))
      .digest("base64url");
    this.jwks = JSON.stringify({
      keys: [{ kty: jwk.kty, crv: jwk.crv, x: jwk.x, kid: this.kid, use: "sig", alg: "EdDSA" }],
    });
  }

  static async load(file: string | undefined, shared: (pem: string) => Promise<string>): Promise<WebhookSigner> {
    if (file) return new WebhookSigner(fs.readFileSync(file, "utf8"));
    const made = generateKeyPairSync("ed25519").privateKey.export({ format: "pem", type: "pkcs8" }).toString();
    return new WebhookSigner(await shared(made));
  }

  /** fal's headers for a delivery of `body`. */
  headers(requestId: string, userId: string, body: string, nowMs: number): Record<string, string> {
    const ts = String(Math.floor(nowMs / 1000));
    const digest = createHash("sha256").update(body).digest("hex");
    const signature = sign(null, Buffer.from(`${requestId}\n${userId}\n${ts}\n${digest}`), this.key).toString("hex");
    return {
      "x-fal-webhook-request-id": requestId,
      "x-fal-webhook-user-id": userId,
      "x-fal-webhook-timestamp": ts,
      "x-fal-webhook-signature": signature,
    };
  }
}

/** fal's delivery body for a finished request. Pure. */
export function webhookBody(requestId: string, r: JobResult): string {
  const text = Buffer.from(r.body, "base64").toString("utf8");
  let payload: unknown = null;
  let payloadError: string | undefined;
  try {
    payload = text === "" ? null : JSON.parse(text);
  } catch {
    payloadError = "the app's answer is not JSON";
  }
  const ok = r.status >= 200 && r.status < 300 && !r.error;
  return JSON.stringify({
    request_id: requestId,
    gateway_request_id: requestId,
    status: ok ? "OK" : "ERROR",
    payload,
    error: ok ? null : (r.error ?? `Invalid status code: ${r.status}`),
    ...(payloadError ? { payload_error: payloadError } : {}),
  });
}

/** Sends one delivery; throws (for a retry) unless the receiver answered 2xx. */
export class WebhookSender {
  private readonly agent: Agent;
  private readonly timeoutMs: number;

  constructor(o: { allowPrivate: boolean; timeoutMs: number }) {
    this.timeoutMs = o.timeoutMs;
    this.agent = new Agent({ connect: o.allowPrivate ? {} : { lookup: guardedLookup }, connections: 64 });
  }

  async send(url: string, headers: Record<string, string>, body: string, allowPrivate: boolean): Promise<void> {
    const problem = webhookUrlProblem(url, allowPrivate);
    if (problem) throw new Error(problem);
    const r = await request(url, {
      method: "POST",
      headers: { ...headers, "content-type": "application/json", "user-agent": "gantry-webhook" },
      body,
      dispatcher: this.agent,
      headersTimeout: this.timeoutMs,
      bodyTimeout: this.timeoutMs,
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    await r.body.dump();
    if (r.statusCode < 200 || r.statusCode >= 300) throw new Error(`the receiver answered ${r.statusCode}`);
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}
