// The package's programmatic API: `import { defineApp } from "gantry"` in an app file.
export { defineApp, isAppDefinition, type AppDefinition, type AppSpec } from "./platform/app-definition.ts";
export type { AuthMode, ModelAppSpec, RolloutStrategy } from "../operator/api/v1alpha1/modelapp.ts";
