-- One stored row per edge request (issue 19 part 2); see the SQLite migration of the same number
-- for the layout. `meta`, `shared` and `bodies` are stored as text (no jsonb parse per insert on
-- the request path) and read as jsonb by the views.
CREATE TABLE edge_requests (
    seq       BIGSERIAL PRIMARY KEY,
    rs        TEXT   NOT NULL,
    ts        BIGINT NOT NULL,
    na        INTEGER NOT NULL,
    nw        INTEGER NOT NULL,
    client_ip TEXT,
    meta      TEXT   NOT NULL,
    shared    TEXT,
    bodies    TEXT   NOT NULL
);

-- Existing events: one request row each, authorization events at even request seqs and workload
-- events at odd ones, so a log stream's cursor maps exactly (below).
INSERT INTO edge_requests (seq, rs, ts, na, nw, client_ip, meta, shared, bodies)
    SELECT seq * 2, rs, ts, 1, 0, client_ip,
           jsonb_build_array(jsonb_build_object('k', 'a', 'id', id, 't', event_type, 's', severity,
                                                'r', result, 'q', search))::text,
           NULL, jsonb_build_array(body::jsonb)::text
    FROM authorization_events;
INSERT INTO edge_requests (seq, rs, ts, na, nw, client_ip, meta, shared, bodies)
    SELECT seq * 2 + 1, rs, ts, 0, 1, NULL,
           jsonb_build_array(jsonb_build_object('k', 'w', 'id', id, 't', event_type, 's', severity,
                                                'r', action, 'cw', client_workload,
                                                'sw', server_workload, 'p', app_protocol,
                                                'u', user_id, 'q', search))::text,
           NULL, jsonb_build_array(body::jsonb)::text
    FROM workload_events;
-- New requests come after every seq the old tables handed out.
SELECT setval(pg_get_serial_sequence('edge_requests', 'seq'), GREATEST(
    (SELECT last_value * 2 FROM authorization_events_seq_seq),
    (SELECT last_value * 2 + 1 FROM workload_events_seq_seq),
    (SELECT COALESCE(MAX(seq), 1) FROM edge_requests)));
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
    SELECT r.seq * 16 + (e.n - 1) AS seq, r.seq AS rseq, e.n - 1 AS n,
           e.v ->> 'id' AS id, r.rs AS rs, r.ts AS ts,
           e.v ->> 't' AS event_type, e.v ->> 's' AS severity, e.v ->> 'r' AS result,
           r.client_ip AS client_ip, e.v ->> 'q' AS search,
           (CASE WHEN r.shared IS NULL THEN r.bodies::jsonb -> (e.n - 1)::int
                 ELSE r.shared::jsonb || (r.bodies::jsonb -> (e.n - 1)::int) END)::text AS body
    FROM edge_requests AS r
    CROSS JOIN LATERAL jsonb_array_elements(r.meta::jsonb) WITH ORDINALITY AS e(v, n)
    WHERE e.v ->> 'k' = 'a';

CREATE VIEW workload_events AS
    SELECT r.seq * 16 + (e.n - 1) AS seq, r.seq AS rseq, e.n - 1 AS n,
           e.v ->> 'id' AS id, r.rs AS rs, r.ts AS ts,
           e.v ->> 't' AS event_type, e.v ->> 'r' AS action, e.v ->> 's' AS severity,
           e.v ->> 'cw' AS client_workload, e.v ->> 'sw' AS server_workload,
           e.v ->> 'p' AS app_protocol, e.v ->> 'u' AS user_id,
           COALESCE(e.v ->> 'q', r.client_ip) AS search,
           (r.bodies::jsonb -> (e.n - 1)::int)::text AS body
    FROM edge_requests AS r
    CROSS JOIN LATERAL jsonb_array_elements(r.meta::jsonb) WITH ORDINALITY AS e(v, n)
    WHERE e.v ->> 'k' = 'w';
