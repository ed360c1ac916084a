-- The templates' events, one view per kind with the columns of that kind's event view
-- (`authorization_events`, `workload_events`) that a template decides: everything but the ids,
-- the time, `contextId` and the client port (issue 34). The event filters run over them first
-- (`Store::template_filter`), and an `order` on such a field sorts the templates rather than the
-- events: `store::event_pages` then reads the rows of the first templates in that order.
DROP VIEW template_events;

CREATE VIEW authorization_templates AS
    SELECT t.id AS tpl, e.key AS n,
           e.value ->> 't' AS event_type, COALESCE(e.value ->> 's', 'Info') AS severity,
           e.value ->> 'r' AS result, t.client_ip AS client_ip,
           e.value ->> 'q' AS q,
           (SELECT group_concat(lower(j.value), char(10))
            FROM json_tree(t.bodies, '$[' || e.key || ']') AS j
            WHERE j.key = 'name' AND j.type = 'text') AS names,
           t.bodies AS raw,
           CASE WHEN t.shared IS NULL THEN t.bodies ->> e.key
                ELSE json_patch(t.shared, t.bodies -> e.key) END AS body
    FROM edge_templates AS t, json_each(t.meta) AS e
    WHERE e.value ->> 'k' IS NULL;

CREATE VIEW workload_templates AS
    SELECT t.id AS tpl, e.key AS n,
           e.value ->> 't' AS event_type, e.value ->> 'r' AS action,
           COALESCE(e.value ->> 's', 'Info') AS severity,
           e.value ->> 'cw' AS client_workload, e.value ->> 'sw' AS server_workload,
           e.value ->> 'p' AS app_protocol, e.value ->> 'u' AS user_id,
           COALESCE(e.value ->> 'q', t.client_ip) AS search,
           COALESCE(t.bodies ->> ('$[' || e.key || '].network.clientWorkloadIP'), t.client_ip) AS client_ip,
           t.bodies ->> e.key AS body
    FROM edge_templates AS t, json_each(t.meta) AS e
    WHERE e.value ->> 'k' = 'w';
