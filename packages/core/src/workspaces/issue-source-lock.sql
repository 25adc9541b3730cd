-- The issue's source lock: the row lock on the issue (SELECT ... FOR UPDATE), which every
-- Paperclip issue write (status, parent, binding) waits for and which Paperclip's workspace
-- paths take on a source issue before they change it (docs/paperclip-tables.md). Held until
-- the transaction ends. Waits for it.
-- $1 text: issue id, $2 text: company id
-- Output: one row {id} when the issue exists (it is then locked by this transaction).
SELECT id::text AS id FROM issues WHERE id = $1::uuid AND company_id = $2::uuid FOR UPDATE
