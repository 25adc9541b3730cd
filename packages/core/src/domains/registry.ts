/**
 * The domains this build implements. A domain id listed in ids.ts without an entry here
 * is known (its queue name and API paths are reserved) but not implemented yet.
 */
import type { DomainId } from "./ids";
import { nativeSessionBackups } from "./native-session-backups";
import { nativeWorkspaceSync } from "./native-workspace-sync";
import { skillVersionCaches } from "./skill-version-caches";
import type { AnyDomain } from "./types";

export const IMPLEMENTED_DOMAINS: readonly AnyDomain[] = [nativeWorkspaceSync, skillVersionCaches, nativeSessionBackups];

export const domainRegistry: ReadonlyMap<DomainId, AnyDomain> = new Map(IMPLEMENTED_DOMAINS.map((d) => [d.id, d]));
