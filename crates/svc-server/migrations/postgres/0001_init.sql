-- Svc schema, PostgreSQL dialect. Configuration entities are JSON documents keyed by (kind, id):
-- the service holds them all in memory and this table is their durable copy. Secrets sit in
-- `secrets`, AES-256-GCM sealed by the application. Events and audit entries are queried in SQL.

CREATE TABLE entities (
    kind        TEXT    NOT NULL,
    id          TEXT    NOT NULL,
    seq         BIGINT NOT NULL,
    rs          TEXT,
    body        TEXT    NOT NULL,
    secrets     TEXT,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (kind, id)
);

CREATE TABLE sequences (
    kind TEXT PRIMARY KEY,
    next BIGINT NOT NULL
);

-- Every committed entity write appends a row; other nodes poll it to refresh their snapshot.
CREATE TABLE changes (
    seq  BIGSERIAL PRIMARY KEY,
    kind TEXT    NOT NULL,
    id   TEXT    NOT NULL,
    at   BIGINT NOT NULL
);

CREATE TABLE signing_keys (
    kid        TEXT PRIMARY KEY,
    alg        TEXT    NOT NULL,
    created_at BIGINT NOT NULL,
    active_at  BIGINT NOT NULL,
    retire_at  BIGINT,
    material   TEXT    NOT NULL
);

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE audit_logs (
    seq         BIGSERIAL PRIMARY KEY,
    id          TEXT    NOT NULL UNIQUE,
    rs          TEXT    NOT NULL,
    created_at  BIGINT NOT NULL,
    category    TEXT,
    activity    TEXT,
    target      TEXT,
    severity    TEXT,
    actor_type  TEXT,
    actor_email TEXT,
    actor_name  TEXT,
    result      TEXT,
    ip          TEXT,
    search      TEXT    NOT NULL,
    body        TEXT    NOT NULL
);
CREATE INDEX audit_logs_rs_time ON audit_logs (rs, created_at);

CREATE TABLE authorization_events (
    seq        BIGSERIAL PRIMARY KEY,
    id         TEXT    NOT NULL UNIQUE,
    rs         TEXT    NOT NULL,
    ts         BIGINT NOT NULL,
    event_type TEXT    NOT NULL,
    severity   TEXT    NOT NULL,
    result     TEXT,
    client_ip  TEXT,
    search     TEXT    NOT NULL,
    body       TEXT    NOT NULL
);
CREATE INDEX authorization_events_rs_time ON authorization_events (rs, ts);

CREATE TABLE workload_events (
    seq             BIGSERIAL PRIMARY KEY,
    id              TEXT    NOT NULL UNIQUE,
    rs              TEXT    NOT NULL,
    ts              BIGINT NOT NULL,
    event_type      TEXT    NOT NULL,
    action          TEXT,
    severity        TEXT    NOT NULL,
    client_workload TEXT,
    server_workload TEXT,
    app_protocol    TEXT,
    user_id         TEXT,
    search          TEXT    NOT NULL,
    body            TEXT    NOT NULL
);
CREATE INDEX workload_events_rs_time ON workload_events (rs, ts);

-- Short-lived single-use values (OAuth state, PKCE verifiers) shared by all nodes.
CREATE TABLE pending_states (
    state      TEXT PRIMARY KEY,
    purpose    TEXT    NOT NULL,
    data       TEXT    NOT NULL,
    expires_at BIGINT NOT NULL
);
