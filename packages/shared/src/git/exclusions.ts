/**
 * What a restore point leaves out, in one place (spec, "Git workspace restore points"):
 *
 *  - untracked and ignored `.env` and `.env.*` files (provisioning recreates them with
 *    current secrets);
 *  - from the ignored-files snapshot: nested `.paperclip-repositories/*` checkouts (they get
 *    their own restore points), `.claude/settings.local.json` (saved with the workspace
 *    contents), and everything inside a regenerable directory.
 *
 * Callers that move these items by rename (rehome, nested-clone conversion) use the same list.
 */

/** Directory names whose contents a build or an install recreates. */
export const REGENERABLE_DIRECTORIES: ReadonlySet<string> = new Set([
  "node_modules",
  "dist",
  "build",
  ".next",
  ".nuxt",
  ".svelte-kit",
  ".turbo",
  ".parcel-cache",
  ".cache",
  "coverage",
  "__pycache__",
  ".pytest_cache",
  ".mypy_cache",
  ".tox",
  ".venv",
  "venv",
  ".gradle",
  "target",
]);

export const NESTED_CHECKOUTS_DIRECTORY = ".paperclip-repositories";
export const CLAUDE_LOCAL_SETTINGS = ".claude/settings.local.json";

/** `.env` or `.env.<anything>`, in any directory. */
export function isEnvFile(relPath: string): boolean {
  const name = relPath.slice(relPath.lastIndexOf("/") + 1);
  return name === ".env" || name.startsWith(".env.");
}

/** True when an ignored entry (file, link or directory) stays out of the ignored snapshot. */
export function isLeftOutOfIgnored(relPath: string, isDirectory: boolean): boolean {
  const parts = relPath.split("/");
  if (parts[0] === NESTED_CHECKOUTS_DIRECTORY) return true;
  if (relPath === CLAUDE_LOCAL_SETTINGS) return true;
  if (!isDirectory && isEnvFile(relPath)) return true;
  // A regenerable directory itself, or anything below one.
  const dirs = isDirectory ? parts : parts.slice(0, -1);
  return dirs.some((name) => REGENERABLE_DIRECTORIES.has(name));
}
