-- The templates' events, one view per kind with the columns of that kind's event view
-- (`authorization_events`, `workload_events`) that a template decides: everything but the ids,
-- the time, `contextId` and the client port (issue 34). The event filters run over them first
-- (`Store::template_filter`), and an `order` on such a field sorts the templates rather than the
-- events: `store::event_pages` then reads the rows of the first templates in that order. Each
-- template's texts are parsed once (`p`), not once per event; `body` is `jsonb` (the order
-- keys read it as such).
DROP VIEW template_events;

CREATE VIEW authorization_templates AS
    SELECT t.id AS tpl, e.n - 1 AS n,
           e.v ->> 't' AS event_type, COALESCE(e.v ->> 's', 'Info') AS severity,
           e.v ->> 'r' AS result, t.client_ip AS client_ip,
           e.v ->> 'q' AS q,
           (SELECT string_agg(lower((x #>> '{}') COLLATE "C"), E'\n')
            FROM jsonb_path_query(p.bodies -> (e.n - 1)::int,
                                  'lax $.** ? (@.type() == "object").name ? (@.type() == "string")') AS x) AS names,
           t.bodies AS raw,
           CASE WHEN p.shared IS NULL THEN p.bodies -> (e.n - 1)::int
                ELSE p.shared || (p.bodies -> (e.n - 1)::int) END AS body
    FROM edge_templates AS t
    CROSS JOIN LATERAL (SELECT t.bodies::jsonb AS bodies, t.shared::jsonb AS shared OFFSET 0) AS p
    CROSS JOIN LATERAL jsonb_array_elements(t.meta::jsonb) WITH ORDINALITY AS e(v, n)
    WHERE e.v ->> 'k' IS NULL;

CREATE VIEW workload_templates AS
    SELECT t.id AS tpl, e.n - 1 AS n,
           e.v ->> 't' AS event_type, e.v ->> 'r' AS action,
           COALESCE(e.v ->> 's', 'Info') AS severity,
           e.v ->> 'cw' AS client_workload, e.v ->> 'sw' AS server_workload,
           e.v ->> 'p' AS app_protocol, e.v ->> 'u' AS user_id,
           COALESCE(e.v ->> 'q', t.client_ip) AS search,
           COALESCE(p.bodies -> (e.n - 1)::int #>> '{network,clientWorkloadIP}', t.client_ip) AS client_ip,
           p.bodies -> (e.n - 1)::int AS body
    FROM edge_templates AS t
    CROSS JOIN LATERAL (SELECT t.bodies::jsonb AS bodies OFFSET 0) AS p
    CROSS JOIN LATERAL jsonb_array_elements(t.meta::jsonb) WITH ORDINALITY AS e(v, n)
    WHERE e.v ->> 'k' = 'w';
