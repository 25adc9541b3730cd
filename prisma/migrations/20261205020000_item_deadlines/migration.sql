-- Reclaim (issue 11): per-item deadlines. The ledger (reclaim_deadlines) says when a domain's
-- job for a company is due; domains that judge items one by one (git workspaces, task
-- directories) also need to know WHICH items are due, so a kept item is looked at again
-- only at its own deadline or when a change wakes it, never by every batch of its company.
--
-- One row per domain and item: due_at NULL means nothing is scheduled (the item waits for an
-- event); `version` grows on every touch, so a job that judged an item writes its verdict
-- only if no event woke the item meanwhile (packages/core/src/ledger/item-deadlines.ts).

CREATE TABLE "reclaim_item_deadlines" (
    "domain" TEXT NOT NULL,
    "item_id" TEXT NOT NULL,
    "company_id" TEXT NOT NULL,
    "reason" TEXT NOT NULL,
    "due_at" TIMESTAMPTZ(6),
    "version" BIGINT NOT NULL DEFAULT 1,
    "updated_at" TIMESTAMPTZ(6) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "reclaim_item_deadlines_pkey" PRIMARY KEY ("domain", "item_id")
);

CREATE INDEX "reclaim_item_deadlines_due_idx" ON "reclaim_item_deadlines" ("domain", "company_id", "due_at")
  WHERE "due_at" IS NOT NULL;
