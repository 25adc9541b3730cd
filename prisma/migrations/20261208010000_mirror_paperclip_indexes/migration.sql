-- Reclaim: the mirror tables Reclaim created (reclaim_created_tables) get Paperclip's own
-- indexes, as packages/db/src/schema/*.ts in paperclipai/paperclip names them, so a statement
-- plans on a mirror (tests, benchmarks, a database without Paperclip) as it does on
-- Paperclip's tables. Only indexes whose columns the mirror has, and no unique ones (a
-- uniqueness the mirror never had would refuse rows it accepts today). Paperclip's own tables
-- are never touched: they have these already.
DO $$
DECLARE i record;
BEGIN
  FOR i IN SELECT * FROM (VALUES
      ('issues', 'issues_company_status_idx', ARRAY['company_id', 'status']),
      ('issues', 'issues_company_parent_idx', ARRAY['company_id', 'parent_id']),
      ('issues', 'issues_company_project_idx', ARRAY['company_id', 'project_id']),
      ('issues', 'issues_company_execution_workspace_idx', ARRAY['company_id', 'execution_workspace_id']),
      ('environment_leases', 'environment_leases_company_execution_workspace_idx', ARRAY['company_id', 'execution_workspace_id']),
      ('environment_leases', 'environment_leases_company_issue_idx', ARRAY['company_id', 'issue_id']),
      ('environment_leases', 'environment_leases_company_last_used_idx', ARRAY['company_id', 'last_used_at']),
      ('issue_recovery_actions', 'issue_recovery_actions_company_source_status_idx', ARRAY['company_id', 'source_issue_id', 'status']),
      ('issue_recovery_actions', 'issue_recovery_actions_company_recovery_issue_idx', ARRAY['company_id', 'recovery_issue_id']),
      ('agent_task_sessions', 'agent_task_sessions_company_agent_updated_idx', ARRAY['company_id', 'agent_id', 'updated_at']),
      ('agent_task_sessions', 'agent_task_sessions_company_task_updated_idx', ARRAY['company_id', 'task_key', 'updated_at']),
      ('execution_workspaces', 'execution_workspaces_company_project_status_idx', ARRAY['company_id', 'project_id', 'status']),
      ('execution_workspaces', 'execution_workspaces_company_project_workspace_status_idx', ARRAY['company_id', 'project_workspace_id', 'status']),
      ('execution_workspaces', 'execution_workspaces_company_source_issue_idx', ARRAY['company_id', 'source_issue_id']),
      ('execution_workspaces', 'execution_workspaces_company_last_used_idx', ARRAY['company_id', 'last_used_at']),
      ('execution_workspaces', 'execution_workspaces_company_branch_idx', ARRAY['company_id', 'branch_name']),
      ('project_workspaces', 'project_workspaces_company_project_idx', ARRAY['company_id', 'project_id']),
      ('project_workspaces', 'project_workspaces_project_primary_idx', ARRAY['project_id', 'is_primary'])
    ) AS v(tbl, name, cols)
  LOOP
    IF EXISTS (SELECT 1 FROM "reclaim_created_tables" WHERE "table_name" = i.tbl)
       AND (SELECT count(*) FROM information_schema.columns
             WHERE table_schema = 'public' AND table_name = i.tbl AND column_name = ANY (i.cols)) = cardinality(i.cols)
    THEN
      EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %I (%s)', i.name, i.tbl,
                     (SELECT string_agg(format('%I', c), ', ' ORDER BY n) FROM unnest(i.cols) WITH ORDINALITY AS u(c, n)));
    END IF;
  END LOOP;
END $$;
