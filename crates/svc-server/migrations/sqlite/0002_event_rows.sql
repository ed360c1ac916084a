-- Event rows without an index on `id` and with a nullable `search` (docs/PERFORMANCE.md):
-- an edge event's id is time-ordered (v7) and carries its `ts`, so the single-event read finds
-- it through (rs, ts); `search` holds only what the columns do not. SQLite cannot drop the
-- index of a UNIQUE column constraint: both tables are rebuilt, rows and `seq` kept (also the
-- AUTOINCREMENT counter of an empty table). This copies every stored event once, at the first
-- start of this version.
CREATE TABLE authorization_events_v2 (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    id         TEXT    NOT NULL,
    rs         TEXT    NOT NULL,
    ts         INTEGER NOT NULL,
    event_type TEXT    NOT NULL,
    severity   TEXT    NOT NULL,
    result     TEXT,
    client_ip  TEXT,
    search     TEXT,
    body       TEXT    NOT NULL
);
INSERT INTO authorization_events_v2 (seq, id, rs, ts, event_type, severity, result, client_ip, search, body)
    SELECT seq, id, rs, ts, event_type, severity, result, client_ip, search, body FROM authorization_events ORDER BY seq;
DELETE FROM sqlite_sequence WHERE name = 'authorization_events_v2';
INSERT INTO sqlite_sequence (name, seq) SELECT 'authorization_events_v2', seq FROM sqlite_sequence WHERE name = 'authorization_events';
DROP TABLE authorization_events;
ALTER TABLE authorization_events_v2 RENAME TO authorization_events;
CREATE INDEX authorization_events_rs_time ON authorization_events (rs, ts);

CREATE TABLE workload_events_v2 (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    id              TEXT    NOT NULL,
    rs              TEXT    NOT NULL,
    ts              INTEGER NOT NULL,
    event_type      TEXT    NOT NULL,
    action          TEXT,
    severity        TEXT    NOT NULL,
    client_workload TEXT,
    server_workload TEXT,
    app_protocol    TEXT,
    user_id         TEXT,
    search          TEXT,
    body            TEXT    NOT NULL
);
INSERT INTO workload_events_v2 (seq, id, rs, ts, event_type, action, severity, client_workload, server_workload, app_protocol, user_id, search, body)
    SELECT seq, id, rs, ts, event_type, action, severity, client_workload, server_workload, app_protocol, user_id, search, body FROM workload_events ORDER BY seq;
DELETE FROM sqlite_sequence WHERE name = 'workload_events_v2';
INSERT INTO sqlite_sequence (name, seq) SELECT 'workload_events_v2', seq FROM sqlite_sequence WHERE name = 'workload_events';
DROP TABLE workload_events;
ALTER TABLE workload_events_v2 RENAME TO workload_events;
CREATE INDEX workload_events_rs_time ON workload_events (rs, ts);
