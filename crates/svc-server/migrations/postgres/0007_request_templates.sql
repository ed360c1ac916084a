-- Request templates (issue 34); see the SQLite migration of the same number for what a template
-- holds, what a request row keeps, and how the views read both. Rows stored before keep every
-- value and read as before.
CREATE TABLE edge_templates (
    id        BIGSERIAL PRIMARY KEY,
    digest    TEXT    NOT NULL UNIQUE,
    day       BIGINT  NOT NULL,
    client_ip TEXT,
    meta      TEXT    NOT NULL,
    shared    TEXT,
    bodies    TEXT    NOT NULL
);
CREATE INDEX edge_templates_day ON edge_templates (day);

ALTER TABLE edge_requests ADD COLUMN tpl BIGINT;
ALTER TABLE edge_requests ADD COLUMN eid TEXT;
ALTER TABLE edge_requests ADD COLUMN ctx TEXT;
ALTER TABLE edge_requests ADD COLUMN port BIGINT;
CREATE INDEX edge_requests_rs_tpl_time ON edge_requests (rs, tpl, ts);

-- Audit entries: the lists' equality filters compare `LOWER(column)`; indexed as they compare,
-- an audit list filtered on a category or severity reads only its entries (issue 34).
CREATE INDEX audit_logs_rs_category ON audit_logs (rs, (LOWER(category)), created_at);
CREATE INDEX audit_logs_rs_severity ON audit_logs (rs, (LOWER(severity)), created_at);

DROP VIEW authorization_events;
DROP VIEW workload_events;
DROP VIEW edge_events;

CREATE VIEW edge_events AS
    SELECT r.seq AS rseq, e.n - 1 AS n, r.rs AS rs, r.ts AS ts, r.tpl AS tpl,
           COALESCE(t.client_ip, r.client_ip) AS row_ip,
           COALESCE(t.shared, r.shared) AS shared,
           COALESCE(t.bodies, r.bodies)::jsonb -> (e.n - 1)::int AS b, e.v AS v,
           COALESCE(t.bodies, r.bodies) AS bodies,
           r.ctx AS ctx, r.port AS port,
           COALESCE(e.v ->> 'k', 'a') AS kind,
           COALESCE(e.v ->> 'id',
                    substr(COALESCE(r.eid, r.meta::jsonb -> 0 ->> 'id'), 1, 35)
                    || substr('0123456789abcdef',
                              1 + ((strpos('0123456789abcdef', substr(COALESCE(r.eid, r.meta::jsonb -> 0 ->> 'id'), 36, 1)) - 1)
                                   # (e.n - 1)::int),
                              1)) AS id,
           COALESCE(e.v ->> 's', 'Info') AS severity
    FROM edge_requests AS r
    LEFT JOIN edge_templates AS t ON t.id = r.tpl
    CROSS JOIN LATERAL jsonb_array_elements(COALESCE(t.meta, r.meta)::jsonb) WITH ORDINALITY AS e(v, n);

CREATE VIEW authorization_events AS
    SELECT rseq * 16 + n AS seq, rseq, n, id, rs, ts, tpl,
           v ->> 't' AS event_type, severity, v ->> 'r' AS result,
           row_ip AS client_ip,
           v ->> 'q' AS q,
           CASE WHEN v ->> 'k' IS NULL THEN
               (SELECT string_agg(lower((x #>> '{}') COLLATE "C"), E'\n')
                FROM jsonb_path_query(b,
                                      'lax $.** ? (@.type() == "object").name ? (@.type() == "string")') AS x)
           END AS names,
           bodies AS raw,
           COALESCE(ctx, shared::jsonb #>> '{meta,contextId}') AS context_id,
           COALESCE(port, (shared::jsonb #>> '{clientRequest,network,sourcePort}')::bigint) AS source_port,
           (CASE WHEN shared IS NULL THEN b ELSE shared::jsonb || b END)::text AS body
    FROM edge_events
    WHERE kind = 'a';

CREATE VIEW workload_events AS
    SELECT rseq * 16 + n AS seq, rseq, n, id, rs, ts, tpl,
           v ->> 't' AS event_type, v ->> 'r' AS action, severity,
           v ->> 'cw' AS client_workload, v ->> 'sw' AS server_workload,
           v ->> 'p' AS app_protocol, v ->> 'u' AS user_id,
           COALESCE(v ->> 'q', row_ip) AS search,
           COALESCE(b #>> '{network,clientWorkloadIP}', row_ip) AS client_ip,
           COALESCE(b #>> '{meta,connectionId}', ctx, shared::jsonb #>> '{meta,contextId}') AS context_id,
           COALESCE(port, (b #>> '{network,clientWorkloadPort}')::bigint) AS source_port,
           b::text AS body
    FROM edge_events
    WHERE kind = 'w';

-- The templates' events, with the columns the event filters read (the event views' names).
CREATE VIEW template_events AS
    SELECT t.id AS tpl, e.n - 1 AS n, COALESCE(e.v ->> 'k', 'a') AS kind,
           e.v ->> 't' AS event_type, COALESCE(e.v ->> 's', 'Info') AS severity,
           e.v ->> 'r' AS result, e.v ->> 'r' AS action, t.client_ip AS client_ip,
           e.v ->> 'q' AS q,
           CASE WHEN e.v ->> 'k' IS NULL THEN
               (SELECT string_agg(lower((x #>> '{}') COLLATE "C"), E'\n')
                FROM jsonb_path_query(t.bodies::jsonb -> (e.n - 1)::int,
                                      'lax $.** ? (@.type() == "object").name ? (@.type() == "string")') AS x)
           END AS names,
           t.bodies AS raw,
           e.v ->> 'cw' AS client_workload, e.v ->> 'sw' AS server_workload,
           e.v ->> 'p' AS app_protocol, e.v ->> 'u' AS user_id,
           COALESCE(e.v ->> 'q', t.client_ip) AS search
    FROM edge_templates AS t
    CROSS JOIN LATERAL jsonb_array_elements(t.meta::jsonb) WITH ORDINALITY AS e(v, n);
