-- The client-port order's index is PostgreSQL's (its migration 0012). On SQLite every way of
-- keeping request rows sorted by port costs the server itself a B-tree insert per request: an
-- index on `edge_requests.port` ~9,400 instructions a /credentials request, a table of it filled
-- in the background ~8,000 even without a uniqueness check or a sort, against issue 34's budget
-- of 200,000 with ~2,000-4,500 to spare (docs/PERFORMANCE.md). A list ordered on the port sorts
-- the window's rows there. Nothing changes here.
SELECT 1;
