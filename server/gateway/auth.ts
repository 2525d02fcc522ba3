// Authorization header parsing and the access rule of an app's auth mode. Pure.
//
//   Authorization: Key <key_id>:<key_secret>      (fal's form; the scheme is case-insensitive)
//   Authorization: Bearer <key_id>:<key_secret>   (what OpenAI and Ollama SDKs send with apiKey)
//
// Modes (ModelApp spec.auth): private = a valid key of the app's org; shared = a valid key of any org; public = no key
// needed (a valid key still names who called, for usage; an invalid one is ignored, since SDKs insist on sending
// some apiKey).
import type { AuthMode } from "../../operator/api/v1alpha1/modelapp.ts";
import { parseApiKey } from "./keys.ts";

export type AuthFailure =
  "missing" | "malformed" | "unknown" | "revoked" | "expired" | "wrong_secret" | "other_org" | "scope";

export type ParsedAuth = { ok: true; keyId: string; secret: string } | { ok: false; reason: "missing" | "malformed" };

export function parseAuthorization(header: string | undefined): ParsedAuth {
  if (header === undefined || header === "") return { ok: false, reason: "missing" };
  const sp = header.indexOf(" ");
  if (sp < 0) return { ok: false, reason: "malformed" };
  const scheme = header.slice(0, sp).toLowerCase();
  if (scheme !== "key" && scheme !== "bearer") return { ok: false, reason: "malformed" };
  const key = parseApiKey(header.slice(sp + 1).trim());
  return key ? { ok: true, keyId: key.id, secret: key.secret } : { ok: false, reason: "malformed" };
}

/** A key the store verified: whose it is and what it may do. */
export interface VerifiedKey {
  id: string;
  org: string;
  scope: "api" | "admin";
}

export type KeyCheck = { ok: true; key: VerifiedKey } | { ok: false; reason: AuthFailure };

export type AccessDecision =
  | { allow: true; key: VerifiedKey | undefined }
  | { allow: false; status: 401 | 403; reason: AuthFailure; message: string };

const MESSAGES: Record<AuthFailure, string> = {
  missing: "this app needs an API key: send Authorization: Key <key_id>:<key_secret>",
  malformed: "malformed Authorization header: use Authorization: Key <key_id>:<key_secret>",
  unknown: "invalid API key",
  revoked: "invalid API key",
  wrong_secret: "invalid API key",
  expired: "the API key has expired",
  other_org: "this API key belongs to another org",
  scope: "managing an org needs an admin key",
};

/** Whether a caller may use an app of `org` with `mode`, given what the header held and what the key store said. */
export function decideAccess(mode: AuthMode, org: string, check: KeyCheck): AccessDecision {
  if (mode === "public") return { allow: true, key: check.ok ? check.key : undefined };
  if (!check.ok) return { allow: false, status: 401, reason: check.reason, message: MESSAGES[check.reason] };
  if (mode === "private" && check.key.org !== org)
    return { allow: false, status: 403, reason: "other_org", message: MESSAGES.other_org };
  return { allow: true, key: check.key };
}

/** The management API of an org: an admin key of that org and nothing else. */
export function decideAdmin(org: string, check: KeyCheck): AccessDecision {
  if (!check.ok) return { allow: false, status: 401, reason: check.reason, message: MESSAGES[check.reason] };
  if (check.key.org !== org) return { allow: false, status: 403, reason: "other_org", message: MESSAGES.other_org };
  if (check.key.scope !== "admin") return { allow: false, status: 403, reason: "scope", message: MESSAGES.scope };
  return { allow: true, key: check.key };
}

export const failureMessage = (reason: AuthFailure): string => MESSAGES[reason];
