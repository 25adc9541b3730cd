/** Domain ids, fixed: they name queues, job ids, ledger rows, reports and API paths. */
export const DOMAIN_IDS = [
  "native-workspace-sync",
  "skill-version-caches",
  "native-session-backups",
  "restore-point-retention",
  "git-restore-points",
  "task-directories",
  "isolated-source-rehome",
  "nested-clone-migration",
] as const;

export type DomainId = (typeof DOMAIN_IDS)[number];

export function isDomainId(value: string): value is DomainId {
  return (DOMAIN_IDS as readonly string[]).includes(value);
}
