// ESLint flat config: typescript-eslint recommended rules plus the design's dependency rule
// (operator/ imports only server/common/ and the pure Modelfile parser; server/ imports only operator/api/).
import js from "@eslint/js";
import tseslint from "typescript-eslint";
import globals from "globals";
import stylistic from "@stylistic/eslint-plugin";

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
    files: ["operator/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              regex: "^(\\.\\./)+server/(?!common/|modelfile/)",
              message: "operator/ may import only server/common/ and the pure server/modelfile/",
            },
          ],
        },
      ],
    },
  },
  {
    files: ["server/**/*.ts"],
    ignores: ["server/cli/commands/operator.ts"], // the CLI composition root starts the operator
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            { regex: "^(\\.\\./)+operator/(?!api/)", message: "server/ may import only operator/api/" },
            { regex: "^(\\.\\./)+test/", message: "server/ must not import test code" },
          ],
        },
      ],
    },
  },
);
