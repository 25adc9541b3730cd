/**
 * Paperclip's execution workspaces, as the domains that remove and restore them need them
 * (task directories, git restore points): a platform service, not a domain's private file.
 *
 *   facts.ts        the workspace rows; the issue tree of a workspace and the issues that use
 *                   it (the source issue and descendants bound through execution_workspace_id
 *                   or selecting it as current or pending existing workspace), the latest
 *                   close, the binding, and the live or unresolved consumers (runs, native run
 *                   finalizations, environment and runtime leases, runtime services, recovery
 *                   actions, a reopen not yet consumed) - one query per batch
 *   locks.ts        the source lock and the workspace lifecycle lock, taken as the
 *                   Paperclip server takes them
 *   transitions.ts  archive and reactivate a row as Paperclip does (lifecycle generation,
 *                   reopen-pending flag), and record a protocol's state in its metadata
 *   activity.ts     rows of Paperclip's activity log
 *   reopen/         the reopen route's worker: locks, re-read, dispatch on the workspace's
 *                   kind to the reopener a domain declares
 *
 * docs/paperclip-tables.md maps every table and column read or written here.
 */
export * from "./vocabulary";
export * from "./facts";
export * from "./locks";
export * from "./transitions";
export * from "./activity";
export * from "./reopen";
