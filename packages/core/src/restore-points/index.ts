/**
 * The restore-point ledger: a platform service, not a domain's private file. The Paperclip
 * server uses it through the scheduler API (apps/scheduler/src/routes/restore-points/, one
 * route per operation), and domains that capture or retire restore points use it in-process.
 * One file per operation, like the routes. Every operation is scoped to a company: a
 * restore point of another company does not exist for the caller (404).
 *
 * Lifecycle, from the caller's side:
 *   register     -> `pending`, with the storage key to seal into (company-scoped, unique)
 *   (the server seals and uploads the object to that key)
 *   activate     -> `active`, only after Reclaim read the stored object back and its SHA-256
 *                   and size, and its key header's format version and key fingerprint, match
 *                   what the caller declares; due for review at once, so a closed tree starts
 *                   its retention period
 *   supersede    -> `superseded` (a newer restore point replaced it); its object is deleted
 *   request deletion -> `delete_requested`; a `pending` one waits for the capture grace,
 *                   because its capture may still be writing the object
 * An `expiring` restore point can be neither superseded nor deleted by request: its expiry
 * hook runs first, then the worker deletes it. Repeating a call that already took effect
 * answers with the row as it is (safe retries).
 * Each operation returns the deadlines it makes due; the route records and schedules them.
 */
export * from "./vocabulary";
export * from "./view";
export { storageFor } from "../storage";
export { readBack, type StoredFacts } from "./read-back";
export { findRestorePoint } from "./find";
export { registerRestorePoint, type RegisterInput } from "./register";
export { activateRestorePoint, recordActivation, verifyStored, type ActivateInput } from "./activate";
export { supersedeRestorePoint } from "./supersede";
export { requestRestorePointDeletion } from "./request-deletion";
export { listRestorePoints, type ListInput } from "./list";
