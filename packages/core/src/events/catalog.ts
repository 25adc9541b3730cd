/**
 * The events the Paperclip server sends to `POST /v1/events`, one zod schema per type.
 * Domains subscribe by type (`RetentionDomain.events`). The API validates every event
 * against this catalog and rejects the request (400, field named) before anything is
 * recorded.
 */
import { z } from "zod";
import { DAY_MS } from "../clock";
import { storableString, timestamp } from "../input";

/**
 * The longest evidence window (PAPERCLIP_NATIVE_RUNNER_EVIDENCE_RETENTION_DAYS) a domain adds
 * to `writtenAt`: the schema accepts only instants that stay storable after it.
 */
export const MAX_EVIDENCE_DAYS = 36_500;
/** Statuses are Paperclip's short identifiers. */
const status = storableString({ min: 1, max: 100 });

const uuid = z.uuid();
const companyId = uuid.describe("The company the change belongs to");

export const RUN_STATUSES = [
  "queued",
  "scheduled_retry",
  "running",
  "succeeded",
  "interrupted",
  "failed",
  "cancelled",
  "timed_out",
] as const;

/** The statuses of a run that has ended: it can no longer start, write or hold anything. */
export const SETTLED_RUN_STATUSES: ReadonlySet<string> = new Set([
  "succeeded",
  "failed",
  "cancelled",
  "timed_out",
  "interrupted",
] satisfies (typeof RUN_STATUSES)[number][]);

/** What a live native session may be doing; each keeps its backup copy and evidence. */
export const NATIVE_SESSION_LIVE_STATES = ["executing", "initializing", "warm", "closing"] as const;

export const eventSchemas = {
  "native_workspace_sync.folder_created": z
    .object({
      type: z.literal("native_workspace_sync.folder_created"),
      companyId,
      runId: uuid.describe("The run that created <instance>/native-workspace-sync/<runId>/"),
    })
    .describe("A native run created its workspace sync folder"),
  "run.changed": z
    .object({
      type: z.literal("run.changed"),
      companyId,
      runId: uuid,
      status: z.enum(RUN_STATUSES),
      finishedAt: timestamp().optional(),
    })
    .describe("A heartbeat run changed status (for example it finished)"),
  "issue.changed": z
    .object({
      type: z.literal("issue.changed"),
      companyId,
      issueId: uuid,
      status: status.optional(),
      previousStatus: status.optional(),
      parentId: uuid.nullable().optional(),
      previousParentId: uuid.nullable().optional(),
    })
    .describe("An issue was created or updated (status, parent)"),
  "issue.deleted": z
    .object({ type: z.literal("issue.deleted"), companyId, issueId: uuid })
    .describe("An issue was deleted"),
  "workspace.changed": z
    .object({
      type: z.literal("workspace.changed"),
      companyId,
      workspaceId: uuid,
      status: status.optional(),
    })
    .describe("An execution workspace changed (archived, reopened, ...)"),
  "company.deleted": z
    .object({ type: z.literal("company.deleted"), companyId })
    .describe("A company was deleted"),
  // The two events below describe the whole instance, not one company: `companyId` is optional.
  "native_sessions.live": z
    .object({
      type: z.literal("native_sessions.live"),
      companyId: companyId.optional(),
      sessions: z
        .array(
          z
            .object({
              id: storableString({ min: 1, max: 512 }).describe(
                "The session scope: its directory name under durable-sessions/",
              ),
              state: z
                .enum(NATIVE_SESSION_LIVE_STATES)
                .optional()
                .describe("Its live state; omitted for a session listed only for a pending cleanup"),
              cleanupPending: z
                .boolean()
                .optional()
                .describe("A cleanup activation is pending for the session"),
            })
            .refine((s) => s.state !== undefined || s.cleanupPending === true, {
              message: "needs a live state, or cleanupPending: true",
              path: ["state"],
            }),
        )
        // Fits the API's 1 MiB body limit with room to spare.
        .max(10_000),
      reportedAt: timestamp().describe("When the server took this snapshot"),
    })
    .describe(
      "The full set of native sessions live in the Paperclip server right now (replaces the previous report)",
    ),
  "native_sessions.evidence_written": z
    .object({
      type: z.literal("native_sessions.evidence_written"),
      companyId: companyId.optional(),
      kind: z.enum(["continuity_break", "quarantine"]),
      writtenAt: timestamp({ addsUpTo: MAX_EVIDENCE_DAYS * DAY_MS }).describe(
        "When it was written; its evidence window must end by 9999-12-31",
      ),
    })
    .describe("A native session wrote a continuity-break archive or a quarantine entry"),
} as const;

export type EventType = keyof typeof eventSchemas;
export type EventOf<T extends EventType> = z.infer<(typeof eventSchemas)[T]>;
export type ReclaimEvent = { [T in EventType]: EventOf<T> }[EventType];

export const EVENT_TYPES = Object.keys(eventSchemas) as EventType[];

export const eventSchema = z.discriminatedUnion(
  "type",
  Object.values(eventSchemas) as unknown as [
    (typeof eventSchemas)[EventType],
    ...(typeof eventSchemas)[EventType][],
  ],
);

export const eventsBodySchema = z
  .object({ events: z.array(eventSchema).min(1).max(1000) })
  .describe("A batch of changes from the Paperclip server");
