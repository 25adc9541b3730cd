// `npm run build`, also run by `npm ci` / `npm install` (the root package's `prepare`): what
// the services need to start with plain `node`, without tsx or any development dependency.
//   1. the Prisma client (scripts/generate.js), when the schema changed;
//   2. TypeScript compiled to dist/ (tsconfig.build.json; the tree mirrors the sources:
//      dist/apps/scheduler/src/main.js, dist/packages/core/src/..., dist/scripts/migrate.js);
//   3. the files the code reads beside itself (SQL, the console's pages and assets) copied
//      to the same places in dist/;
//   4. dist/node_modules/@reclaim/<package>: how compiled code finds the compiled workspace
//      packages. Node looks for `@reclaim/core` in the node_modules folders above the file that
//      requires it, so from dist/ it finds these before the workspace links in the root
//      node_modules (whose package.json `main` points at the TypeScript sources that tsc,
//      tsx and Jest use in development).
// Needs the development dependencies (typescript); run it before `npm prune --omit=dev`.
"use strict";
const { execFileSync } = require("node:child_process");
const { cpSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } = require("node:fs");
const path = require("node:path");
const { generate } = require("./generate");

const root = path.resolve(__dirname, "..");
const dist = path.join(root, "dist");
/** Source trees compiled to dist/ (tsconfig.build.json), and the workspace packages code imports. */
const SOURCES = ["apps/scheduler/src", "apps/worker/src", "packages/core/src", "packages/shared/src"];
const PACKAGES = { "@reclaim/core": "packages/core", "@reclaim/shared": "packages/shared" };
/** Files beside the code that it reads at run time (by extension), and whole asset folders. */
const ASSETS = [".sql"];
const ASSET_DIRS = ["apps/scheduler/console"];

function copyAssets(dir) {
  for (const entry of readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = path.join(dir, entry.name);
    if (entry.isDirectory()) copyAssets(rel);
    else if (ASSETS.includes(path.extname(entry.name))) {
      mkdirSync(path.join(dist, dir), { recursive: true });
      cpSync(path.join(root, rel), path.join(dist, rel));
    }
  }
}

function build() {
  generate();
  const tsc = path.join(root, "node_modules/typescript/bin/tsc");
  if (!existsSync(tsc)) {
    throw new Error("typescript is not installed: build before `npm prune --omit=dev` (npm ci builds)");
  }
  execFileSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], { cwd: root, stdio: "inherit" });
  for (const dir of SOURCES) copyAssets(dir);
  for (const dir of ASSET_DIRS) {
    rmSync(path.join(dist, dir), { recursive: true, force: true });
    cpSync(path.join(root, dir), path.join(dist, dir), { recursive: true });
  }
  for (const [name, dir] of Object.entries(PACKAGES)) {
    const shim = path.join(dist, "node_modules", name);
    mkdirSync(shim, { recursive: true });
    const target = path.relative(shim, path.join(dist, dir, "src/index.js"));
    writeFileSync(
      path.join(shim, "index.js"),
      `// Written by scripts/build.js: the compiled ${name}.\nmodule.exports = require(${JSON.stringify(target)});\n`,
    );
  }
}

build();
