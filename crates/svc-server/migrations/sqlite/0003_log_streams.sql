-- Log streams (contract §3.14): one row per stream, written with the stream in its write unit
-- (created with it, gone with it) and by the node that delivers it. `delivered` is the `seq` of
-- the last record of the stream's table (`data_type`) a sink acknowledged: the stored events are
-- the outbox, and delivery resumes after it. `pending_last` / `pending_since`: the transaction
-- sent and not yet acknowledged (retried with the same records, dropped 24 h after its first
-- attempt). The counters are the stream's `…TransactionCount` fields.
CREATE TABLE log_stream_cursors (
    stream        TEXT    PRIMARY KEY,
    data_type     TEXT    NOT NULL,
    delivered     INTEGER NOT NULL,
    pending_last  INTEGER,
    pending_since INTEGER,
    in_progress   INTEGER NOT NULL DEFAULT 0,
    completed     INTEGER NOT NULL DEFAULT 0,
    errored       INTEGER NOT NULL DEFAULT 0,
    updated_at    INTEGER NOT NULL
);
