-- Audit entries at a million (issue 34): `search` and `order` on any documented field answer
-- without reading every entry. Audit entries are written only on management changes, so the
-- indexes cost little on the write side; the edge tables are untouched.
--
-- Search: a trigram index (FTS5 `trigram`, external content: the `search` column of
-- `audit_logs`, kept in step by the triggers below). `store::audit` asks it for the entries that
-- hold every trigram of the search text (a superset: no positions are stored, `detail=none`) and
-- checks those with the list's `LIKE` as before. Searches of fewer than three characters have no
-- trigram and read the window as before.
CREATE VIRTUAL TABLE audit_search USING fts5(
    search, content = 'audit_logs', content_rowid = 'seq', tokenize = 'trigram', detail = 'none'
);
INSERT INTO audit_search (audit_search) VALUES ('rebuild');
CREATE TRIGGER audit_logs_search_insert AFTER INSERT ON audit_logs BEGIN
    INSERT INTO audit_search (rowid, search) VALUES (new.seq, new.search);
END;
CREATE TRIGGER audit_logs_search_delete AFTER DELETE ON audit_logs BEGIN
    INSERT INTO audit_search (audit_search, rowid, search) VALUES ('delete', old.seq, old.search);
END;
CREATE TRIGGER audit_logs_search_update AFTER UPDATE OF seq, search ON audit_logs BEGIN
    INSERT INTO audit_search (audit_search, rowid, search) VALUES ('delete', old.seq, old.search);
    INSERT INTO audit_search (rowid, search) VALUES (new.seq, new.search);
END;

-- Order: one index per sortable field and direction, holding the keys exactly as the list
-- writes them (`field COLLATE NOCASE dir, field dir, id ASC`; ties on `externalId` ascending in
-- both directions, so a descending order needs an index of its own), so the first page is read
-- off the index with no sort. Body fields without a column are indexed on the expression the
-- list orders by. `externalId` (and `resourceSetId` within one resource set) read `(rs, id)`.
CREATE INDEX audit_logs_rs_id ON audit_logs (rs, id);
CREATE INDEX audit_logs_by_category ON audit_logs (rs, category COLLATE NOCASE, category, id);
CREATE INDEX audit_logs_by_category_desc ON audit_logs (rs, category COLLATE NOCASE DESC, category DESC, id);
CREATE INDEX audit_logs_by_activity ON audit_logs (rs, activity COLLATE NOCASE, activity, id);
CREATE INDEX audit_logs_by_activity_desc ON audit_logs (rs, activity COLLATE NOCASE DESC, activity DESC, id);
CREATE INDEX audit_logs_by_target ON audit_logs (rs, target COLLATE NOCASE, target, id);
CREATE INDEX audit_logs_by_target_desc ON audit_logs (rs, target COLLATE NOCASE DESC, target DESC, id);
CREATE INDEX audit_logs_by_severity ON audit_logs (rs, severity COLLATE NOCASE, severity, id);
CREATE INDEX audit_logs_by_severity_desc ON audit_logs (rs, severity COLLATE NOCASE DESC, severity DESC, id);
CREATE INDEX audit_logs_by_actor_type ON audit_logs (rs, actor_type COLLATE NOCASE, actor_type, id);
CREATE INDEX audit_logs_by_actor_type_desc ON audit_logs (rs, actor_type COLLATE NOCASE DESC, actor_type DESC, id);
CREATE INDEX audit_logs_by_actor_email ON audit_logs (rs, actor_email COLLATE NOCASE, actor_email, id);
CREATE INDEX audit_logs_by_actor_email_desc ON audit_logs (rs, actor_email COLLATE NOCASE DESC, actor_email DESC, id);
CREATE INDEX audit_logs_by_actor_name ON audit_logs (rs, actor_name COLLATE NOCASE, actor_name, id);
CREATE INDEX audit_logs_by_actor_name_desc ON audit_logs (rs, actor_name COLLATE NOCASE DESC, actor_name DESC, id);
CREATE INDEX audit_logs_by_result ON audit_logs (rs, result COLLATE NOCASE, result, id);
CREATE INDEX audit_logs_by_result_desc ON audit_logs (rs, result COLLATE NOCASE DESC, result DESC, id);
CREATE INDEX audit_logs_by_ip ON audit_logs (rs, ip COLLATE NOCASE, ip, id);
CREATE INDEX audit_logs_by_ip_desc ON audit_logs (rs, ip COLLATE NOCASE DESC, ip DESC, id);
CREATE INDEX audit_logs_by_user_name ON audit_logs (rs, json_extract(body, '$."actor"."userName"') COLLATE NOCASE, json_extract(body, '$."actor"."userName"'), id);
CREATE INDEX audit_logs_by_user_name_desc ON audit_logs (rs, json_extract(body, '$."actor"."userName"') COLLATE NOCASE DESC, json_extract(body, '$."actor"."userName"') DESC, id);
CREATE INDEX audit_logs_by_cp_id ON audit_logs (rs, json_extract(body, '$."actor"."credentialProviderId"') COLLATE NOCASE, json_extract(body, '$."actor"."credentialProviderId"'), id);
CREATE INDEX audit_logs_by_cp_id_desc ON audit_logs (rs, json_extract(body, '$."actor"."credentialProviderId"') COLLATE NOCASE DESC, json_extract(body, '$."actor"."credentialProviderId"') DESC, id);
CREATE INDEX audit_logs_by_ap_id ON audit_logs (rs, json_extract(body, '$."actor"."accessPolicyId"') COLLATE NOCASE, json_extract(body, '$."actor"."accessPolicyId"'), id);
CREATE INDEX audit_logs_by_ap_id_desc ON audit_logs (rs, json_extract(body, '$."actor"."accessPolicyId"') COLLATE NOCASE DESC, json_extract(body, '$."actor"."accessPolicyId"') DESC, id);
CREATE INDEX audit_logs_by_browser ON audit_logs (rs, json_extract(body, '$."client"."userAgent"."browser"') COLLATE NOCASE, json_extract(body, '$."client"."userAgent"."browser"'), id);
CREATE INDEX audit_logs_by_browser_desc ON audit_logs (rs, json_extract(body, '$."client"."userAgent"."browser"') COLLATE NOCASE DESC, json_extract(body, '$."client"."userAgent"."browser"') DESC, id);
CREATE INDEX audit_logs_by_os ON audit_logs (rs, json_extract(body, '$."client"."userAgent"."operatingSystem"') COLLATE NOCASE, json_extract(body, '$."client"."userAgent"."operatingSystem"'), id);
CREATE INDEX audit_logs_by_os_desc ON audit_logs (rs, json_extract(body, '$."client"."userAgent"."operatingSystem"') COLLATE NOCASE DESC, json_extract(body, '$."client"."userAgent"."operatingSystem"') DESC, id);
CREATE INDEX audit_logs_by_user_agent ON audit_logs (rs, json_extract(body, '$."client"."userAgent"."raw"') COLLATE NOCASE, json_extract(body, '$."client"."userAgent"."raw"'), id);
CREATE INDEX audit_logs_by_user_agent_desc ON audit_logs (rs, json_extract(body, '$."client"."userAgent"."raw"') COLLATE NOCASE DESC, json_extract(body, '$."client"."userAgent"."raw"') DESC, id);
CREATE INDEX audit_logs_by_reason ON audit_logs (rs, json_extract(body, '$."outcome"."reason"') COLLATE NOCASE, json_extract(body, '$."outcome"."reason"'), id);
CREATE INDEX audit_logs_by_reason_desc ON audit_logs (rs, json_extract(body, '$."outcome"."reason"') COLLATE NOCASE DESC, json_extract(body, '$."outcome"."reason"') DESC, id);
