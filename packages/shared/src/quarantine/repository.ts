import { realpath } from "node:fs/promises";
import path from "node:path";
import { QuarantineError } from "../errors";
import { runGit } from "./git-command";
import { repositoryEnv } from "./git-env";
import { parseSharedRepository, type SharedRepository } from "./shared-permissions";

export interface RepositoryFacts {
  /** The real object store, absolute and resolved (the common one for a linked worktree). */
  objectsDir: string;
  shared: SharedRepository;
}

/** Where `repo` (a work tree, linked worktree or bare repository) keeps its objects. */
export async function inspectRepository(repo: string, env: NodeJS.ProcessEnv): Promise<RepositoryFacts> {
  const cwd = path.resolve(repo);
  const clean = repositoryEnv(env);
  let objects: string;
  try {
    objects = (await runGit(["rev-parse", "--git-path", "objects"], { cwd, env: clean })).trim();
  } catch (error) {
    throw new QuarantineError("RECLAIM_ERR_QUARANTINE_NOT_A_REPOSITORY", cwd, { cause: error });
  }
  const objectsDir = await realpath(path.resolve(cwd, objects));
  const shared = await runGit(["config", "--get", "core.sharedRepository"], { cwd, env: clean }).then(
    (value) => parseSharedRepository(value),
    () => parseSharedRepository(undefined), // exit 1: unset
  );
  return { objectsDir, shared };
}
