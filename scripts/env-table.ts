// Prints the README's configuration tables from the option definitions themselves
// (`npx tsx scripts/env-table.ts`); a test checks the README lists every variable.
import {
  domainRegistry,
  schedulerOptions,
  serviceOptions,
  workerOptions,
  type Option,
} from "../packages/core/src";

function table(title: string, options: Record<string, Option<unknown>>): string {
  const rows = Object.values(options).map(
    (o) =>
      `| \`${o.env}\` | ${o.defaultText === undefined ? "(required)" : `\`${o.defaultText}\``}${o.unit ? ` ${o.unit}` : ""} | ${o.description} |`,
  );
  return [`**${title}**`, "", "| Variable | Default | Effect |", "| --- | --- | --- |", ...rows, ""].join(
    "\n",
  );
}

const parts = [
  table("Both services", serviceOptions),
  table("Scheduler", schedulerOptions),
  table("Worker", workerOptions),
  ...[...domainRegistry.values()].map((d) => table(`${d.title} (\`${d.id}\`)`, d.options)),
];
process.stdout.write(parts.join("\n"));
