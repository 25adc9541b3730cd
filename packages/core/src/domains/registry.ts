/**
 * The domains this build implements. A domain id listed in ids.ts without an entry here
 * is known (its queue name and API paths are reserved) but not implemented yet.
 */
import { gitRestorePoints } from "./git-restore-points";
import type { DomainId } from "./ids";
import { nativeSessionBackups } from "./native-session-backups";
import { nativeWorkspaceSync } from "./native-workspace-sync";
import { restorePointRetention } from "./restore-point-retention";
import { skillVersionCaches } from "./skill-version-caches";
import { taskDirectories } from "./task-directories";
import type { AnyDomain, DomainControls } from "./types";

export const IMPLEMENTED_DOMAINS: readonly AnyDomain[] = [
  nativeWorkspaceSync,
  skillVersionCaches,
  nativeSessionBackups,
  restorePointRetention,
  taskDirectories,
  gitRestorePoints,
];

export const domainRegistry: ReadonlyMap<DomainId, AnyDomain> = new Map(
  IMPLEMENTED_DOMAINS.map((d) => [d.id, d]),
);

/** A domain's controls as `env` sets them (throws a ConfigError naming a bad variable). */
export function readConfigOf(id: DomainId, env: Record<string, string | undefined>) {
  const domain = domainRegistry.get(id);
  if (!domain) throw new Error(`BUG: ${id} is not implemented`);
  return domain.readConfig(env);
}

/** Every domain's controls as this process reads them, and the ids of the enabled ones. */
export function readDomainConfigs(
  domains: ReadonlyMap<DomainId, AnyDomain>,
  env: Record<string, string | undefined>,
): { configs: Map<DomainId, DomainControls>; enabled: DomainId[] } {
  const configs = new Map<DomainId, DomainControls>();
  for (const [id, domain] of domains) configs.set(id, domain.readConfig(env));
  return { configs, enabled: [...configs].filter(([, c]) => c.enabled).map(([id]) => id) };
}
