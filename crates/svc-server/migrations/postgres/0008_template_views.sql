-- The templates' events, one view per kind with the columns of that kind's event view
-- (`authorization_events`, `workload_events`) that a template decides: everything but the ids,
-- the time, `contextId` and the client port (issue 34). The event filters run over them first
-- (`Store::template_filter`), and an `order` on such a field sorts the templates rather than the
-- events: `store::event_pages` then reads the rows of the first templates in that order.
DROP VIEW template_events;

CREATE VIEW authorization_templates AS
    SELECT t.id AS tpl, e.n - 1 AS n,
           e.v ->> 't' AS event_type, COALESCE(e.v ->> 's', 'Info') AS severity,
           e.v ->> 'r' AS result, t.client_ip AS client_ip,
           e.v ->> 'q' AS q,
           (SELECT string_agg(lower((x #>> '{}') COLLATE "C"), E'\n')
            FROM jsonb_path_query(t.bodies::jsonb -> (e.n - 1)::int,
                                  'lax $.** ? (@.type() == "object").name ? (@.type() == "string")') AS x) AS names,
           t.bodies AS raw,
           (CASE WHEN t.shared IS NULL THEN t.bodies::jsonb -> (e.n - 1)::int
                 ELSE t.shared::jsonb || (t.bodies::jsonb -> (e.n - 1)::int) END)::text AS body
    FROM edge_templates AS t
    CROSS JOIN LATERAL jsonb_array_elements(t.meta::jsonb) WITH ORDINALITY AS e(v, n)
    WHERE e.v ->> 'k' IS NULL;

CREATE VIEW workload_templates AS
    SELECT t.id AS tpl, e.n - 1 AS n,
           e.v ->> 't' AS event_type, e.v ->> 'r' AS action,
           COALESCE(e.v ->> 's', 'Info') AS severity,
           e.v ->> 'cw' AS client_workload, e.v ->> 'sw' AS server_workload,
           e.v ->> 'p' AS app_protocol, e.v ->> 'u' AS user_id,
           COALESCE(e.v ->> 'q', t.client_ip) AS search,
           COALESCE(t.bodies::jsonb -> (e.n - 1)::int #>> '{network,clientWorkloadIP}', t.client_ip) AS client_ip,
           (t.bodies::jsonb -> (e.n - 1)::int)::text AS body
    FROM edge_templates AS t
    CROSS JOIN LATERAL jsonb_array_elements(t.meta::jsonb) WITH ORDINALITY AS e(v, n)
    WHERE e.v ->> 'k' = 'w';
