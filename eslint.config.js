// ESLint flat config: typescript-eslint recommended rules and comment width. The layer rules (who may import whom) are
// dependency-cruiser's (.dependency-cruiser.cjs), also run by `npm run lint`.
import js from "@eslint/js";
import tseslint from "typescript-eslint";
import globals from "globals";
import stylistic from "@stylistic/eslint-plugin";

const CATALOGUE_MESSAGE =
  "Read settings through the settings catalogue, not process.env: declare the variable in its process's zod config " +
  "schema (server/config.ts, server/setup/config.ts, server/cli/config.ts, server/gateway/env.ts, operator/env.ts; " +
  "shared ones in server/common/config.ts), parse it at start with parseEnv and pass the value down.";
const NO_ENVIRONMENT_READS = {
  selector: "MemberExpression[object.callee.name='processEnvironment']",
  message: CATALOGUE_MESSAGE,
};

export default tseslint.config(
  { ignores: ["node_modules/**", "charts/**", "crds/**", "dist/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    plugins: { "@stylistic": stylistic },
    rules: {
      // Prettier formats code to 120 columns; this holds comments to the same width (long strings and URLs may pass).
      "@stylistic/max-len": [
        "error",
        { code: 120, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreUrls: true, ignoreRegExpLiterals: true },
      ],
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none" },
      ],
      "@typescript-eslint/consistent-type-imports": "error",
      "no-console": "off",
    },
  },
  {
    // The settings catalogue: every environment variable a process reads is declared once in its process's zod schema
    // and parsed at start (server/common/config.ts). A module that needs a setting receives the parsed value.
    files: ["server/**/*.ts", "operator/**/*.ts"],
    rules: {
      "no-restricted-properties": [
        "error",
        {
          object: "process",
          property: "env",
          message: CATALOGUE_MESSAGE,
        },
      ],
      // processEnvironment() is for parseEnv and for a child process's inherited environment, not for reading.
      "no-restricted-syntax": ["error", NO_ENVIRONMENT_READS],
      "no-restricted-imports": [
        "error",
        {
          paths: ["node:process", "process"].map((name) => ({
            name,
            importNames: ["env"],
            message: CATALOGUE_MESSAGE,
          })),
        },
      ],
    },
  },
  {
    // The catalogue's shared module reads the environment (processEnvironment: for parseEnv, and passed whole to child
    // processes that must inherit it).
    files: ["server/common/config.ts"],
    rules: { "no-restricted-properties": "off" },
  },
  {
    // The engine's native port: node-llama-cpp's private fields are read in server/engine/native/ only (port.ts).
    files: ["server/**/*.ts", "operator/**/*.ts"],
    ignores: ["server/engine/native/**"],
    rules: {
      // One rule, so both restrictions hold (a later config's options replace an earlier one's).
      "no-restricted-syntax": [
        "error",
        NO_ENVIRONMENT_READS,
        {
          selector: "MemberExpression[property.name=/^_(ctx|bindings|llama|model|state)$/]",
          message:
            "node-llama-cpp internals are read behind the native port only (server/engine/native/node-llama-cpp.ts).",
        },
      ],
    },
  },
);
