// Console sessions: what a signed-in browser holds (an HttpOnly cookie with a random token) and what the gateway keeps
// (a record named by the token's hash: the org, the admin key it was made from, its CSRF secret and its times). The
// rules a session lives by are pure functions here; the stores are memory-sessions.ts and ../kube/sessions.ts.
import crypto from "node:crypto";
import { parseCookie, stringifySetCookie } from "cookie";
import { isDnsLabel } from "../../common/kube-names.ts";
import type { KeyRecord } from "../2-authenticate/api-keys.ts";

export const SESSION_COOKIE = "gantry_session";
/** The cookie is sent to the management API and the console only. */
export const COOKIE_PATH = "/_gantry/";

/** A session as stored: never the token itself, only its hash. */
export interface SessionRecord {
  /** sha256 of the token, hex. */
  hash: string;
  org: string;
  keyId: string;
  /** The @fastify/csrf secret its CSRF tokens are made from and checked against. */
  csrfSecret: string;
  /** ms since the epoch. */
  created: number;
  lastSeen: number;
}

export interface SessionStore {
  readonly synced: boolean;
  create(rec: SessionRecord): Promise<void>;
  /** The session of `org` with this token hash, or undefined. */
  find(org: string, hash: string): Promise<SessionRecord | undefined>;
  /** Notes activity (the idle expiry counts from it); stores may persist it lazily. */
  touch(rec: SessionRecord, now: number): void;
  remove(org: string, hash: string): Promise<void>;
  /** Ends every session made from this key; how many there were. */
  removeForKey(org: string, keyId: string): Promise<number>;
  /** Every session this store knows (for the sweep of ended ones). */
  all(): SessionRecord[];
}

export interface SessionLimits {
  idleMs: number;
  maxMs: number;
}

export const hashToken = (token: string): string => crypto.createHash("sha256").update(token).digest("hex");

/** A new session token (32 random bytes) and the cookie value that carries it with its org. */
export function newToken(
  org: string,
  random: (n: number) => Buffer = crypto.randomBytes,
): { token: string; value: string } {
  const token = random(32).toString("base64url");
  return { token, value: `${org}.${token}` };
}

/** The org and token hash of a session cookie, or undefined when there is none or it is malformed. */
export function sessionCookieOf(cookieHeader: string | undefined): { org: string; hash: string } | undefined {
  if (!cookieHeader) return undefined;
  let value: string | undefined;
  try {
    value = parseCookie(cookieHeader)[SESSION_COOKIE];
  } catch {
    return undefined;
  }
  const m = value === undefined ? null : /^([a-z0-9-]{1,63})\.([A-Za-z0-9_-]{43})$/.exec(value);
  if (!m || !isDnsLabel(m[1]!)) return undefined;
  return { org: m[1]!, hash: hashToken(m[2]!) };
}

/** The Set-Cookie of a new session (or, with value "", the one that removes it). */
export function sessionSetCookie(value: string, o: { secure: boolean; maxAgeSeconds: number }): string {
  return stringifySetCookie({
    name: SESSION_COOKIE,
    value,
    path: COOKIE_PATH,
    httpOnly: true,
    sameSite: "strict",
    secure: o.secure,
    maxAge: value ? Math.floor(o.maxAgeSeconds) : 0,
  });
}

export type SessionState = "ok" | "idle" | "expired" | "key-gone" | "key-expired" | "not-admin";

/** Whether a session still holds at `now`, given its key's stored records (the key may have been revoked). */
export function sessionState(
  s: SessionRecord,
  keys: readonly KeyRecord[],
  now: number,
  limits: SessionLimits,
): SessionState {
  if (now - s.created >= limits.maxMs) return "expired";
  if (now - s.lastSeen >= limits.idleMs) return "idle";
  const key = keys.find((k) => k.org === s.org && k.id === s.keyId);
  if (!key) return "key-gone";
  if (key.expires && Date.parse(key.expires) <= now) return "key-expired";
  if (key.scope !== "admin") return "not-admin";
  return "ok";
}

/** What the browser is told when its session no longer holds. */
export const ENDED_MESSAGE: Record<Exclude<SessionState, "ok">, string> = {
  idle: "your console session ended after a time without activity: sign in again",
  expired: "your console session reached its maximum length: sign in again",
  "key-gone": "your console session ended: the admin key it was made from was revoked",
  "key-expired": "your console session ended: the admin key it was made from has expired",
  "not-admin": "your console session ended: its key is no longer an admin key",
};
