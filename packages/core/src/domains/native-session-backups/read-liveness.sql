-- The Paperclip server's last `native_sessions.live` report (store-liveness.sql), read by
-- every batch.
-- Output: sessions jsonb ([{id, state, cleanupPending?}]), reported_at timestamptz,
-- received_at timestamptz; no row before the first report
SELECT sessions, reported_at, received_at
  FROM reclaim_native_session_liveness
 WHERE instance = 'instance'
