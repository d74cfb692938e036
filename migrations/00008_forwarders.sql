-- +goose Up
-- Forwarders join a local queue to a queue of an upstream broker over the
-- push, pop and ack routes. direction 'push' drains local messages upstream
-- through the local consumer group group_name; 'pull' feeds the local queue
-- from the upstream queue through the upstream group group_name. queue is a
-- queue name or, for push, a glob over queue names. evicted counts messages
-- retention removed before they were forwarded. pending_ack holds, for pull,
-- the upstream ack owed for a batch already committed locally, so a restart
-- settles it instead of waiting for the upstream lease to expire.
CREATE TABLE forwarders (
    id             INTEGER PRIMARY KEY,
    tenant         TEXT    NOT NULL DEFAULT '',
    name           TEXT    NOT NULL,
    direction      TEXT    NOT NULL CHECK (direction IN ('push', 'pull')),
    queue          TEXT    NOT NULL,
    upstream_url   TEXT    NOT NULL,
    upstream_queue TEXT    NOT NULL DEFAULT '',
    token          TEXT    NOT NULL DEFAULT '',
    group_name     TEXT    NOT NULL,
    batch          INTEGER NOT NULL,
    paused         INTEGER NOT NULL DEFAULT 0,
    evicted        INTEGER NOT NULL DEFAULT 0,
    pending_ack    TEXT,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    UNIQUE (tenant, name)
);

-- +goose Down
DROP TABLE forwarders;
