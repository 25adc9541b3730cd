-- Locks the rows a session's expiry depends on, for the rest of the job's transaction, so
-- the Paperclip server cannot resume the session (update its runs, reopen its issues, or
-- read its agent task session) until the decision is committed. Rows are taken in id order
-- within each table.
-- $1 jsonb: {"runIds": [uuid text], "issueIds": [uuid text], "taskSessionIds": [uuid text]}
-- Output: runs, issues, task_sessions (int): how many rows were locked
WITH locked_runs AS (
  SELECT id FROM heartbeat_runs
   WHERE id = ANY (ARRAY(SELECT value::uuid FROM jsonb_array_elements_text($1::jsonb -> 'runIds')))
   ORDER BY id FOR UPDATE
),
locked_issues AS (
  SELECT id FROM issues
   WHERE id = ANY (ARRAY(SELECT value::uuid FROM jsonb_array_elements_text($1::jsonb -> 'issueIds')))
   ORDER BY id FOR UPDATE
),
locked_task_sessions AS (
  SELECT id FROM agent_task_sessions
   WHERE id = ANY (ARRAY(SELECT value::uuid FROM jsonb_array_elements_text($1::jsonb -> 'taskSessionIds')))
   ORDER BY id FOR UPDATE
)
SELECT (SELECT count(*) FROM locked_runs)::int AS runs,
       (SELECT count(*) FROM locked_issues)::int AS issues,
       (SELECT count(*) FROM locked_task_sessions)::int AS task_sessions
