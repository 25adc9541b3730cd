// Preloaded into the Prisma CLI by packages/core/src/db/migrate.ts (node -r).
//
// Workaround: the wasm schema engine of Prisma 6.19 leaves a 10 s timer behind after
// `migrate deploy` (a timeout raced against a query whose loser is never cleared), and the
// CLI exits on success only when the event loop is empty, so every deploy lingered 10 s.
// Timers the engine schedules from WebAssembly are unref'd: they still fire if anything
// else keeps the process alive (an open query holds its socket), they just no longer keep
// a finished CLI running.
"use strict";
const original = global.setTimeout;
global.setTimeout = function setTimeoutFromPrisma(...args) {
  const timer = original.apply(this, args);
  if (typeof timer?.unref === "function" && /wasm:\/\//.test(new Error().stack ?? "")) timer.unref();
  return timer;
};
