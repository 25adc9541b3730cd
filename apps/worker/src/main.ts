// `npm run worker`: serve every enabled retention domain until SIGTERM or SIGINT.
import { ConfigError } from "@reclaim/core";
import { createWorkerService } from "./service";

async function main(): Promise<void> {
  const service = createWorkerService();
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
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
