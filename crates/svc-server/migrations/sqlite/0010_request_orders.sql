-- Event lists ordered on a request's own values (issue 34): `meta.contextId` (a workload event's
-- `meta.connectionId`, `meta.directiveId`) and the client port (`clientRequest.network.sourcePort`,
-- `network.clientWorkloadPort`). No template decides them, so a sort on them read every event of
-- the window (seconds at ten million).
--
-- A request's `contextId` is now derived from its first event's id, a version 7 UUID of the
-- request's time: the id with the 34th character of its text xor 8 (`store::context_of`). It orders as the
-- event ids do, the time first, and new rows leave `ctx` null (the views derive it from `eid`, for
-- a row that has a client port). Rows stored before keep their random (version 4) `ctx`; the
-- partial index below lists them, so a list whose window holds any reads as before.
--
-- The client port has no index: one written at a random place by every request cost /credentials
-- ~9,400 instructions (+4.8%, over issue 34's budget; docs/PERFORMANCE.md). A list ordered on it
-- sorts the window's rows (not their events) by it.

-- The rows whose `contextId` is not derived from their first event's id: stored before this
-- migration (or without a client port). New rows are not in it.
CREATE INDEX edge_requests_stored_context ON edge_requests (rs, ts) WHERE ctx IS NOT NULL OR port IS NULL;

DROP VIEW edge_events;

CREATE VIEW edge_events AS
    SELECT r.seq AS rseq, e.key AS n, r.rs AS rs, r.ts AS ts, r.tpl AS tpl,
           COALESCE(t.client_ip, r.client_ip) AS row_ip,
           COALESCE(t.shared, r.shared) AS shared, COALESCE(t.bodies, r.bodies) AS bodies, e.value AS v,
           COALESCE(r.ctx,
                    CASE WHEN r.port IS NOT NULL THEN
                        substr(r.eid, 1, 33)
                        || substr('89abcdef01234567', instr('0123456789abcdef', substr(r.eid, 34, 1)), 1)
                        || substr(r.eid, 35, 2) END) AS ctx,
           r.port AS port,
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
