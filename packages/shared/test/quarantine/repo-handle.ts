import path from "node:path";
import { git, type Repo } from "./git-fixture";

/** A Repo for an existing work tree. */
export function makeRepoHandle(dir: string): Repo {
  return { dir, objects: path.join(dir, ".git", "objects"), git: (args, input) => git(dir, args, input) };
}
