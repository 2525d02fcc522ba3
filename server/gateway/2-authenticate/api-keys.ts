// Step 2, authenticate: API keys: format, hashing and the Secret that stores one. No I/O (the randomness is passed in
// or drawn here from the CSPRNG; the clock is passed in).
//
// A key is `<key_id>:<key_secret>` (fal's FAL_KEY_ID:FAL_KEY_SECRET form): key_id is 16 hex characters (it names the
// Secret `gantry-key-<key_id>` in the org's namespace and is safe to show and log), key_secret is 32 random bytes in
// base64url (256 bits) and is shown exactly once, when the key is created. The Secret holds only a salted hash of it.
//
// Why HMAC-SHA-256 with a per-key random salt and not a slow password hash (scrypt, argon2): slow hashes exist to make
// guessing *low-entropy* secrets (human passwords) expensive after a leak. A 256-bit random secret cannot be guessed
// at any hash speed, so a slow hash would add no protection and would cost tens of milliseconds of CPU on every
// uncached request. The salt still makes equal secrets hash differently and rules out precomputed tables. Hashes are
// compared in constant time (crypto.timingSafeEqual).
import crypto from "node:crypto";
import { z } from "zod";
import { formatIssue } from "../../common/validate.ts";

export const KEY_LABEL = "gantry.dev/api-key";
export const KEY_SCOPES = ["api", "admin"] as const;
/** The longest name (description) a key may have. */
export const KEY_NAME_MAX = 253;

/**
 * A new key's name: printable (a line break or other control character would break `gantry keys list`'s table and
 * logs that show it), at most KEY_NAME_MAX characters. Stored names are read with the length bound only.
 */
export const NewKeyNameSchema = z
  .string()
  .max(KEY_NAME_MAX, { error: `is at most ${KEY_NAME_MAX} characters` })
  .refine((n) => !/\p{Cc}/u.test(n), { error: "may not hold control characters (line breaks, tabs, ...)" })
  .describe("A name or description for people.");
export type KeyScope = (typeof KEY_SCOPES)[number];

const KEY_ID = /^[0-9a-f]{16}$/;
const KEY_SECRET = /^[A-Za-z0-9_-]{43}$/;
const HASH = /^hmac-sha256\$([A-Za-z0-9_-]{22})\$([A-Za-z0-9_-]{43})$/;

export const keySecretName = (id: string): string => `gantry-key-${id}`;

export function parseApiKey(key: string): { id: string; secret: string } | undefined {
  const colon = key.indexOf(":");
  if (colon < 0) return undefined;
  const id = key.slice(0, colon),
    secret = key.slice(colon + 1);
  return KEY_ID.test(id) && KEY_SECRET.test(secret) ? { id, secret } : undefined;
}

/** A new key: its id, its secret, and the full key string (shown once). */
export function generateApiKey(random: (n: number) => Buffer = crypto.randomBytes): {
  id: string;
  secret: string;
  key: string;
} {
  const id = random(8).toString("hex");
  const secret = random(32).toString("base64url");
  return { id, secret, key: `${id}:${secret}` };
}

/** `hmac-sha256$<salt>$<digest>` of a secret; the salt is 16 random bytes unless given. */
export function hashSecret(secret: string, salt: Buffer = crypto.randomBytes(16)): string {
  const digest = crypto.createHmac("sha256", salt).update(secret).digest("base64url");
  return `hmac-sha256$${salt.toString("base64url")}$${digest}`;
}

/** Whether `secret` matches a stored hash (constant-time comparison of the digests). */
export function verifySecret(stored: string, secret: string): boolean {
  const m = HASH.exec(stored);
  if (!m) return false;
  const want = Buffer.from(m[2]!, "base64url");
  const got = crypto.createHmac("sha256", Buffer.from(m[1]!, "base64url")).update(secret).digest();
  return want.length === got.length && crypto.timingSafeEqual(want, got);
}

/** The data of a key's Secret (stringData when written; base64 in `data` when read). Never the secret itself. */
export const ApiKeySecretDataSchema = z
  .object({
    id: z.string().regex(KEY_ID).describe("The key id (the part before the colon)."),
    hash: z.string().regex(HASH).describe("hmac-sha256$<salt>$<digest> of the key secret (base64url)."),
    scope: z.enum(KEY_SCOPES).describe("api: call the org's apps; admin: also manage the org (keys, apps, usage)."),
    name: z.string().max(KEY_NAME_MAX).default("").describe("A name or description for people."),
    created: z.iso.datetime({ offset: true }).describe("When the key was created (RFC 3339)."),
    expires: z.iso
      .datetime({ offset: true })
      .optional()
      .describe("When the key stops working (RFC 3339); never if unset."),
  })
  .describe("The contents of an API key's Secret (labelled gantry.dev/api-key) in the org's namespace.");
export type ApiKeySecretData = z.infer<typeof ApiKeySecretDataSchema>;

/** A stored key as the gateway and `gantry keys` see it. */
export interface KeyRecord extends ApiKeySecretData {
  org: string;
  /** Changes whenever the Secret does (its resourceVersion): verification results cached for it are dropped. */
  version: string;
}

/** The Secret for a new key (hash computed here: the secret never leaves the caller). */
export function keySecret(
  org: string,
  k: { id: string; secret: string },
  opts: { scope: KeyScope; name?: string; now: Date; expires?: Date },
) {
  const data: ApiKeySecretData = {
    id: k.id,
    hash: hashSecret(k.secret),
    scope: opts.scope,
    name: opts.name ?? "",
    created: opts.now.toISOString(),
    ...(opts.expires ? { expires: opts.expires.toISOString() } : {}),
  };
  // Never store a key the gateway could not read back (it would be a Secret nobody sees in a list or can use).
  const checked = ApiKeySecretDataSchema.safeParse(data);
  if (!checked.success) throw new Error(`invalid key: ${formatIssue(checked.error.issues[0]!)}`);
  return {
    apiVersion: "v1",
    kind: "Secret",
    type: "Opaque",
    metadata: {
      name: keySecretName(k.id),
      namespace: org,
      labels: { [KEY_LABEL]: "true", "app.kubernetes.io/managed-by": "gantry" },
    },
    stringData: data as Record<string, string>,
  };
}

/** Reads a key Secret's data (base64 values); undefined when it is not a valid key Secret. */
export function readKeySecret(secret: {
  metadata?: { namespace?: string; resourceVersion?: string; deletionTimestamp?: unknown };
  data?: Record<string, string>;
}): KeyRecord | undefined {
  if (!secret.data || !secret.metadata?.namespace || secret.metadata.deletionTimestamp) return undefined;
  const decoded = Object.fromEntries(
    Object.entries(secret.data).map(([k, v]) => [k, Buffer.from(v, "base64").toString("utf8")]),
  );
  const r = ApiKeySecretDataSchema.safeParse(decoded);
  if (!r.success) return undefined;
  return { ...r.data, org: secret.metadata.namespace, version: secret.metadata.resourceVersion ?? "" };
}

/** Checks a presented secret against a stored key at `now`. */
export function checkKey(
  rec: KeyRecord | undefined,
  secret: string,
  now: number,
): "ok" | "unknown" | "expired" | "wrong_secret" {
  if (!rec) return "unknown";
  if (!verifySecret(rec.hash, secret)) return "wrong_secret";
  if (rec.expires && Date.parse(rec.expires) <= now) return "expired";
  return "ok";
}

/** "30d", "12h", "90m", "3600s" or an RFC 3339 time → the expiry instant. */
export function parseExpiry(value: string, now: Date): Date {
  const m = /^(\d+)(d|h|m|s)$/.exec(value.trim());
  if (m) {
    const unit = { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1000 }[m[2] as "d" | "h" | "m" | "s"];
    const n = Number(m[1]);
    if (n <= 0) throw new Error(`invalid expiry "${value}": must be positive`);
    const at = new Date(now.getTime() + n * unit);
    if (Number.isNaN(at.getTime())) throw new Error(`invalid expiry "${value}": too far in the future`);
    return at;
  }
  const t = Date.parse(value);
  if (Number.isNaN(t) || !/^\d{4}-\d{2}-\d{2}/.test(value.trim()))
    throw new Error(`invalid expiry "${value}" (use e.g. 30d, 12h, 90m, or an RFC 3339 time)`);
  if (t <= now.getTime()) throw new Error(`invalid expiry "${value}": it is in the past`);
  return new Date(t);
}
