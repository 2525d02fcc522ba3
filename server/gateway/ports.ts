// The gateway core's seams. The request pipeline (gateway.ts) needs only these small interfaces: where apps and their
// pods are, which keys exist, where usage goes and who hears about load. The cluster implementations watch Kubernetes
// (kube/); memory.ts holds in-process ones (one app, a local upstream, keys in a Map) for a one-off local server, the
// benchmark and tests. See docs/gateway.md.
import type { AuthMode, ModelAppSpec } from "../../operator/api/v1alpha1/modelapp.ts";
import type { KeyRecord, KeyScope } from "./2-authenticate/api-keys.ts";
import type { RequestUsage, UsageRow } from "./5-account/usage.ts";

/** An app as the gateway routes to it. */
export interface AppInfo {
  org: string;
  name: string;
  auth: AuthMode;
  /** Identity of this incarnation (a deleted and re-created app is another one). */
  uid: string;
  /** Set when the app cannot become ready without a change (bad spec, model not found, unschedulable...). */
  failed?: { reason: string; message: string };
  /** For the management API: the model the app's spec names, and the name requests send as `model`. */
  model?: string;
  servedModel?: string;
  url?: string;
  ready?: { status: string; reason: string; message: string };
  replicas?: number;
  readyReplicas?: number;
  /** For the console: scaling bounds, every condition, and whether the app is being deleted. */
  minReplicas?: number;
  maxReplicas?: number;
  conditions?: Array<{ type: string; status: string; reason: string; message: string; lastTransitionTime?: string }>;
  deleting?: boolean;
  /** How requests are spread over the app's pods (spec.loadBalancing); LeastLoad when absent. */
  loadBalancing?: ModelAppSpec["loadBalancing"];
}

/** A pod of an app, as its EndpointSlice lists it. */
export interface Endpoint {
  /** host:port, unique among the app's endpoints. */
  id: string;
  /** http://host:port */
  origin: string;
  /** The pod passed its readiness probe (and is not terminating). */
  ready: boolean;
  /** The pod's name, when the EndpointSlice names it (logs and metrics say which pod served a request). */
  pod?: string;
}

export interface AppSource {
  /** True once the first listing is complete (/readyz). */
  readonly synced: boolean;
  get(org: string, name: string): AppInfo | undefined;
  list(org: string): AppInfo[];
  endpoints(org: string, name: string): readonly Endpoint[];
  /** Called after any change of an app or its endpoints (wakes held requests, fails requests of deleted apps). */
  onChange(fn: (org: string, name: string) => void): void;
}

export interface CreatedKey {
  record: KeyRecord;
  /** `<key_id>:<key_secret>`, returned once. */
  key: string;
}

export interface KeyStore {
  readonly synced: boolean;
  /** Every stored key with this id (ids are random, but a namespace admin could copy one: all are checked). */
  byId(id: string): readonly KeyRecord[];
  list(org: string): KeyRecord[];
  create(org: string, opts: { scope: KeyScope; name?: string; expires?: Date }): Promise<CreatedKey>;
  /** False when the org has no such key. */
  revoke(org: string, id: string): Promise<boolean>;
}

export interface UsageStore {
  readonly synced: boolean;
  record(u: RequestUsage): void;
  /** Hourly rows of an org whose hour overlaps [from, to). */
  query(org: string, from: number, to: number): UsageRow[];
  /** Writes what is pending (graceful shutdown). */
  flush(): Promise<void>;
}

export interface LoadSink {
  /** Something changed that the autoscaler should hear about now (a request is held for an app). */
  wake(): void;
  /**
   * Why nothing this gateway reports can start a replica now (no operator configured, or the operators refuse its
   * reports), with the fix; undefined while reports are accepted (or not answered yet).
   */
  readonly cannotWake?: string | undefined;
  /** Called whenever `cannotWake` changes. */
  onWakeChange?(fn: () => void): void;
}
