-- Reclaim's lock of one shared clone (spec, "Nested project repository worktrees": adding a
-- worktree, fetching and removing registrations are serialized per shared clone): a reopen
-- that re-clones, re-adds a worktree and imports a bundle into the clone, and the removal of
-- an expired checkout's registrations and branches, hold it. Transaction-scoped; a caller
-- takes the locks of all the clones it needs at once, in path order, so two jobs never wait
-- for each other's.
-- $1 text: the shared clone's absolute path (git's real path of its top level)
SELECT pg_advisory_xact_lock(hashtextextended('reclaim_git_shared_clone:' || $1::text, 0))::text AS locked
