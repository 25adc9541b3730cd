-- Reclaim: the records of confirmed `.retiring-*` copies (reclaim_confirmed_retirements, Reclaim's
-- own) in path order by code point, so a `failover-backups/` folder's records are one range of an
-- index whatever the database's collation (confirmed-retirements.sql). The primary key's order
-- is the database's collation, where the paths under a folder need not be one range: the
-- statement read the whole table for every batch that finished leftovers (20,000 records: about
-- 250 ms a batch). Prisma's schema cannot say COLLATE in an index; it is this migration's.
CREATE INDEX IF NOT EXISTS "reclaim_confirmed_retirements_path_c_idx"
  ON "reclaim_confirmed_retirements" ("path" COLLATE "C");
