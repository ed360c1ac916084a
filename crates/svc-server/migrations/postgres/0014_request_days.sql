-- Retention by the day (issue 34). Deleting a day of ten million events row by row took 36.8 s
-- under 2,000 /credentials a second and raised the edge's p99 3-7x (heap pages, then WAL, then
-- autovacuum, on the edge's own cores; docs/PERFORMANCE.md, run 41). `edge_requests` is now
-- partitioned by time (`ts`), one partition per UTC day named `edge_requests_pYYYYMMDD`, and
-- retention detaches a day older than its cutoff (`DETACH … CONCURRENTLY`: inserts and queries go
-- on meanwhile) and drops it whole (`store::request_days`). Each day's partition is made ahead by
-- every node (at start, hourly, and by the event writer for a day it has not seen), with a primary
-- key on `seq` of its own: a key over every partition would have to hold `ts` too. Its indexes are
-- partitioned indexes now: a later migration builds an index `CONCURRENTLY` partition by
-- partition.
--
-- The rows stored so far stay where they are: the table becomes the partition
-- `edge_requests_legacy` of every time before the second UTC day after its newest row and after
-- now (the nodes still running the binary before write there until then), its indexes those of
-- the new table (matched, not built again); an empty one (a new database) is dropped. Retention
-- deletes its rows as before until the whole of it is older than the cutoff, and then drops it.
--
-- Run statement by statement (`Migration::concurrent`), each safe to run again, so that the nodes
-- still running go on writing: the range is first a `CHECK … NOT VALID` (checked for new rows at
-- once), then validated (a read of the whole table that blocks no write), and the swap itself, one
-- transaction, needs no read of the table (the check proves the range).
--
-- No default partition: `DETACH … CONCURRENTLY` refuses a table that has one.

-- The range of the rows stored so far: before the second day after the newest (through the
-- `(rs, ts)` index, one resource set at a time) and after now.
DO $$
DECLARE
    newest BIGINT;
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = 'edge_requests'::regclass) <> 'r'
       OR EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'edge_requests_before_days') THEN
        RETURN;
    END IF;
    WITH RECURSIVE s(rs) AS (
        SELECT MIN(rs) FROM edge_requests
        UNION ALL
        SELECT (SELECT MIN(rs) FROM edge_requests WHERE rs > s.rs) FROM s WHERE s.rs IS NOT NULL
    )
    SELECT MAX((SELECT MAX(ts) FROM edge_requests WHERE rs = s.rs)) INTO newest
        FROM s WHERE s.rs IS NOT NULL;
    EXECUTE format('ALTER TABLE edge_requests ADD CONSTRAINT edge_requests_before_days CHECK (ts < %s) NOT VALID',
                   (GREATEST(COALESCE(newest, 0), (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT)
                        / 86400000 + 2) * 86400000);
END
$$;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_constraint WHERE conname = 'edge_requests_before_days' AND NOT convalidated
               AND conrelid = 'edge_requests'::regclass) THEN
        ALTER TABLE edge_requests VALIDATE CONSTRAINT edge_requests_before_days;
    END IF;
END
$$;

-- The swap.
DO $$
DECLARE
    bound BIGINT;
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = 'edge_requests'::regclass) <> 'r' THEN
        RETURN;
    END IF;
    SELECT (regexp_match(pg_get_constraintdef(oid), '([0-9]+)'))[1]::BIGINT INTO bound
        FROM pg_constraint WHERE conname = 'edge_requests_before_days' AND conrelid = 'edge_requests'::regclass;
    ALTER TABLE edge_requests RENAME TO edge_requests_legacy;
    ALTER INDEX edge_requests_pkey RENAME TO edge_requests_legacy_pkey;
    ALTER INDEX edge_requests_rs_time RENAME TO edge_requests_legacy_rs_time;
    ALTER INDEX edge_requests_rs_tpl_time RENAME TO edge_requests_legacy_rs_tpl_time;
    ALTER INDEX edge_requests_stored_context RENAME TO edge_requests_legacy_stored_context;
    ALTER INDEX edge_requests_port RENAME TO edge_requests_legacy_port;
    CREATE TABLE edge_requests (
        seq       BIGINT  NOT NULL DEFAULT nextval('edge_requests_seq_seq'),
        rs        TEXT    NOT NULL,
        ts        BIGINT  NOT NULL,
        na        INTEGER NOT NULL,
        nw        INTEGER NOT NULL,
        client_ip TEXT,
        meta      TEXT    NOT NULL,
        shared    TEXT,
        bodies    TEXT    NOT NULL,
        tpl       BIGINT,
        eid       TEXT,
        ctx       TEXT,
        port      BIGINT
    ) PARTITION BY RANGE (ts);
    ALTER SEQUENCE edge_requests_seq_seq OWNED BY edge_requests.seq;
    CREATE INDEX edge_requests_rs_time ON edge_requests (rs, ts);
    CREATE INDEX edge_requests_rs_tpl_time ON edge_requests (rs, tpl, ts);
    CREATE INDEX edge_requests_stored_context ON edge_requests (rs, ts) WHERE ctx IS NOT NULL OR port IS NULL;
    CREATE INDEX edge_requests_port ON edge_requests (rs, port NULLS FIRST, ts, seq);
    -- The views read the table they were made on: the event views read through this one.
    CREATE OR REPLACE VIEW edge_events AS
        SELECT r.seq AS rseq, e.n - 1 AS n, r.rs AS rs, r.ts AS ts, r.tpl AS tpl,
               COALESCE(t.client_ip, r.client_ip) AS row_ip,
               COALESCE(t.shared, r.shared) AS shared,
               COALESCE(t.bodies, r.bodies)::jsonb -> (e.n - 1)::int AS b, e.v AS v,
               COALESCE(t.bodies, r.bodies) AS bodies,
               COALESCE(r.ctx,
                        CASE WHEN r.port IS NOT NULL THEN
                            substr(r.eid, 1, 33)
                            || substr('89abcdef01234567', strpos('0123456789abcdef', substr(r.eid, 34, 1)), 1)
                            || substr(r.eid, 35, 2) END) AS ctx,
               r.port AS port,
               COALESCE(e.v ->> 'k', 'a') AS kind,
               COALESCE(e.v ->> 'id',
                        substr(COALESCE(r.eid, r.meta::jsonb -> 0 ->> 'id'), 1, 35)
                        || substr('0123456789abcdef',
                                  1 + ((strpos('0123456789abcdef', substr(COALESCE(r.eid, r.meta::jsonb -> 0 ->> 'id'), 36, 1)) - 1)
                                       # (e.n - 1)::int),
                                  1)) AS id,
               COALESCE(e.v ->> 's', 'Info') AS severity
        FROM edge_requests AS r
        LEFT JOIN edge_templates AS t ON t.id = r.tpl
        CROSS JOIN LATERAL jsonb_array_elements(COALESCE(t.meta, r.meta)::jsonb) WITH ORDINALITY AS e(v, n);
    IF EXISTS (SELECT 1 FROM edge_requests_legacy) THEN
        EXECUTE format('ALTER TABLE edge_requests ATTACH PARTITION edge_requests_legacy FOR VALUES FROM (MINVALUE) TO (%s)',
                       bound);
    ELSE
        DROP TABLE edge_requests_legacy;
    END IF;
END
$$;
