-- One row of Paperclip's activity log (activity_log.ts), as its logActivity writes them.
-- $1 text: company id, $2 text: actor type, $3 text: actor id, $4 text: action,
-- $5 text: entity type, $6 text: entity id, $7 jsonb: details, $8 timestamptz: created at
INSERT INTO activity_log (company_id, actor_type, actor_id, action, entity_type, entity_id, details, created_at)
VALUES ($1::uuid, $2::text, $3::text, $4::text, $5::text, $6::text, $7::jsonb, $8::timestamptz)
RETURNING id::text AS id
