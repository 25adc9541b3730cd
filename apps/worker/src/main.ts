// `npm run worker`: serve every enabled retention domain until SIGTERM or SIGINT.
import { ConfigError, readWorkerConfig } from "@reclaim/core";
import { createWorkerService } from "./service";

async function main(): Promise<void> {
  const service = createWorkerService();
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    // Whatever happens while stopping, the process ends: a job still running is then retried
    // by another worker once its lock lapses.
    setTimeout(() => process.exit(1), readWorkerConfig().shutdownTimeoutMs + 15_000).unref();
    service.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
  await service.start();
}

main().catch((error: unknown) => {
  const message =
    error instanceof ConfigError ? error.message : error instanceof Error ? error.stack : String(error);
  console.error(`reclaim-worker: ${message}`);
  process.exit(error instanceof ConfigError ? 2 : 1);
});
