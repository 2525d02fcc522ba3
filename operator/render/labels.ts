// Labels and owner references of everything the operator creates. Pure.
import { APP_LABEL, MANAGED_BY } from "../api/v1alpha1/labels.ts";
import { API_VERSION, KIND } from "../api/v1alpha1/modelapp.ts";

export { APP_LABEL, MANAGED_BY } from "../api/v1alpha1/labels.ts";
export const FIELD_MANAGER = "gantry-operator";
export const SPEC_HASH_ANNOTATION = "gantry.dev/spec-hash";

export interface AppIdentity {
  name: string;
  namespace: string;
  uid: string;
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** Labels that select an app's pods (immutable in a Deployment: never add to them). */
export const selectorLabels = (app: Pick<AppIdentity, "name">): Record<string, string> => ({
  [APP_LABEL]: app.name,
  "app.kubernetes.io/managed-by": MANAGED_BY,
});

/** Standard labels of an app's objects. */
export const appLabels = (app: Pick<AppIdentity, "name">, component: string): Record<string, string> => ({
  "app.kubernetes.io/name": "gantry",
  "app.kubernetes.io/instance": app.name,
  "app.kubernetes.io/component": component,
  ...selectorLabels(app),
});

/** The label selector string of an app's pods (status.selector, for the scale subresource). */
export const selectorString = (app: Pick<AppIdentity, "name">): string =>
  Object.entries(selectorLabels(app))
    .map(([k, v]) => `${k}=${v}`)
    .join(",");

/** The owner reference that makes the app the controller of an object (garbage collected with it). */
export const controllerRef = (app: AppIdentity): OwnerReference => ({
  apiVersion: API_VERSION,
  kind: KIND,
  name: app.name,
  uid: app.uid,
  controller: true,
  blockOwnerDeletion: true,
});

/** A plain owner reference: the object lives while any of its owners does (shared model volumes). */
export const ownerRef = (app: AppIdentity): OwnerReference => ({
  apiVersion: API_VERSION,
  kind: KIND,
  name: app.name,
  uid: app.uid,
});
