-- Smaller request rows; see the SQLite migration of the same number for what new rows leave out
-- and how the views derive it. Rows stored before keep every value and read as before. The names
-- are lowered, and `raw` matched without case, in the "C" collation: ASCII only, as the stored
-- search text was, whatever the database's locale.
DROP VIEW authorization_events;
DROP VIEW workload_events;

CREATE VIEW authorization_events AS
    SELECT r.seq * 16 + (e.n - 1) AS seq, r.seq AS rseq, e.n - 1 AS n,
           COALESCE(e.v ->> 'id',
                    substr(r.meta::jsonb -> 0 ->> 'id', 1, 35)
                    || substr('0123456789abcdef',
                              1 + ((strpos('0123456789abcdef', substr(r.meta::jsonb -> 0 ->> 'id', 36, 1)) - 1)
                                   # (e.n - 1)::int),
                              1)) AS id,
           r.rs AS rs, r.ts AS ts,
           e.v ->> 't' AS event_type, COALESCE(e.v ->> 's', 'Info') AS severity, e.v ->> 'r' AS result,
           r.client_ip AS client_ip,
           e.v ->> 'q' AS q,
           CASE WHEN e.v ->> 'k' IS NULL THEN
               (SELECT string_agg(lower((x #>> '{}') COLLATE "C"), E'\n')
                FROM jsonb_path_query(r.bodies::jsonb -> (e.n - 1)::int,
                                      'lax $.** ? (@.type() == "object").name ? (@.type() == "string")') AS x)
           END AS names,
           r.bodies AS raw,
           (CASE WHEN r.shared IS NULL THEN r.bodies::jsonb -> (e.n - 1)::int
                 ELSE r.shared::jsonb || (r.bodies::jsonb -> (e.n - 1)::int) END)::text AS body
    FROM edge_requests AS r
    CROSS JOIN LATERAL jsonb_array_elements(r.meta::jsonb) WITH ORDINALITY AS e(v, n)
    WHERE COALESCE(e.v ->> 'k', 'a') = 'a';

CREATE VIEW workload_events AS
    SELECT r.seq * 16 + (e.n - 1) AS seq, r.seq AS rseq, e.n - 1 AS n,
           COALESCE(e.v ->> 'id',
                    substr(r.meta::jsonb -> 0 ->> 'id', 1, 35)
                    || substr('0123456789abcdef',
                              1 + ((strpos('0123456789abcdef', substr(r.meta::jsonb -> 0 ->> 'id', 36, 1)) - 1)
                                   # (e.n - 1)::int),
                              1)) AS id,
           r.rs AS rs, r.ts AS ts,
           e.v ->> 't' AS event_type, e.v ->> 'r' AS action, COALESCE(e.v ->> 's', 'Info') AS severity,
           e.v ->> 'cw' AS client_workload, e.v ->> 'sw' AS server_workload,
           e.v ->> 'p' AS app_protocol, e.v ->> 'u' AS user_id,
           COALESCE(e.v ->> 'q', r.client_ip) AS search,
           COALESCE(r.bodies::jsonb -> (e.n - 1)::int #>> '{network,clientWorkloadIP}', r.client_ip) AS client_ip,
           COALESCE(r.bodies::jsonb -> (e.n - 1)::int #>> '{meta,connectionId}',
                    r.shared::jsonb #>> '{meta,contextId}') AS context_id,
           (r.bodies::jsonb -> (e.n - 1)::int)::text AS body
    FROM edge_requests AS r
    CROSS JOIN LATERAL jsonb_array_elements(r.meta::jsonb) WITH ORDINALITY AS e(v, n)
    WHERE e.v ->> 'k' = 'w';
