-- Reclaim: the ledger keeps one index, its primary key (domain, company_id, reason). Every
-- statement that reads or writes the ledger asks for a key's rows (the claim, the settlement,
-- the queue sync), which only the primary key finds without reading others. The index
-- (domain, due_at) served none of them better, and where the statistics could not tell the two
-- apart (a domain they had not seen yet) the planner took it for a claim or a settlement and
-- read every row of the domain that was due: a burst of N keys cost N x N row reads (issue 14,
-- packages/core/test/deadlines.test.ts). Listings sorted by due time sort the ledger instead.
DROP INDEX IF EXISTS "reclaim_deadlines_domain_due_at_idx";
