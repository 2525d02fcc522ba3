// What the management API changes or reads of an app beyond the watch caches: its scaling bounds, its deletion and
// its pods' logs (the operations of `gantry apps scale/delete/logs`). kube/app-operations.ts does them through the API
// server; a gateway without a cluster has none (the routes answer 501).

export interface LogOptions {
  tail: number;
  follow: boolean;
  container: "server" | "prepare";
}

export interface AppAdmin {
  /** Sets spec.scaling bounds; false when the org has no such app. */
  scale(org: string, app: string, bounds: { minReplicas?: number; maxReplicas?: number }): Promise<boolean>;
  /** The model download's last progress line while the app pulls its model (undefined otherwise). */
  pullProgress(org: string, app: string): Promise<string | undefined>;
  /** Deletes the app (its pods go with it); false when the org has no such app. */
  delete(org: string, app: string): Promise<boolean>;
  /**
   * Sends the last `tail` lines of each of the app's pods' `container` log to `onLine`, then (follow) new ones as they
   * come, until the logs end or `signal` aborts. Rejects with an AppError (404 no app, 409 no pods).
   */
  logs(
    org: string,
    app: string,
    o: LogOptions,
    onLine: (pod: string, line: string) => void,
    signal: AbortSignal,
  ): Promise<void>;
}
