// Kubernetes names (RFC 1123 labels): orgs (namespaces), app names, profile names. Pure.

/** A DNS label's form: lowercase letters, digits and '-', starting and ending with a letter or digit. */
export const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Whether `s` is a DNS label: that form, at most 63 characters. */
export const isDnsLabel = (s: string): boolean => s.length <= 63 && DNS_LABEL.test(s);

/** A host name as Ingress rules and HTTPRoutes take it: DNS labels joined by dots, optionally after "*." (any one). */
export const HOST_NAME = /^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** `pattern`, or the empty string (a chart value left unset). */
export const orEmpty = (pattern: RegExp): RegExp => new RegExp(`^$|${pattern.source}`);
