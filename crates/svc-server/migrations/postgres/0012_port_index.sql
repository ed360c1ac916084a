-- The client-port order (issue 34): `order=clientRequest.network.sourcePort` (and a workload
-- event's `network.clientWorkloadPort`) sorted the window's rows, 0.3 s at ten million events.
-- An index on the port, inserted into by PostgreSQL in each event transaction: a list reads each
-- resource set's rows in its order (`Store::rows_by_port`), nulls first as the lists sort them
-- (a descending list reads it backwards). It costs the server nothing (the instruction budget
-- is the server's: on SQLite the same index was over it, its migration 0012), PostgreSQL 2-9%
-- of the fill's requests a second and ~157 bytes a request (inserted at random places, its
-- pages stay about half full; built here at once, ~86). A table of it filled in the background
-- behind the event writer cost more: 4-15% of the fill's rate (its rows read again, a heap of
-- its own) and ~174 bytes a request (docs/performance-runs.md, run 39).
--
-- Built CONCURRENTLY, each statement on its own (`Migration::concurrent`): the nodes still
-- running keep storing events (so answering) while it is built, a few seconds per million
-- request rows. A build cut short leaves an invalid index, dropped by the next start's run.
DROP INDEX CONCURRENTLY IF EXISTS edge_requests_port;
CREATE INDEX CONCURRENTLY edge_requests_port ON edge_requests (rs, port NULLS FIRST, ts, seq);
