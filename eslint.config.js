// Lint: typescript-eslint's recommended rules; formatting is prettier's job.
const tseslint = require("typescript-eslint");

module.exports = tseslint.config(
  { ignores: ["**/node_modules/**", "**/generated/**", "**/dist/**", "coverage/**"] },
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/no-require-imports": "off",
    },
  },
);
