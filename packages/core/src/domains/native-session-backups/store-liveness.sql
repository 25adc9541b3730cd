-- Stores the Paperclip server's `native_sessions.live` report, unless a newer one is
-- already stored (reports can arrive out of order). A report cannot be newer than its
-- arrival: reportedAt is clamped to the time Reclaim received it, so a server clock running
-- ahead neither keeps a report fresh past RECLAIM_LIVENESS_MAX_AGE_SECONDS nor blocks the
-- correctly dated reports after it (rows stored before the clamp are compared clamped too).
-- $1 jsonb: sessions [{id, state, cleanupPending?}]
-- $2 timestamptz: reportedAt (the server's snapshot time)
-- $3 timestamptz: received at (Reclaim's clock)
-- Output: none
INSERT INTO reclaim_native_session_liveness (instance, sessions, reported_at, received_at)
VALUES ('instance', $1::jsonb, LEAST($2::timestamptz, $3::timestamptz), $3::timestamptz)
ON CONFLICT (instance) DO UPDATE
   SET sessions = EXCLUDED.sessions, reported_at = EXCLUDED.reported_at, received_at = EXCLUDED.received_at
 WHERE LEAST(reclaim_native_session_liveness.reported_at, reclaim_native_session_liveness.received_at)
       <= EXCLUDED.reported_at
