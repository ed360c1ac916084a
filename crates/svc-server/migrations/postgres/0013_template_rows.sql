-- SQLite's migration 0013 moves its `(rs, tpl, ts)` index into a table of its own, purged in
-- its own order (retention without the index's scatter). PostgreSQL's purge meets issue 34's
-- target with the index (394,000 rows a second, docs/PERFORMANCE.md): nothing changes here.
SELECT 1;
