/**
 * One Jest run over every workspace. Tests talk to the real PostgreSQL, Redis, git and
 * filesystem; the global setup builds a migrated template database once per run and each
 * test file clones its own database from it (see packages/testkit).
 * @swc/jest instead of ts-jest: the same suite ran ~5x faster (../shared/notes/toolchain.md);
 * type checking is `npm run typecheck`.
 */
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: "node",
  roots: ["<rootDir>/apps", "<rootDir>/packages"],
  testMatch: ["**/test/**/*.test.ts"],
  transform: {
    "^.+\\.ts$": [
      "@swc/jest",
      { jsc: { parser: { syntax: "typescript" }, target: "es2022" }, module: { type: "commonjs" } },
    ],
  },
  globalSetup: "<rootDir>/packages/testkit/src/global-setup.ts",
  globalTeardown: "<rootDir>/packages/testkit/src/global-teardown.ts",
  // Two cores on the reference machine; every file has its own database and Redis prefix.
  maxWorkers: 2,
  testTimeout: 60000,
  // Child processes (scheduler, workers) are always stopped by the tests themselves.
  forceExit: false,
};
