-- The names a `search` matches in an authorization event (issue 34): the `name` string members
-- anywhere in its body, lowercased (ASCII only, as SQL's `LOWER` does under "C"), one per line.
-- The template view read them with a recursive JSON path over each template event's body on
-- every search (98 of the 130 ms of a search matching many, at ten million events). Templates
-- never change, so the names are now worked out once, when a template is stored (a trigger, so
-- they are exactly what the view computed), as a JSON array with an element per event of the
-- template (null when it has none), and the view reads its element. The functions keep the
-- migration's `search_path` (a data-only restore runs with an empty one).
ALTER TABLE edge_templates ADD COLUMN names jsonb;

CREATE FUNCTION edge_template_names(bodies text, meta text) RETURNS jsonb
LANGUAGE sql IMMUTABLE SET search_path FROM CURRENT AS $$
    SELECT jsonb_agg(
               (SELECT string_agg(lower((x #>> '{}') COLLATE "C"), E'\n')
                FROM jsonb_path_query(bodies::jsonb -> (e.n - 1)::int,
                                      'lax $.** ? (@.type() == "object").name ? (@.type() == "string")') AS x)
               ORDER BY e.n)
    FROM jsonb_array_elements(meta::jsonb) WITH ORDINALITY AS e(v, n)
$$;

CREATE FUNCTION edge_templates_set_names() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    NEW.names := edge_template_names(NEW.bodies, NEW.meta);
    RETURN NEW;
END
$$;

CREATE TRIGGER edge_templates_names BEFORE INSERT ON edge_templates
    FOR EACH ROW EXECUTE FUNCTION edge_templates_set_names();

UPDATE edge_templates SET names = edge_template_names(bodies, meta);

CREATE OR REPLACE VIEW authorization_templates AS
    SELECT t.id AS tpl, e.n - 1 AS n,
           e.v ->> 't' AS event_type, COALESCE(e.v ->> 's', 'Info') AS severity,
           e.v ->> 'r' AS result, t.client_ip AS client_ip,
           e.v ->> 'q' AS q,
           (t.names ->> (e.n - 1)::int) COLLATE "C" AS names,
           t.bodies AS raw,
           CASE WHEN p.shared IS NULL THEN p.bodies -> (e.n - 1)::int
                ELSE p.shared || (p.bodies -> (e.n - 1)::int) END AS body
    FROM edge_templates AS t
    CROSS JOIN LATERAL (SELECT t.bodies::jsonb AS bodies, t.shared::jsonb AS shared OFFSET 0) AS p
    CROSS JOIN LATERAL jsonb_array_elements(t.meta::jsonb) WITH ORDINALITY AS e(v, n)
    WHERE e.v ->> 'k' IS NULL;
