-- Nodes (issue 32, docs/OPERATIONS.md): each running `svc serve` keeps a row here, written at
-- start and every few seconds. It says what the node holds: its version and public URL (so that
-- `svc admin token` can tell when the token it mints names another issuer than the server's),
-- the ids of the encryption keys it holds and the one it seals with (so that an at-rest key
-- rotation starts only once every running node holds the new key, and retires the old one only
-- once every node seals with the new). Rows of nodes not seen for a day are deleted.
CREATE TABLE nodes (
    node_id    TEXT PRIMARY KEY,
    host       TEXT   NOT NULL,
    pid        INTEGER NOT NULL,
    version    TEXT   NOT NULL,
    public_url TEXT   NOT NULL,
    key_ids    TEXT   NOT NULL,
    active_key TEXT   NOT NULL,
    started_at INTEGER NOT NULL,
    seen_at    INTEGER NOT NULL
);
