-- Retention without the template index's scatter (issue 34). `(rs, tpl, ts)` on `edge_requests`
-- ordered a day's rows by template, so the purge, deleting rows from the head in time order,
-- removed one entry from nearly every page of that index per chunk and wrote each page ~80
-- times over a day: 60,000 rows a second, ~55 s for a day of ten million events, the edge's p99
-- 4-11x while it ran (docs/PERFORMANCE.md). Without that index the same purge deleted 917,729
-- rows a second.
--
-- The index becomes a table of its own, `edge_request_tpls`, filled by a trigger (every insert
-- lists its row; `OR FAIL`, as the writer's insert, `request_insert_sql`: no statement journal)
-- and purged in its own key order (`Store::purge_events_through`): each of the two B-trees then
-- loses whole pages in turn.
-- Keyed by template first, then time: a day's templates (a template is of one day) are one
-- stretch of it, and a template's rows in a window one range of it. `rs` rides along unkeyed: a
-- template's rows are nearly always one resource set's, and the window still filters on it.
-- Every read of a template's rows in a window reads it (`Store::template_rows`); PostgreSQL
-- keeps its index (its purge meets the target, 394,000 rows a second).
CREATE TABLE edge_request_tpls (
    tpl INTEGER NOT NULL,
    ts  INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    rs  TEXT    NOT NULL,
    PRIMARY KEY (tpl, ts, seq)
) WITHOUT ROWID;

INSERT INTO edge_request_tpls (tpl, ts, seq, rs)
    SELECT tpl, ts, seq, rs FROM edge_requests WHERE tpl IS NOT NULL ORDER BY tpl, ts, seq;

DROP INDEX edge_requests_rs_tpl_time;

-- Rows stored before templates (migration 0007): whether a window holds any is read here.
CREATE INDEX edge_requests_untemplated ON edge_requests (rs, ts) WHERE tpl IS NULL;

CREATE TRIGGER edge_request_tpls_insert AFTER INSERT ON edge_requests WHEN new.tpl IS NOT NULL
BEGIN
    INSERT OR FAIL INTO edge_request_tpls (tpl, ts, seq, rs) VALUES (new.tpl, new.ts, new.seq, new.rs);
END;
