-- The client-port order's own index (issue 34): `order=clientRequest.network.sourcePort` (and a
-- workload event's `network.clientWorkloadPort`) sorted the window's rows, 0.3-0.7 s at ten
-- million events. An index on `edge_requests.port` is written at a random place by every request
-- and cost /credentials ~9,400 instructions (+4.8%, over issue 34's budget; migration 0010).
--
-- This table is that index kept apart: one entry per request row, sorted by day, resource set,
-- port, time and row, written in the background in short chunks behind the event writer
-- (`Store::index_ports`), never by it: the work is PostgreSQL's, off the request's path (on
-- SQLite it would be the server's own, over the budget: its migration 0012).
-- `edge_request_ports_mark.seq` is the last request row it holds: a list reads the rows after
-- it from `edge_requests` and merges them (`Store::rows_by_port`). A row without a client port is entered with port -1 (the lowest, as
-- the lists sort a null port). Retention deletes whole days of it (`Store::purge_events`).
-- Rows written before this migration are entered by the same background job, from the first.
CREATE TABLE edge_request_ports (
    day  BIGINT  NOT NULL,
    rs   TEXT    NOT NULL,
    port BIGINT  NOT NULL,
    ts   BIGINT  NOT NULL,
    seq  BIGINT  NOT NULL,
    tpl  BIGINT,
    PRIMARY KEY (day, rs, port, ts, seq)
);

CREATE TABLE edge_request_ports_mark (
    id  INTEGER PRIMARY KEY CHECK (id = 1),
    seq BIGINT  NOT NULL
);
INSERT INTO edge_request_ports_mark (id, seq) VALUES (1, 0);
