-- One stored row per edge request (issue 19 part 2): the request's events (authorization and
-- workload, contract §3.24, §3.25, §4.11) live in one row of `edge_requests`, with what they
-- share (resource set, time, client IP, and for authorization events their `meta.contextId`,
-- `clientRequest` and `environment`) stored once. `authorization_events` and `workload_events`
-- become views that expand it: one row per event, with the columns the lists filter and sort on,
-- `seq` = request seq × 16 + the event's index in the request (a request holds ≤ 16 events), and
-- `rseq` / `n` (the request's seq, the index) for reads that follow the primary key.
--
-- `na` / `nw`: how many authorization / workload events the request holds (a list's total without
-- a filter on the events' own fields is their sum, no JSON read). `meta`: a JSON array with one
-- small object per event, the fields the lists filter on: `k` (`a` authorization, `w` workload),
-- `id`, `t` event type, `s` severity, `r` result (authorization) or action (workload), `q` search
-- text; workload events also `cw`, `sw`, `p`, `u` (client / server workload, application protocol,
-- user id). `bodies`: the bodies as stored, in the same order (an authorization event's without
-- the shared parts when `shared` is set). `meta` comes before the large columns, so a filtered
-- count reads and parses only it.
CREATE TABLE edge_requests (
    seq       INTEGER PRIMARY KEY AUTOINCREMENT,
    rs        TEXT    NOT NULL,
    ts        INTEGER NOT NULL,
    na        INTEGER NOT NULL,
    nw        INTEGER NOT NULL,
    client_ip TEXT,
    meta      TEXT    NOT NULL,
    shared    TEXT,
    bodies    TEXT    NOT NULL
);

-- Existing events: one request row each, authorization events at even request seqs and workload
-- events at odd ones (old seq × 2, × 2 + 1), so a log stream's cursor maps exactly (below).
INSERT INTO edge_requests (seq, rs, ts, na, nw, client_ip, meta, shared, bodies)
    SELECT seq * 2, rs, ts, 1, 0, client_ip,
           json_array(json_object('k', 'a', 'id', id, 't', event_type, 's', severity, 'r', result,
                                  'q', search)),
           NULL, json_array(json(body))
    FROM authorization_events;
INSERT INTO edge_requests (seq, rs, ts, na, nw, client_ip, meta, shared, bodies)
    SELECT seq * 2 + 1, rs, ts, 0, 1, NULL,
           json_array(json_object('k', 'w', 'id', id, 't', event_type, 's', severity, 'r', action,
                                  'cw', client_workload, 'sw', server_workload, 'p', app_protocol,
                                  'u', user_id, 'q', search)),
           NULL, json_array(json(body))
    FROM workload_events;
-- New requests come after every seq the old tables handed out (a stream's cursor may point past
-- the rows retention deleted).
DELETE FROM sqlite_sequence WHERE name = 'edge_requests';
INSERT INTO sqlite_sequence (name, seq)
    SELECT 'edge_requests', MAX(v) FROM (
        SELECT seq * 2 AS v FROM sqlite_sequence WHERE name = 'authorization_events'
        UNION ALL SELECT seq * 2 + 1 FROM sqlite_sequence WHERE name = 'workload_events'
        UNION ALL SELECT MAX(seq) FROM edge_requests
    ) HAVING MAX(v) IS NOT NULL;
UPDATE log_stream_cursors
    SET delivered = delivered * 32, pending_last = pending_last * 32
    WHERE data_type = 'AccessAuthorizationEvents';
UPDATE log_stream_cursors
    SET delivered = delivered * 32 + 16, pending_last = pending_last * 32 + 16
    WHERE data_type = 'WorkloadEvents';

DROP TABLE authorization_events;
DROP TABLE workload_events;
CREATE INDEX edge_requests_rs_time ON edge_requests (rs, ts);

CREATE VIEW authorization_events AS
    SELECT r.seq * 16 + e.key AS seq, r.seq AS rseq, e.key AS n,
           e.value ->> 'id' AS id, r.rs AS rs, r.ts AS ts,
           e.value ->> 't' AS event_type, e.value ->> 's' AS severity, e.value ->> 'r' AS result,
           r.client_ip AS client_ip, e.value ->> 'q' AS search,
           CASE WHEN r.shared IS NULL THEN r.bodies ->> e.key
                ELSE json_patch(r.shared, r.bodies -> e.key) END AS body
    FROM edge_requests AS r, json_each(r.meta) AS e
    WHERE e.value ->> 'k' = 'a';

CREATE VIEW workload_events AS
    SELECT r.seq * 16 + e.key AS seq, r.seq AS rseq, e.key AS n,
           e.value ->> 'id' AS id, r.rs AS rs, r.ts AS ts,
           e.value ->> 't' AS event_type, e.value ->> 'r' AS action, e.value ->> 's' AS severity,
           e.value ->> 'cw' AS client_workload, e.value ->> 'sw' AS server_workload,
           e.value ->> 'p' AS app_protocol, e.value ->> 'u' AS user_id,
           COALESCE(e.value ->> 'q', r.client_ip) AS search,
           r.bodies ->> e.key AS body
    FROM edge_requests AS r, json_each(r.meta) AS e
    WHERE e.value ->> 'k' = 'w';
