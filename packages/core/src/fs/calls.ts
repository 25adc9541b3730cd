/**
 * The filesystem calls of the walks (survey, removal, proven directories): synchronous
 * syscalls on the calling thread, in slices (packages/shared's `sliced`: why, and the price).
 */
import {
  lstatSync,
  readdirSync,
  renameSync,
  rmdirSync,
  statSync,
  unlinkSync,
  type Dirent,
  type Stats,
} from "node:fs";
import { sliced } from "@reclaim/shared";

export const lstat = (at: string): Promise<Stats> => sliced(() => lstatSync(at));
/**
 * lstat, or undefined when nothing is at `at` (ENOENT). No exception is made for a missing entry:
 * Node builds one with its stack and message for ~12 µs, five times the syscall, and a sweep
 * asks about many entries that are usually absent (last-use records, nested checkouts, leftovers).
 */
export const lstatIfPresent = (at: string): Promise<Stats | undefined> =>
  sliced(() => lstatSync(at, { throwIfNoEntry: false }));
export const stat = (at: string): Promise<Stats> => sliced(() => statSync(at));
export const readdir = (at: string): Promise<string[]> => sliced(() => readdirSync(at));
/** readdir with each entry's type (d_type: no lstat per name). */
export const readdirTyped = (at: string): Promise<Dirent[]> =>
  sliced(() => readdirSync(at, { withFileTypes: true }));
export const rename = (from: string, to: string): Promise<void> => sliced(() => renameSync(from, to));
export const rmdir = (at: string): Promise<void> => sliced(() => rmdirSync(at));
export const unlink = (at: string): Promise<void> => sliced(() => unlinkSync(at));
