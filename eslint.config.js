// ESLint flat config: typescript-eslint recommended rules and comment width. The layer rules (who may import whom) are
// dependency-cruiser's (.dependency-cruiser.cjs), also run by `npm run lint`.
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
);
