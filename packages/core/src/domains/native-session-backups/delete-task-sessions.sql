-- Removes the agent task sessions that point at expired native sessions, so a reopened
-- issue starts a fresh native session instead of resuming one whose copy is gone.
-- $1 jsonb: array of agent_task_sessions ids (uuid text)
-- Output: id text, one row per deleted task session
DELETE FROM agent_task_sessions
 WHERE id = ANY (ARRAY(SELECT value::uuid FROM jsonb_array_elements_text($1::jsonb)))
RETURNING id::text AS id
