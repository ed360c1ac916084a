-- Request templates (issue 34: ~2.1 KB of database per `/credentials` request, and event filters
-- that parse every stored request). What a request's events say besides their ids, time and
-- client port repeats from one request of a workload to the next: its events' `meta` elements
-- (types, severities, results, workloads, search text), its bodies, and what its authorization
-- events share (`clientRequest` but its `sourcePort`, `environment`), with its client IP. New rows
-- store that once, as a template (`edge_templates`, keyed by a SHA-256 of its day and content, so
-- every node finds the same one), and keep per request only the template's id (`tpl`), the first
-- event's id (`eid`; the others are derived as before, `store::nth_event_id`), the request's
-- `meta.contextId` (`ctx`) and client port (`port`: `clientRequest.network.sourcePort`, a workload
-- event's `network.clientWorkloadPort`). Their `meta` and `bodies` are `[]`, `shared` and
-- `client_ip` null. Rows stored before keep every value and read as before.
--
-- A template is written again each day (its `day`, UTC, is part of its key), so retention can
-- delete the templates of days no request row refers to any more (`store::purge_events`).
--
-- The event filters are first run over the templates (`template_events`, the same columns as the
-- event views): a filter no template matches answers at once, and one that matches a few
-- templates reads only their rows, through `edge_requests_rs_tpl_time`.
CREATE TABLE edge_templates (
    id        INTEGER PRIMARY KEY,
    digest    TEXT    NOT NULL UNIQUE,
    day       INTEGER NOT NULL,
    client_ip TEXT,
    meta      TEXT    NOT NULL,
    shared    TEXT,
    bodies    TEXT    NOT NULL
);
CREATE INDEX edge_templates_day ON edge_templates (day);

ALTER TABLE edge_requests ADD COLUMN tpl INTEGER;
ALTER TABLE edge_requests ADD COLUMN eid TEXT;
ALTER TABLE edge_requests ADD COLUMN ctx TEXT;
ALTER TABLE edge_requests ADD COLUMN port INTEGER;
CREATE INDEX edge_requests_rs_tpl_time ON edge_requests (rs, tpl, ts);

-- Audit entries: the lists' equality filters compare `LOWER(column)`; indexed as they compare,
-- an audit list filtered on a category or severity reads only its entries (issue 34).
CREATE INDEX audit_logs_rs_category ON audit_logs (rs, (LOWER(category)), created_at);
CREATE INDEX audit_logs_rs_severity ON audit_logs (rs, (LOWER(severity)), created_at);

DROP VIEW authorization_events;
DROP VIEW workload_events;
DROP VIEW edge_events;

CREATE VIEW edge_events AS
    SELECT r.seq AS rseq, e.key AS n, r.rs AS rs, r.ts AS ts, r.tpl AS tpl,
           COALESCE(t.client_ip, r.client_ip) AS row_ip,
           COALESCE(t.shared, r.shared) AS shared, COALESCE(t.bodies, r.bodies) AS bodies, e.value AS v,
           r.ctx AS ctx, r.port AS port,
           COALESCE(e.value ->> 'k', 'a') AS kind,
           COALESCE(e.value ->> 'id',
                    substr(COALESCE(r.eid, r.meta ->> '$[0].id'), 1, 35)
                    || substr('0123456789abcdef',
                              1 + (((instr('0123456789abcdef', substr(COALESCE(r.eid, r.meta ->> '$[0].id'), 36, 1)) - 1) | e.key)
                                   - ((instr('0123456789abcdef', substr(COALESCE(r.eid, r.meta ->> '$[0].id'), 36, 1)) - 1) & e.key)),
                              1)) AS id,
           COALESCE(e.value ->> 's', 'Info') AS severity
    FROM edge_requests AS r LEFT JOIN edge_templates AS t ON t.id = r.tpl,
         json_each(COALESCE(t.meta, r.meta)) AS e;

CREATE VIEW authorization_events AS
    SELECT rseq * 16 + n AS seq, rseq, n, id, rs, ts, tpl,
           v ->> 't' AS event_type, severity, v ->> 'r' AS result,
           row_ip AS client_ip,
           v ->> 'q' AS q,
           CASE WHEN v ->> 'k' IS NULL THEN
               (SELECT group_concat(lower(j.value), char(10))
                FROM json_tree(bodies, '$[' || n || ']') AS j
                WHERE j.key = 'name' AND j.type = 'text') END AS names,
           bodies AS raw,
           COALESCE(ctx, shared ->> '$.meta.contextId') AS context_id,
           COALESCE(port, shared ->> '$.clientRequest.network.sourcePort') AS source_port,
           CASE WHEN shared IS NULL THEN bodies ->> n
                ELSE json_patch(shared, bodies -> n) END AS body
    FROM edge_events
    WHERE kind = 'a';

CREATE VIEW workload_events AS
    SELECT rseq * 16 + n AS seq, rseq, n, id, rs, ts, tpl,
           v ->> 't' AS event_type, v ->> 'r' AS action, severity,
           v ->> 'cw' AS client_workload, v ->> 'sw' AS server_workload,
           v ->> 'p' AS app_protocol, v ->> 'u' AS user_id,
           COALESCE(v ->> 'q', row_ip) AS search,
           COALESCE(bodies ->> ('$[' || n || '].network.clientWorkloadIP'), row_ip) AS client_ip,
           COALESCE(bodies ->> ('$[' || n || '].meta.connectionId'), ctx,
                    shared ->> '$.meta.contextId') AS context_id,
           COALESCE(port, bodies ->> ('$[' || n || '].network.clientWorkloadPort')) AS source_port,
           bodies ->> n AS body
    FROM edge_events
    WHERE kind = 'w';

-- The templates' events, with the columns the event filters read (the event views' names).
CREATE VIEW template_events AS
    SELECT t.id AS tpl, e.key AS n, COALESCE(e.value ->> 'k', 'a') AS kind,
           e.value ->> 't' AS event_type, COALESCE(e.value ->> 's', 'Info') AS severity,
           e.value ->> 'r' AS result, e.value ->> 'r' AS action, t.client_ip AS client_ip,
           e.value ->> 'q' AS q,
           CASE WHEN e.value ->> 'k' IS NULL THEN
               (SELECT group_concat(lower(j.value), char(10))
                FROM json_tree(t.bodies, '$[' || e.key || ']') AS j
                WHERE j.key = 'name' AND j.type = 'text') END AS names,
           t.bodies AS raw,
           e.value ->> 'cw' AS client_workload, e.value ->> 'sw' AS server_workload,
           e.value ->> 'p' AS app_protocol, e.value ->> 'u' AS user_id,
           COALESCE(e.value ->> 'q', t.client_ip) AS search
    FROM edge_templates AS t, json_each(t.meta) AS e;
