/**
 * Reading a directory's names, and the one UUID pattern its entries are matched against
 * (`UUID_NAME` for a run, skill or version folder; `UUID_PATTERN` inside a larger name).
 */
import { readdir } from "node:fs/promises";
import { errnoCode } from "@reclaim/shared";

export { UUID_NAME, UUID_PATTERN } from "@reclaim/shared";

/**
 * The names in `dir`, unsorted; none when it does not exist or is not a directory (ENOENT,
 * ENOTDIR): a folder that was never created, or was removed meanwhile, holds nothing.
 */
export async function names(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (error) {
    const code = errnoCode(error);
    if (code === "ENOENT" || code === "ENOTDIR") return [];
    throw error;
  }
}
