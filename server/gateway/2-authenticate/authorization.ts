// Step 2, authenticate: Authorization header parsing and the access rule of an app's auth mode. Pure.
//
//   Authorization: Key <key_id>:<key_secret>      (fal's form; the scheme is case-insensitive)
//   Authorization: Bearer <key_id>:<key_secret>   (what OpenAI and Ollama SDKs send with apiKey)
//   x-api-key: <key_id>:<key_secret>              (what Anthropic SDKs send with apiKey; only without Authorization)
//
// Modes (ModelApp spec.auth): private = a valid key of the app's org; shared = a valid key of any org; public = no key
// needed (a valid key still names who called, for usage; an invalid one is ignored, since SDKs insist on sending
// some apiKey).
import type { AuthMode } from "../../../operator/api/v1alpha1/modelapp.ts";
import { parseApiKey } from "./api-keys.ts";

export type AuthFailure =
  "missing" | "malformed" | "unknown" | "revoked" | "expired" | "wrong_secret" | "other_org" | "scope";

export type ParsedAuth =
  { ok: true; keyId: string; secret: string } | { ok: false; reason: "missing" | "malformed" | "unknown" };

/** The scheme, the whitespace after it (spaces or tabs), and the credentials. */
const CREDENTIALS = /^([^ \t]+)[ \t]+(.*)$/;
/** Credentials of the form `<key_id>:<key_secret>`, whatever the two parts hold. */
const KEY_PAIR = /^[^\s:]+:\S+$/;

export function parseAuthorization(header: string | undefined): ParsedAuth {
  if (header === undefined || header === "") return { ok: false, reason: "missing" };
  const m = CREDENTIALS.exec(header);
  if (!m) return { ok: false, reason: "malformed" };
  const scheme = m[1]!.toLowerCase();
  if (scheme !== "key" && scheme !== "bearer") return { ok: false, reason: "malformed" };
  const credentials = m[2]!.trim();
  const key = parseApiKey(credentials);
  if (key) return { ok: true, keyId: key.id, secret: key.secret };
  // An id:secret pair that is not of our key format is no key of ours: invalid, as a made-up key of our format is.
  // Only a header without such a pair is malformed (its message says what the header must look like).
  return { ok: false, reason: KEY_PAIR.test(credentials) ? "unknown" : "malformed" };
}

/** A header's values from a raw header list (name, value, ...), joined (`a, b`) when it is there several times. */
function joinedHeader(raw: readonly string[], name: string): string | undefined {
  let all: string | undefined;
  for (let i = 0; i < raw.length; i += 2)
    if (raw[i]!.length === name.length && raw[i]!.toLowerCase() === name)
      all = all === undefined ? raw[i + 1]! : `${all}, ${raw[i + 1]!}`;
  return all;
}

/**
 * The Authorization a request carries, from its raw header list (name, value, ...): its Authorization header, or,
 * without one, its x-api-key as `Key <x-api-key>`. Node keeps only the first of several; here several are joined
 * (`a, b`), which never parses as one key: an ambiguous request is refused.
 */
export function authorizationOf(first: string | undefined, raw: readonly string[]): string | undefined {
  if (first !== undefined) return joinedHeader(raw, "authorization") ?? first;
  const apiKey = joinedHeader(raw, "x-api-key");
  return apiKey === undefined ? undefined : `Key ${apiKey}`;
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
  missing:
    "this app needs an API key: send Authorization: Key <key_id>:<key_secret> (or x-api-key: <key_id>:<key_secret>)",
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
  if (!check.ok) {
    const message =
      check.reason === "missing"
        ? "managing an org needs an admin key of the org: send Authorization: Key <key_id>:<key_secret>"
        : MESSAGES[check.reason];
    return { allow: false, status: 401, reason: check.reason, message };
  }
  if (check.key.org !== org) return { allow: false, status: 403, reason: "other_org", message: MESSAGES.other_org };
  if (check.key.scope !== "admin") return { allow: false, status: 403, reason: "scope", message: MESSAGES.scope };
  return { allow: true, key: check.key };
}

export const failureMessage = (reason: AuthFailure): string => MESSAGES[reason];
