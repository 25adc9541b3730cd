-- Everything the eviction rules need to know about a batch of cached versions of one
-- company, in one query (one round trip per batch, however many versions). Runs inside the
-- job's transaction holding the company skill lock, so pins and current versions cannot
-- change between this read and the renames.
-- $1 text: company id (uuid)
-- $2 jsonb: array of {"skillId": uuid text, "versionId": uuid text}
-- $3 integer: PAPERCLIP_SKILL_VERSION_RETENTION_KEEP (newest versions kept per skill)
-- $4 text[]: the pin rules' source tables (rules.ts SOURCES)
-- Output, one row per input entry:
--   skill_id, version_id
--   version_exists, version_matches  a company_skill_versions row with this id exists / for this company and skill
--   is_current                       a skill of the company has it as current_version_id
--   newest_kept                      fewer than $3 versions of its skill have a higher revision_number
--   active_run_pin                   a run pin of an active run (not succeeded/failed/cancelled/timed_out/interrupted) names it
--   recovery_pin                     an unsettled recovery pin (settled_at null) names it
--   agent_pin                        an agent pins it explicitly
--   package_kind, package_storage_key, package_byte_size (text), package_recipe,
--   package_externally_durable       how the version can be rebuilt
--                                    (company_skill_version_packages; null: nothing recorded)
--   run_selection_unknown            (same on every row) an active run of the company has a pin without a version
--   recovery_selection_unknown       (same on every row) an unsettled recovery pin has no version
--   unwritten_tables                 (same on every row) which of $4 nothing but Reclaim writes here:
--                                    the rule of sources/unwritten-tables.sql, read in this round trip
-- Works on Paperclip's full tables and on Reclaim's mirror alike. Each entry's version and package
-- are read by their keys, one lookup each (lateral subqueries, OFFSET 0 keeps them from being
-- joined otherwise): a join could be planned as a scan of every version and package of the
-- instance, and the statement is prepared once per connection (queries.ts), its plan kept.
WITH entries AS (
  SELECT DISTINCT e ->> 'skillId' AS skill_id, e ->> 'versionId' AS version_id
    FROM jsonb_array_elements($2::jsonb) e
),
active_runs AS (
  SELECT r.id FROM heartbeat_runs r
   WHERE r.company_id = $1::uuid
     AND r.status NOT IN ('succeeded', 'failed', 'cancelled', 'timed_out', 'interrupted')
),
active_pins AS (
  SELECT p.company_skill_version_id AS version_id
    FROM company_skill_run_pins p JOIN active_runs r ON r.id = p.heartbeat_run_id
   WHERE p.company_id = $1::uuid
),
unsettled_recoveries AS (
  SELECT p.company_skill_version_id AS version_id
    FROM company_skill_recovery_pins p
   WHERE p.company_id = $1::uuid AND p.settled_at IS NULL
),
company AS (
  SELECT EXISTS (SELECT 1 FROM active_pins WHERE version_id IS NULL) AS run_selection_unknown,
         EXISTS (SELECT 1 FROM unsettled_recoveries WHERE version_id IS NULL) AS recovery_selection_unknown,
         ARRAY(SELECT t.table_name::text
                 FROM reclaim_created_tables t
                WHERE t.table_name = ANY($4::text[])
                  AND NOT EXISTS (SELECT 1 FROM reclaim_created_tables p WHERE p.table_name = 'heartbeat_runs')
              ) AS unwritten_tables
)
SELECT e.skill_id,
       e.version_id,
       v.id IS NOT NULL AS version_exists,
       COALESCE(v.company_id = $1::uuid AND v.company_skill_id = e.skill_id::uuid, false) AS version_matches,
       EXISTS (SELECT 1 FROM company_skills s
                WHERE s.company_id = $1::uuid AND s.current_version_id = e.version_id::uuid) AS is_current,
       COALESCE(v.id IS NOT NULL AND (SELECT count(*) FROM company_skill_versions w
                                       WHERE w.company_skill_id = v.company_skill_id
                                         AND w.revision_number > v.revision_number) < $3::int, false) AS newest_kept,
       EXISTS (SELECT 1 FROM active_pins p WHERE p.version_id = e.version_id::uuid) AS active_run_pin,
       EXISTS (SELECT 1 FROM unsettled_recoveries p WHERE p.version_id = e.version_id::uuid) AS recovery_pin,
       EXISTS (SELECT 1 FROM company_skill_agent_pins a
                WHERE a.company_id = $1::uuid AND a.company_skill_version_id = e.version_id::uuid) AS agent_pin,
       p.kind AS package_kind,
       p.storage_key AS package_storage_key,
       p.byte_size::text AS package_byte_size,
       p.recipe AS package_recipe,
       p.externally_durable AS package_externally_durable,
       c.run_selection_unknown,
       c.recovery_selection_unknown,
       c.unwritten_tables
  FROM entries e
  CROSS JOIN company c
  LEFT JOIN LATERAL (SELECT id, company_id, company_skill_id, revision_number
                       FROM company_skill_versions
                      WHERE id = e.version_id::uuid
                     OFFSET 0) AS v ON true
  LEFT JOIN LATERAL (SELECT kind, storage_key, byte_size, recipe, externally_durable
                       FROM company_skill_version_packages
                      WHERE company_skill_version_id = e.version_id::uuid AND company_id = $1::uuid
                     OFFSET 0) AS p ON true
