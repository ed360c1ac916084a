-- Audit entries at a million (issue 34): `search` and `order` on any documented field answer
-- without reading every entry. Audit entries are written only on management changes, so the
-- indexes cost little on the write side; the edge tables are untouched.
--
-- Search: a trigram GIN index (`pg_trgm`, a trusted extension since PostgreSQL 13: the database
-- owner may create it) serves the list's `search LIKE '%…%'` as it is written; the planner uses it
-- when its statistics say few entries match. Where the extension cannot be created (no contrib
-- package, or a role without CREATE on the database) the migration goes on without the index and
-- searches read the window as before.
DO $$
BEGIN
    CREATE EXTENSION IF NOT EXISTS pg_trgm;
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'pg_trgm is not available (%): audit searches read without a trigram index', SQLERRM;
END
$$;
DO $$
DECLARE
    ns TEXT;
BEGIN
    SELECT extnamespace::regnamespace::text INTO ns FROM pg_extension WHERE extname = 'pg_trgm';
    IF ns IS NOT NULL THEN
        EXECUTE format('CREATE INDEX audit_logs_search_trgm ON audit_logs USING gin (search %s.gin_trgm_ops)', ns);
    END IF;
END
$$;

-- Order: one index per sortable field and direction, holding the keys exactly as the list
-- writes them (`LOWER(field) dir NULLS …, field COLLATE "C" dir NULLS …, id ASC`; ties on
-- `externalId` ascending in both directions, so a descending order needs an index of its own),
-- so the first page is read off the index with no sort. Body fields without a column (strings or
-- null in every entry) are indexed on the text the list orders by (`store::audit`).
-- `externalId` (and `resourceSetId` within one resource set) read `(rs, id)`.
CREATE INDEX audit_logs_rs_id ON audit_logs (rs, id);
CREATE INDEX audit_logs_by_category ON audit_logs (rs, LOWER(category) NULLS FIRST, (category COLLATE "C") NULLS FIRST, id);
CREATE INDEX audit_logs_by_category_desc ON audit_logs (rs, LOWER(category) DESC NULLS LAST, (category COLLATE "C") DESC NULLS LAST, id);
CREATE INDEX audit_logs_by_activity ON audit_logs (rs, LOWER(activity) NULLS FIRST, (activity COLLATE "C") NULLS FIRST, id);
CREATE INDEX audit_logs_by_activity_desc ON audit_logs (rs, LOWER(activity) DESC NULLS LAST, (activity COLLATE "C") DESC NULLS LAST, id);
CREATE INDEX audit_logs_by_target ON audit_logs (rs, LOWER(target) NULLS FIRST, (target COLLATE "C") NULLS FIRST, id);
CREATE INDEX audit_logs_by_target_desc ON audit_logs (rs, LOWER(target) DESC NULLS LAST, (target COLLATE "C") DESC NULLS LAST, id);
CREATE INDEX audit_logs_by_severity ON audit_logs (rs, LOWER(severity) NULLS FIRST, (severity COLLATE "C") NULLS FIRST, id);
CREATE INDEX audit_logs_by_severity_desc ON audit_logs (rs, LOWER(severity) DESC NULLS LAST, (severity COLLATE "C") DESC NULLS LAST, id);
CREATE INDEX audit_logs_by_actor_type ON audit_logs (rs, LOWER(actor_type) NULLS FIRST, (actor_type COLLATE "C") NULLS FIRST, id);
CREATE INDEX audit_logs_by_actor_type_desc ON audit_logs (rs, LOWER(actor_type) DESC NULLS LAST, (actor_type COLLATE "C") DESC NULLS LAST, id);
CREATE INDEX audit_logs_by_actor_email ON audit_logs (rs, LOWER(actor_email) NULLS FIRST, (actor_email COLLATE "C") NULLS FIRST, id);
CREATE INDEX audit_logs_by_actor_email_desc ON audit_logs (rs, LOWER(actor_email) DESC NULLS LAST, (actor_email COLLATE "C") DESC NULLS LAST, id);
CREATE INDEX audit_logs_by_actor_name ON audit_logs (rs, LOWER(actor_name) NULLS FIRST, (actor_name COLLATE "C") NULLS FIRST, id);
CREATE INDEX audit_logs_by_actor_name_desc ON audit_logs (rs, LOWER(actor_name) DESC NULLS LAST, (actor_name COLLATE "C") DESC NULLS LAST, id);
CREATE INDEX audit_logs_by_result ON audit_logs (rs, LOWER(result) NULLS FIRST, (result COLLATE "C") NULLS FIRST, id);
CREATE INDEX audit_logs_by_result_desc ON audit_logs (rs, LOWER(result) DESC NULLS LAST, (result COLLATE "C") DESC NULLS LAST, id);
CREATE INDEX audit_logs_by_ip ON audit_logs (rs, LOWER(ip) NULLS FIRST, (ip COLLATE "C") NULLS FIRST, id);
CREATE INDEX audit_logs_by_ip_desc ON audit_logs (rs, LOWER(ip) DESC NULLS LAST, (ip COLLATE "C") DESC NULLS LAST, id);
CREATE INDEX audit_logs_by_user_name ON audit_logs (rs, LOWER((body::jsonb #>> '{actor,userName}')) NULLS FIRST, ((body::jsonb #>> '{actor,userName}') COLLATE "C") NULLS FIRST, id);
CREATE INDEX audit_logs_by_user_name_desc ON audit_logs (rs, LOWER((body::jsonb #>> '{actor,userName}')) DESC NULLS LAST, ((body::jsonb #>> '{actor,userName}') COLLATE "C") DESC NULLS LAST, id);
CREATE INDEX audit_logs_by_cp_id ON audit_logs (rs, LOWER((body::jsonb #>> '{actor,credentialProviderId}')) NULLS FIRST, ((body::jsonb #>> '{actor,credentialProviderId}') COLLATE "C") NULLS FIRST, id);
CREATE INDEX audit_logs_by_cp_id_desc ON audit_logs (rs, LOWER((body::jsonb #>> '{actor,credentialProviderId}')) DESC NULLS LAST, ((body::jsonb #>> '{actor,credentialProviderId}') COLLATE "C") DESC NULLS LAST, id);
CREATE INDEX audit_logs_by_ap_id ON audit_logs (rs, LOWER((body::jsonb #>> '{actor,accessPolicyId}')) NULLS FIRST, ((body::jsonb #>> '{actor,accessPolicyId}') COLLATE "C") NULLS FIRST, id);
CREATE INDEX audit_logs_by_ap_id_desc ON audit_logs (rs, LOWER((body::jsonb #>> '{actor,accessPolicyId}')) DESC NULLS LAST, ((body::jsonb #>> '{actor,accessPolicyId}') COLLATE "C") DESC NULLS LAST, id);
CREATE INDEX audit_logs_by_browser ON audit_logs (rs, LOWER((body::jsonb #>> '{client,userAgent,browser}')) NULLS FIRST, ((body::jsonb #>> '{client,userAgent,browser}') COLLATE "C") NULLS FIRST, id);
CREATE INDEX audit_logs_by_browser_desc ON audit_logs (rs, LOWER((body::jsonb #>> '{client,userAgent,browser}')) DESC NULLS LAST, ((body::jsonb #>> '{client,userAgent,browser}') COLLATE "C") DESC NULLS LAST, id);
CREATE INDEX audit_logs_by_os ON audit_logs (rs, LOWER((body::jsonb #>> '{client,userAgent,operatingSystem}')) NULLS FIRST, ((body::jsonb #>> '{client,userAgent,operatingSystem}') COLLATE "C") NULLS FIRST, id);
CREATE INDEX audit_logs_by_os_desc ON audit_logs (rs, LOWER((body::jsonb #>> '{client,userAgent,operatingSystem}')) DESC NULLS LAST, ((body::jsonb #>> '{client,userAgent,operatingSystem}') COLLATE "C") DESC NULLS LAST, id);
CREATE INDEX audit_logs_by_user_agent ON audit_logs (rs, LOWER((body::jsonb #>> '{client,userAgent,raw}')) NULLS FIRST, ((body::jsonb #>> '{client,userAgent,raw}') COLLATE "C") NULLS FIRST, id);
CREATE INDEX audit_logs_by_user_agent_desc ON audit_logs (rs, LOWER((body::jsonb #>> '{client,userAgent,raw}')) DESC NULLS LAST, ((body::jsonb #>> '{client,userAgent,raw}') COLLATE "C") DESC NULLS LAST, id);
CREATE INDEX audit_logs_by_reason ON audit_logs (rs, LOWER((body::jsonb #>> '{outcome,reason}')) NULLS FIRST, ((body::jsonb #>> '{outcome,reason}') COLLATE "C") NULLS FIRST, id);
CREATE INDEX audit_logs_by_reason_desc ON audit_logs (rs, LOWER((body::jsonb #>> '{outcome,reason}')) DESC NULLS LAST, ((body::jsonb #>> '{outcome,reason}') COLLATE "C") DESC NULLS LAST, id);
