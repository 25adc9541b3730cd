/**
 * Run by safe-git.test.ts as a process of its own (its TMPDIR given): prints the empty
 * directory safe git runs its commands with, then, given a checkout as argument, commits
 * everything changed in it through the safe runner.
 */
import { emptyDir, openSafeRepository } from "../../src/git/safe-git";

void (async () => {
  process.stdout.write(`${emptyDir()}\n`);
  const checkout = process.argv[2];
  if (checkout) await (await openSafeRepository(checkout)).git(["commit", "-q", "-a", "-m", "probe"]);
})();
