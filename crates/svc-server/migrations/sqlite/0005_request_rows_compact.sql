-- Smaller request rows (issue 18: a request row of a policy with conditions no longer fits two to
-- a 4 KB page, which doubled the pages and WAL it wrote). New rows leave out of `meta` and the
-- bodies what the views can derive; rows stored before keep every value and read as before
-- (each derived value is the stored one when present):
-- - `k` when `a` (authorization), `s` when `Info`;
-- - `id` of every event but the first: the first's id with the event's index xor-ed into its
--   last hex digit (`store::nth_event_id`);
-- - `q`, the search text: a workload event's is the row's client IP; an authorization event's,
--   when every name is printable ASCII without `"` or `\`, the `name` values of its body,
--   lowercased, one per line (column `names`; only for new rows, whose authorization elements
--   have no `k`: an older row without `q` had no names, and its body may hold other `name`
--   values, such as `environment.process.name`). Such names appear in the stored JSON as they are,
--   so the list's search first matches the request's bodies (`raw`, no JSON read) with SQL's
--   `LIKE` and reads the names only of the rows that pass;
-- - a workload event's `meta.connectionId` (the request's `meta.contextId`, column `context_id`)
--   and `network.clientWorkloadIP` (the row's `client_ip`): `events::shape` puts them back.
DROP VIEW authorization_events;
DROP VIEW workload_events;

-- One row per stored event, with what both event views derive alike: its kind, id and severity.
CREATE VIEW edge_events AS
    SELECT r.seq AS rseq, e.key AS n, r.rs AS rs, r.ts AS ts, r.client_ip AS row_ip,
           r.shared AS shared, r.bodies AS bodies, e.value AS v,
           COALESCE(e.value ->> 'k', 'a') AS kind,
           COALESCE(e.value ->> 'id',
                    substr(r.meta ->> '$[0].id', 1, 35)
                    || substr('0123456789abcdef',
                              1 + (((instr('0123456789abcdef', substr(r.meta ->> '$[0].id', 36, 1)) - 1) | e.key)
                                   - ((instr('0123456789abcdef', substr(r.meta ->> '$[0].id', 36, 1)) - 1) & e.key)),
                              1)) AS id,
           COALESCE(e.value ->> 's', 'Info') AS severity
    FROM edge_requests AS r, json_each(r.meta) AS e;

CREATE VIEW authorization_events AS
    SELECT rseq * 16 + n AS seq, rseq, n, id, rs, ts,
           v ->> 't' AS event_type, severity, v ->> 'r' AS result,
           row_ip AS client_ip,
           v ->> 'q' AS q,
           CASE WHEN v ->> 'k' IS NULL THEN
               (SELECT group_concat(lower(j.value), char(10))
                FROM json_tree(bodies, '$[' || n || ']') AS j
                WHERE j.key = 'name' AND j.type = 'text') END AS names,
           bodies AS raw,
           CASE WHEN shared IS NULL THEN bodies ->> n
                ELSE json_patch(shared, bodies -> n) END AS body
    FROM edge_events
    WHERE kind = 'a';

CREATE VIEW workload_events AS
    SELECT rseq * 16 + n AS seq, rseq, n, id, rs, ts,
           v ->> 't' AS event_type, v ->> 'r' AS action, severity,
           v ->> 'cw' AS client_workload, v ->> 'sw' AS server_workload,
           v ->> 'p' AS app_protocol, v ->> 'u' AS user_id,
           COALESCE(v ->> 'q', row_ip) AS search,
           COALESCE(bodies ->> ('$[' || n || '].network.clientWorkloadIP'), row_ip) AS client_ip,
           COALESCE(bodies ->> ('$[' || n || '].meta.connectionId'),
                    shared ->> '$.meta.contextId') AS context_id,
           bodies ->> n AS body
    FROM edge_events
    WHERE kind = 'w';
