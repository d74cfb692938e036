-- +goose Up
-- Streaming queries: the operators run in the client; the server keeps one
-- row per registered query and JSON state per (query, source partition,
-- key). Neither table has a foreign key (the store runs with foreign keys
-- off): a query's state is deleted with it by the store, in the same
-- transaction, and partition_id is whatever the client sends.

CREATE TABLE stream_queries (
    id           TEXT    PRIMARY KEY, -- UUID, stable for the life of the row
    tenant       TEXT    NOT NULL DEFAULT '',
    name         TEXT    NOT NULL,
    source_queue TEXT    NOT NULL,
    sink_queue   TEXT,                -- NULL: the chain ends in foreach
    config_hash  TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    UNIQUE (tenant, name)
) STRICT, WITHOUT ROWID;
-- Deleting a queue finds the queries reading from it.
CREATE INDEX stream_queries_source ON stream_queries (tenant, source_queue);

CREATE TABLE stream_state (
    query_id     TEXT    NOT NULL,
    partition_id TEXT    NOT NULL,
    key          TEXT    NOT NULL,
    -- Raw JSON as the client sent it.
    value        TEXT    NOT NULL,
    -- The value's numeric windowEnd (epoch ms), extracted at write for the
    -- idle flush's ripe filter; NULL when the value has none.
    window_end   REAL,
    updated_at   INTEGER NOT NULL,
    PRIMARY KEY (query_id, partition_id, key)
) STRICT, WITHOUT ROWID;

-- +goose Down
DROP TABLE stream_state;
DROP TABLE stream_queries;
