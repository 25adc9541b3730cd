// `npm run scheduler`: the REST service. Refuses to start without RECLAIM_API_TOKEN.
import { ConfigError } from "@reclaim/core";
import { createScheduler } from "./service";

async function main(): Promise<void> {
  const scheduler = await createScheduler();
  const address = await scheduler.listen();
  scheduler.deps.log.info("scheduler listening", { address });
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    scheduler.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}

main().catch((error: unknown) => {
  const message =
    error instanceof ConfigError ? error.message : error instanceof Error ? error.stack : String(error);
  console.error(`reclaim-scheduler: ${message}`);
  process.exit(error instanceof ConfigError ? 2 : 1);
});
