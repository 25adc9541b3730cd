-- Paperclip's workspace lifecycle lock (server/src/services/execution-workspaces.ts,
-- acquireExecutionWorkspaceLifecycleLock): transaction-scoped, one bigint key. Paperclip's
-- reopen, archive and destructive cleanup of a workspace all take it; so does Reclaim.
-- Waits for it. Changing the key text breaks mutual exclusion with the Paperclip server.
-- $1 text: execution workspace id
SELECT pg_advisory_xact_lock(hashtextextended('execution_workspace_lifecycle:' || $1::text, 0))::text AS locked
