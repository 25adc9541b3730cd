-- Paperclip's workspace lifecycle lock (see lifecycle-lock.sql), without waiting.
-- $1 text: execution workspace id
-- Output: acquired boolean
SELECT pg_try_advisory_xact_lock(hashtextextended('execution_workspace_lifecycle:' || $1::text, 0)) AS acquired
