-- Stores the Paperclip server's `native_sessions.live` report, unless a newer one is
-- already stored (reports can arrive out of order).
-- $1 jsonb: sessions [{id, state, cleanupPending?}]
-- $2 timestamptz: reportedAt (the server's snapshot time)
-- $3 timestamptz: received at (Reclaim's clock)
-- Output: none
INSERT INTO reclaim_native_session_liveness (instance, sessions, reported_at, received_at)
VALUES ('instance', $1::jsonb, $2::timestamptz, $3::timestamptz)
ON CONFLICT (instance) DO UPDATE
   SET sessions = EXCLUDED.sessions, reported_at = EXCLUDED.reported_at, received_at = EXCLUDED.received_at
 WHERE reclaim_native_session_liveness.reported_at <= EXCLUDED.reported_at
