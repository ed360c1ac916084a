-- PostgreSQL's migration 0014 partitions `edge_requests` by day, so that retention drops a day
-- whole. SQLite deletes old rows from the head of the table in short chunks (`Store::purge_events`,
-- about 8 s for a day of ten million events): nothing changes here.
SELECT 1;
