-- Smaller request rows; see the SQLite migration of the same number for what new rows leave out
-- and how the views derive it. Rows stored before keep every value and read as before. The names
-- are lowered, and `raw` matched without case, in the "C" collation: ASCII only, as the stored
-- search text was, whatever the database's locale.
DROP VIEW authorization_events;
DROP VIEW workload_events;

-- One row per stored event, with what both event views derive alike: its kind, id and severity.
CREATE VIEW edge_events AS
    SELECT r.seq AS rseq, e.n - 1 AS n, r.rs AS rs, r.ts AS ts, r.client_ip AS row_ip,
           r.shared AS shared, r.bodies::jsonb -> (e.n - 1)::int AS b, e.v AS v,
           r.bodies AS bodies,
           COALESCE(e.v ->> 'k', 'a') AS kind,
           COALESCE(e.v ->> 'id',
                    substr(r.meta::jsonb -> 0 ->> 'id', 1, 35)
                    || substr('0123456789abcdef',
                              1 + ((strpos('0123456789abcdef', substr(r.meta::jsonb -> 0 ->> 'id', 36, 1)) - 1)
                                   # (e.n - 1)::int),
                              1)) AS id,
           COALESCE(e.v ->> 's', 'Info') AS severity
    FROM edge_requests AS r
    CROSS JOIN LATERAL jsonb_array_elements(r.meta::jsonb) WITH ORDINALITY AS e(v, n);

CREATE VIEW authorization_events AS
    SELECT rseq * 16 + n AS seq, rseq, n, id, rs, ts,
           v ->> 't' AS event_type, severity, v ->> 'r' AS result,
           row_ip AS client_ip,
           v ->> 'q' AS q,
           CASE WHEN v ->> 'k' IS NULL THEN
               (SELECT string_agg(lower((x #>> '{}') COLLATE "C"), E'\n')
                FROM jsonb_path_query(b,
                                      'lax $.** ? (@.type() == "object").name ? (@.type() == "string")') AS x)
           END AS names,
           bodies AS raw,
           (CASE WHEN shared IS NULL THEN b ELSE shared::jsonb || b END)::text AS body
    FROM edge_events
    WHERE kind = 'a';

CREATE VIEW workload_events AS
    SELECT rseq * 16 + n AS seq, rseq, n, id, rs, ts,
           v ->> 't' AS event_type, v ->> 'r' AS action, severity,
           v ->> 'cw' AS client_workload, v ->> 'sw' AS server_workload,
           v ->> 'p' AS app_protocol, v ->> 'u' AS user_id,
           COALESCE(v ->> 'q', row_ip) AS search,
           COALESCE(b #>> '{network,clientWorkloadIP}', row_ip) AS client_ip,
           COALESCE(b #>> '{meta,connectionId}', shared::jsonb #>> '{meta,contextId}') AS context_id,
           b::text AS body
    FROM edge_events
    WHERE kind = 'w';
