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

CREATE VIEW authorization_events AS
    SELECT r.seq * 16 + e.key AS seq, r.seq AS rseq, e.key AS n,
           COALESCE(e.value ->> 'id',
                    substr(r.meta ->> '$[0].id', 1, 35)
                    || substr('0123456789abcdef',
                              1 + (((instr('0123456789abcdef', substr(r.meta ->> '$[0].id', 36, 1)) - 1) | e.key)
                                   - ((instr('0123456789abcdef', substr(r.meta ->> '$[0].id', 36, 1)) - 1) & e.key)),
                              1)) AS id,
           r.rs AS rs, r.ts AS ts,
           e.value ->> 't' AS event_type, COALESCE(e.value ->> 's', 'Info') AS severity,
           e.value ->> 'r' AS result,
           r.client_ip AS client_ip,
           e.value ->> 'q' AS q,
           CASE WHEN e.value ->> 'k' IS NULL THEN
               (SELECT group_concat(lower(j.value), char(10))
                FROM json_tree(r.bodies, '$[' || e.key || ']') AS j
                WHERE j.key = 'name' AND j.type = 'text') END AS names,
           r.bodies AS raw,
           CASE WHEN r.shared IS NULL THEN r.bodies ->> e.key
                ELSE json_patch(r.shared, r.bodies -> e.key) END AS body
    FROM edge_requests AS r, json_each(r.meta) AS e
    WHERE COALESCE(e.value ->> 'k', 'a') = 'a';

CREATE VIEW workload_events AS
    SELECT r.seq * 16 + e.key AS seq, r.seq AS rseq, e.key AS n,
           COALESCE(e.value ->> 'id',
                    substr(r.meta ->> '$[0].id', 1, 35)
                    || substr('0123456789abcdef',
                              1 + (((instr('0123456789abcdef', substr(r.meta ->> '$[0].id', 36, 1)) - 1) | e.key)
                                   - ((instr('0123456789abcdef', substr(r.meta ->> '$[0].id', 36, 1)) - 1) & e.key)),
                              1)) AS id,
           r.rs AS rs, r.ts AS ts,
           e.value ->> 't' AS event_type, e.value ->> 'r' AS action,
           COALESCE(e.value ->> 's', 'Info') AS severity,
           e.value ->> 'cw' AS client_workload, e.value ->> 'sw' AS server_workload,
           e.value ->> 'p' AS app_protocol, e.value ->> 'u' AS user_id,
           COALESCE(e.value ->> 'q', r.client_ip) AS search,
           COALESCE(r.bodies ->> ('$[' || e.key || '].network.clientWorkloadIP'), r.client_ip) AS client_ip,
           COALESCE(r.bodies ->> ('$[' || e.key || '].meta.connectionId'),
                    r.shared ->> '$.meta.contextId') AS context_id,
           r.bodies ->> e.key AS body
    FROM edge_requests AS r, json_each(r.meta) AS e
    WHERE e.value ->> 'k' = 'w';
