// Labels that other processes rely on to find what the operator creates (the gateway selects the apps' EndpointSlices
// by them: the EndpointSlice controller copies a Service's labels onto its slices). Part of the API: renaming one
// breaks running gateways.

/** `app.kubernetes.io/managed-by` of every object the operator creates. */
export const MANAGED_BY = "gantry-operator";
/** Names the ModelApp an object (pod, Service, EndpointSlice) belongs to. */
export const APP_LABEL = "gantry.dev/modelapp";
/** The label selector of everything the operator manages. */
export const MANAGED_SELECTOR = `app.kubernetes.io/managed-by=${MANAGED_BY}`;
