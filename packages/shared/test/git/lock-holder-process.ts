/**
 * Run by lock-files.test.ts as a separate process: takes the git lock files of the checkout
 * given as argument, says so on stdout, then waits to be killed (SIGKILL: a crashed worker).
 */
import { openSafeRepository, takeGitLocks } from "../../src";

void (async () => {
  const repo = await openSafeRepository(process.argv[2]!);
  await takeGitLocks(repo);
  process.stdout.write("locked\n");
  setInterval(() => undefined, 1000);
})();
