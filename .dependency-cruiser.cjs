// The layer rules of docs/architecture (the dependency rule of ARCHITECTURE.md), checked by `npm run lint`.
// A wrong import fails with the rule's name and comment; `npx depcruise server operator` shows every violation.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment:
        "Import cycles make load order matter and layers meaningless: break the cycle (move the shared part down).",
      from: {},
      to: { circular: true },
    },
    {
      name: "store-below-hub-engine-http",
      severity: "error",
      comment:
        "server/store is the model store: it imports neither server/hub, server/engine, server/http nor server/api. " +
        "Its own types (model spec, stored options) live in server/store.",
      from: { path: "^server/store/" },
      to: { path: "^server/(hub|engine|http|api)/" },
    },
    {
      name: "render-is-pure",
      severity: "error",
      comment: "operator/render is pure and takes its own RenderConfig: it does not import operator/config.ts.",
      from: { path: "^operator/render/" },
      to: { path: "^operator/config\\.ts$" },
    },
    {
      name: "operator-imports-only-common",
      severity: "error",
      comment:
        "operator/ imports only server/common/ and its own code; operator/chart/ (the Helm values schema, build time " +
        "only) also picks the gateway's config schema.",
      from: { path: "^operator/", pathNot: "^operator/chart/" },
      to: { path: "^(server/(?!common/)|test/|examples/)" },
    },
    {
      name: "chart-values-imports-only-config-schemas",
      severity: "error",
      comment: "operator/chart/ reads the gateway's config schema only.",
      from: { path: "^operator/chart/" },
      to: { path: "^(server/(?!common/|gateway/config\\.ts$)|test/|examples/)" },
    },
    {
      name: "server-imports-only-operator-api",
      severity: "error",
      comment:
        "server/ imports only operator/api/ (the ModelApp schema); the process entry point " +
        "server/cli/processes/operator.ts is the one place that starts the operator.",
      from: { path: "^server/", pathNot: "^server/cli/processes/operator\\.ts$" },
      to: { path: "^operator/(?!api/)" },
    },
    {
      name: "server-no-test-code",
      severity: "error",
      comment: "Shipped code never imports test code.",
      from: { path: "^(server|operator)/" },
      to: { path: "^test/" },
    },
    {
      name: "cli-client-commands-over-http",
      severity: "error",
      comment:
        "The CLI's client commands (server/cli/commands/) reach the server over HTTP only (server/api/client.ts): " +
        "no server/engine, server/store, server/hub or server/http. Processes live in server/cli/processes/.",
      from: { path: "^server/cli/commands/" },
      to: { path: "^server/(engine|store|hub|http)/|^server/serve\\.ts$" },
    },
    // A request goes down the gateway's steps (server/gateway/1-dispatch … 5-account): a step imports later steps and
    // the shared files (routes.ts, context.ts, errors.ts, ...), never an earlier step, pipeline.ts or gateway.ts.
    ...[1, 2, 3, 4, 5].map((n) => ({
      name: `gateway-step-${n}-never-calls-back-up`,
      severity: "error",
      comment:
        "A request goes down the gateway's steps (1-dispatch … 5-account); pipeline.ts runs them in order. A step " +
        "never imports an earlier step, pipeline.ts or gateway.ts: move what both need into a shared file or a later step.",
      from: { path: `^server/gateway/${n}-` },
      to: { path: `^server/gateway/(${n > 1 ? `[1-${n - 1}]-|` : ""}pipeline\\.ts$|gateway\\.ts$)` },
    })),
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^(node_modules|dist)/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { extensions: [".ts", ".js", ".json"] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
