/**
 * Run by interruption.test.ts as a separate process: one capture of the repository given as
 * argument, which the test ends with SIGTERM while `git add` is blocked.
 */
import { makeRepoHandle } from "./repo-handle";
import { capture } from "./capture";

void capture(makeRepoHandle(process.argv[2]!)).then(
  () => process.exit(3), // never reached: the blocking filter holds git add until SIGTERM
  () => undefined, // the abort: the quarantine module re-raises SIGTERM once cleaned up
);
