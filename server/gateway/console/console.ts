// The console's server side: sign-in (an org admin key exchanged for a session cookie), the session check every
// management request made with that cookie goes through (CSRF included), sign-out, and the sweep of ended sessions.
// Routes: POST/GET/DELETE /_gantry/v1/session; the console's pages and assets are static.ts's.
import type { ClientOf } from "../1-dispatch/client.ts";
import Tokens from "@fastify/csrf";
import { AppError } from "../../common/errors.ts";
import type { Logger } from "../../common/logger.ts";
import type { KeyCheck } from "../2-authenticate/authorization.ts";
import type { IncomingMessage, ServerResponse } from "node:http";
import { parse, readJson } from "../management/json-request.ts";
import { sendJson } from "../management/json-response.ts";
import type { KeyStore } from "../ports.ts";
import { SignInRequestSchema } from "../management/schemas.ts";
import type { ConsoleConfig } from "./console-config.ts";
import {
  ENDED_MESSAGE,
  hashToken,
  newToken,
  sessionCookieOf,
  sessionSetCookie,
  sessionState,
  type SessionLimits,
  type SessionRecord,
  type SessionStore,
} from "./session.ts";
import { SignInThrottle } from "./throttle.ts";

export const SESSION_PATH = "/_gantry/v1/session";
export const CSRF_HEADER = "x-csrf-token";
const SAFE_METHODS: ReadonlySet<string> = new Set(["GET", "HEAD", "OPTIONS"]);
const SWEEP_MS = 60_000;

export interface ConsoleDeps {
  config: ConsoleConfig;
  sessions: SessionStore;
  keys: Pick<KeyStore, "byId">;
  /** Checks a whole key (`<key_id>:<key_secret>`) as the gateway checks Authorization headers. */
  checkKey(key: string): KeyCheck;
  /** Checks a request's Authorization header. */
  checkHeader(req: IncomingMessage): KeyCheck;
  /** The client's address and scheme (trustProxy decides whom X-Forwarded-* are believed from). */
  clientOf: ClientOf;
  maxBodyBytes: number;
  logger: Logger;
  now: () => number;
}

const tokens = Tokens();

export class ConsoleSessions {
  private readonly d: ConsoleDeps;
  private readonly limits: SessionLimits;
  private readonly throttle: SignInThrottle;
  private sweepTimer: NodeJS.Timeout | undefined;

  constructor(d: ConsoleDeps) {
    this.d = d;
    this.limits = { idleMs: d.config.sessionIdleMinutes * 60_000, maxMs: d.config.sessionMaxHours * 3_600_000 };
    this.throttle = new SignInThrottle(d.config.signInFreeFailures);
  }

  /** Starts the periodic removal of ended sessions (idle, expired, revoked key). */
  start(): void {
    this.sweepTimer ??= setInterval(() => void this.sweep(), SWEEP_MS).unref();
  }

  stop(): void {
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    this.sweepTimer = undefined;
  }

  async sweep(): Promise<void> {
    const now = this.d.now();
    for (const s of this.d.sessions.all())
      if (this.stateOf(s, now) !== "ok")
        await this.d.sessions.remove(s.org, s.hash).catch((err: unknown) => {
          this.d.logger.warn({ err: String(err), org: s.org }, "ended session not removed");
        });
  }

  private stateOf(s: SessionRecord, now: number) {
    return sessionState(s, this.d.keys.byId(s.keyId), now, this.limits);
  }

  /**
   * Who a management request acts as: its Authorization header when it has one (scripts, `gantry keys`), else its
   * session cookie, whose state-changing requests must carry the session's CSRF token. No credentials: the header
   * check's "missing".
   */
  async check(req: IncomingMessage): Promise<KeyCheck> {
    if (req.headers.authorization !== undefined) return this.d.checkHeader(req);
    const s = await this.current(req);
    if (!s) return this.d.checkHeader(req);
    if (!SAFE_METHODS.has(req.method ?? "GET")) this.requireCsrf(req, s);
    return { ok: true, key: { id: s.keyId, org: s.org, scope: "admin" } };
  }

  /** The request's live session (activity noted), undefined without a cookie; a 401 when its session ended. */
  async current(req: IncomingMessage): Promise<SessionRecord | undefined> {
    const c = sessionCookieOf(req.headers.cookie);
    if (!c) return undefined;
    const s = await this.d.sessions.find(c.org, c.hash);
    if (!s) throw new AppError("UNAUTHORIZED", "no console session (it ended or was signed out): sign in again");
    const now = this.d.now();
    const state = this.stateOf(s, now);
    if (state !== "ok") {
      void this.d.sessions.remove(s.org, s.hash).catch(() => undefined);
      throw new AppError("UNAUTHORIZED", ENDED_MESSAGE[state]);
    }
    this.d.sessions.touch(s, now);
    return s;
  }

  /** Whether a session (of a long-running answer such as a followed log) still holds. */
  stillValid(s: SessionRecord): boolean {
    return this.stateOf(s, this.d.now()) === "ok";
  }

  private requireCsrf(req: IncomingMessage, s: SessionRecord): void {
    const token = req.headers[CSRF_HEADER];
    if (typeof token !== "string" || !token || !tokens.verify(s.csrfSecret, token))
      throw new AppError(
        "FORBIDDEN",
        `missing or invalid CSRF token: a change made with a console session needs the ${CSRF_HEADER} header ` +
          "from GET /_gantry/v1/session (reload the console)",
      );
  }

  endSessionsOf(org: string, keyId: string): Promise<number> {
    return this.d.sessions.removeForKey(org, keyId);
  }

  /** POST, GET and DELETE /_gantry/v1/session. */
  async handle(req: IncomingMessage, res: ServerResponse, requestId: string): Promise<void> {
    const method = req.method ?? "GET";
    if (method === "POST") return this.signIn(req, res, requestId);
    if (method === "GET" || method === "HEAD") {
      const s = await this.current(req);
      if (!s) throw new AppError("UNAUTHORIZED", "not signed in: POST an admin key to /_gantry/v1/session");
      sendJson(res, 200, this.describe(s), requestId);
      return;
    }
    if (method === "DELETE") {
      const s = await this.current(req);
      if (s) {
        this.requireCsrf(req, s);
        await this.d.sessions.remove(s.org, s.hash);
        this.d.logger.info({ org: s.org, keyId: s.keyId }, "console sign-out");
      }
      res.writeHead(204, {
        "set-cookie": this.cookie(req, ""),
        "x-request-id": requestId,
        "cache-control": "no-store",
      });
      res.end();
      return;
    }
    throw new AppError("METHOD_NOT_ALLOWED", `method ${method} not allowed on ${SESSION_PATH}`, {
      headers: { allow: "GET, HEAD, POST, DELETE" },
    });
  }

  private describe(s: SessionRecord) {
    const key = this.d.keys.byId(s.keyId).find((k) => k.org === s.org);
    return {
      org: s.org,
      keyId: s.keyId,
      keyName: key?.name ?? "",
      csrfToken: tokens.create(s.csrfSecret),
      created: new Date(s.created).toISOString(),
      expires: new Date(s.created + this.limits.maxMs).toISOString(),
      idleTimeoutSeconds: this.limits.idleMs / 1000,
    };
  }

  private cookie(req: IncomingMessage, value: string): string {
    const secure = this.d.clientOf(req).tls;
    return sessionSetCookie(value, { secure, maxAgeSeconds: this.limits.maxMs / 1000 });
  }

  private async signIn(req: IncomingMessage, res: ServerResponse, requestId: string): Promise<void> {
    // A sign-in form posted from another site would sign the browser into someone else's org (login CSRF).
    if (req.headers["sec-fetch-site"] === "cross-site")
      throw new AppError("FORBIDDEN", "sign-in is accepted from the console's own pages only");
    const address = this.d.clientOf(req).address || "-";
    const now = this.d.now();
    const wait = this.throttle.waitMs(address, now);
    if (wait > 0) {
      const seconds = Math.ceil(wait / 1000);
      throw new AppError("RATE_LIMITED", `too many failed sign-ins from this address: try again in ${seconds} s`, {
        headers: { "retry-after": String(seconds) },
      });
    }
    const body = parse(SignInRequestSchema, await readJson(req, this.d.maxBodyBytes));
    const check = this.d.checkKey(body.key.trim());
    if (!check.ok) {
      this.throttle.failed(address, now);
      this.d.logger.info({ reason: check.reason, address }, "console sign-in refused");
      throw new AppError(
        "UNAUTHORIZED",
        check.reason === "expired"
          ? "this key has expired: create a new admin key (gantry keys create --org <org> --scope admin)"
          : check.reason === "malformed"
            ? "that is not a Gantry key: a key looks like <key_id>:<key_secret> (16 hex characters, a colon, 43 more)"
            : "wrong key: no key with this id and secret exists (it may have been revoked)",
        { param: "key" },
      );
    }
    const key = check.key;
    if (key.scope !== "admin")
      throw new AppError(
        "FORBIDDEN",
        `this is an api key of org ${key.org}: it can call the org's apps but not manage the org. Sign in with an ` +
          `admin key (gantry keys create --org ${key.org} --scope admin)`,
        { param: "key" },
      );
    this.throttle.succeeded(address);
    // A fresh session at every sign-in; the one the browser had (if any) ends.
    const old = sessionCookieOf(req.headers.cookie);
    if (old) await this.d.sessions.remove(old.org, old.hash).catch(() => undefined);
    const { token, value } = newToken(key.org);
    const rec: SessionRecord = {
      hash: hashToken(token),
      org: key.org,
      keyId: key.id,
      csrfSecret: tokens.secretSync(),
      created: now,
      lastSeen: now,
    };
    await this.d.sessions.create(rec);
    this.d.logger.info({ org: key.org, keyId: key.id }, "console sign-in");
    sendJson(res, 201, this.describe(rec), requestId, { "set-cookie": this.cookie(req, value) });
  }
}
