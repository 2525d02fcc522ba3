// Who may post load reports (POST /v1/load): a report scales apps up, so an unauthenticated one would let any pod in
// the cluster wake every app and keep it awake. Gateways send their ServiceAccount token as a bearer token; the
// operator asks the API server who it belongs to (a TokenReview, the same check a kubelet or an aggregated API server
// makes) and accepts only the ServiceAccounts of its config. Chosen over a shared secret in a Secret: nothing to
// generate, distribute or rotate (projected tokens rotate by themselves), and a stolen token is only as good as the
// ServiceAccount, which the cluster admin can see and revoke. Reviews are cached for a minute by the token's hash, so
// a report a second costs one API request a minute per gateway.
import crypto from "node:crypto";
import { AuthenticationV1Api, type KubeConfig } from "@kubernetes/client-node";
import { AppError } from "../server/common/errors.ts";
import type { Logger } from "../server/common/logger.ts";

export interface TokenReviewer {
  /** The authenticated user name of a bearer token (e.g. system:serviceaccount:ns:name), or undefined. */
  review(token: string): Promise<string | undefined>;
}

export function kubeTokenReviewer(kc: KubeConfig): TokenReviewer {
  const api = kc.makeApiClient(AuthenticationV1Api);
  return {
    async review(token) {
      const r = await api.createTokenReview({
        body: { apiVersion: "authentication.k8s.io/v1", kind: "TokenReview", spec: { token } },
      });
      return r.status?.authenticated ? r.status.user?.username : undefined;
    },
  };
}

/** "namespace/name" of a ServiceAccount → the user name its tokens authenticate as. */
export const serviceAccountUser = (ref: string): string => {
  const [namespace, name] = ref.split("/");
  return `system:serviceaccount:${namespace}:${name}`;
};

const CACHE_MS = 60_000;
/** While reviews fail, how long a token's earlier answer is used before asking again. */
const STALE_RETRY_MS = 5_000;
const MAX_CACHED = 1000;

export class LoadReportAuth {
  private readonly allowed: Set<string>;
  private readonly cache = new Map<string, { user: string | undefined; until: number }>();
  private readonly reviewer: TokenReviewer;
  private readonly logger: Logger;
  /** Reviews failed in a row. */
  private failures = 0;

  constructor(reviewer: TokenReviewer, serviceAccounts: readonly string[], logger: Logger) {
    this.reviewer = reviewer;
    this.allowed = new Set(serviceAccounts.map(serviceAccountUser));
    this.logger = logger;
  }

  /** Resolves when the Authorization header carries an allowed ServiceAccount's token; throws 401/403 otherwise. */
  async check(authorization: string | undefined, now = Date.now()): Promise<void> {
    const token = /^bearer\s+(\S+)\s*$/i.exec(authorization ?? "")?.[1];
    if (!token)
      throw new AppError("UNAUTHORIZED", "a load report needs Authorization: Bearer <ServiceAccount token>", {
        headers: { "WWW-Authenticate": "Bearer" },
      });
    const id = crypto.createHash("sha256").update(token).digest("base64url");
    let hit = this.cache.get(id);
    if (!hit || hit.until <= now) {
      let user: string | undefined;
      try {
        user = await this.reviewer.review(token);
        if (this.failures > 0) this.logger.info({ failures: this.failures }, "TokenReview works again");
        this.failures = 0;
      } catch (err) {
        const n = ++this.failures;
        this.logger[n === 1 || n % 100 === 0 ? "warn" : "debug"](
          { err: String(err), failures: n },
          "TokenReview failed",
        );
        // The apiserver is away (it cannot change the token's ServiceAccount meanwhile either): a token it said yes or
        // no to before keeps that answer, asked again in a few seconds, so the gateways' load keeps reaching the
        // autoscaler (an error with a stack trace was logged for every report).
        if (!hit) throw new AppError("UPSTREAM_FAILED", "the token could not be reviewed; try again");
        hit.until = now + STALE_RETRY_MS;
        user = hit.user;
      }
      if (this.cache.size >= MAX_CACHED) this.cache.clear();
      hit = { user, until: now + CACHE_MS };
      this.cache.set(id, hit);
    }
    if (hit.user === undefined)
      throw new AppError("UNAUTHORIZED", "the token is not valid", { headers: { "WWW-Authenticate": "Bearer" } });
    if (!this.allowed.has(hit.user)) throw new AppError("FORBIDDEN", `${hit.user} may not report load`);
  }
}
