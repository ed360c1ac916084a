-- Event rows without an index on `id` and with a nullable `search` (docs/PERFORMANCE.md):
-- an edge event's id is time-ordered (v7) and carries its `ts`, so the single-event read finds
-- it through (rs, ts); `search` holds only what the columns do not.
ALTER TABLE authorization_events DROP CONSTRAINT authorization_events_id_key;
ALTER TABLE authorization_events ALTER COLUMN search DROP NOT NULL;
ALTER TABLE workload_events DROP CONSTRAINT workload_events_id_key;
ALTER TABLE workload_events ALTER COLUMN search DROP NOT NULL;
