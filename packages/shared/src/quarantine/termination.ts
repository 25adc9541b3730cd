/**
 * SIGTERM while captures are live: every live capture is aborted (its git processes are
 * killed, its quarantine removed; a capture that is publishing finishes publishing first),
 * and once all have settled the signal's default action is restored and the signal raised
 * again, so the process still ends as SIGTERM says. If the application has SIGTERM handlers
 * of its own, they decide when to exit and the signal is not raised again.
 *
 * The handler is installed only while a capture is live, so an idle process keeps Node's
 * default SIGTERM behaviour.
 */
import { QuarantineError } from "../errors";

interface LiveCapture {
  abort(reason: QuarantineError): void;
  settled: Promise<void>;
}

const live = new Set<LiveCapture>();
let terminating = false;

function onSigterm(): void {
  terminating = true;
  for (const capture of live) capture.abort(new QuarantineError("RECLAIM_ERR_QUARANTINE_ABORTED", "SIGTERM"));
  void Promise.allSettled([...live].map((c) => c.settled)).then(() => {
    process.removeListener("SIGTERM", onSigterm);
    if (process.listenerCount("SIGTERM") === 0) process.kill(process.pid, "SIGTERM");
  });
}

/** Registers a live capture until `settled` resolves; aborts it at once if SIGTERM already came. */
export function registerLiveCapture(capture: LiveCapture): void {
  if (terminating) {
    capture.abort(new QuarantineError("RECLAIM_ERR_QUARANTINE_ABORTED", "SIGTERM"));
  }
  if (live.size === 0 && !terminating) process.on("SIGTERM", onSigterm);
  live.add(capture);
  void capture.settled.finally(() => {
    live.delete(capture);
    if (live.size === 0 && !terminating) process.removeListener("SIGTERM", onSigterm);
  });
}
