-- +goose Up
-- What the background work and the operator routes keep at rest: consumer
-- traces, the push buffer of maintenance mode, and operator settings that
-- must survive a restart (the maintenance flags).
--
-- Retention itself needs no table: it deletes whole segments and moves
-- partitions.log_start.

-- One row per POST /api/v1/traces. A trace names its message by partition
-- uuid, never by partitions.id: a rowid can be reused after a queue is
-- deleted, a uuid cannot, so a recreated queue never inherits old traces.
CREATE TABLE traces (
    id             INTEGER PRIMARY KEY,
    uuid           TEXT    NOT NULL UNIQUE,
    tenant         TEXT    NOT NULL DEFAULT '',
    partition_uuid TEXT    NOT NULL,
    txn_id         TEXT    NOT NULL,
    group_name     TEXT    NOT NULL,
    event_type     TEXT    NOT NULL,
    -- The trace's data as the client sent it (raw JSON).
    data           TEXT    NOT NULL,
    worker_id      TEXT,
    created_at     INTEGER NOT NULL
) STRICT;
-- Reading a message's traces, and retention dropping the traces of the
-- frames it evicts, both look traces up by message.
CREATE INDEX traces_message ON traces (partition_uuid, txn_id);

-- The names a trace was filed under (traceNames), for the by-name views.
CREATE TABLE trace_names (
    tenant   TEXT    NOT NULL,
    name     TEXT    NOT NULL,
    trace_id INTEGER NOT NULL,
    PRIMARY KEY (tenant, name, trace_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX trace_names_trace ON trace_names (trace_id);

-- Pushes accepted while push maintenance is on: durable, invisible to pops,
-- drained into the log in id order when maintenance ends. A row is deleted
-- in the same transaction that appends it, so a crash never loses or
-- doubles one. Payloads of encrypted queues are stored sealed.
CREATE TABLE push_buffer (
    id             INTEGER PRIMARY KEY,
    tenant         TEXT    NOT NULL DEFAULT '',
    queue_name     TEXT    NOT NULL,
    partition_name TEXT    NOT NULL,
    txn_id         TEXT    NOT NULL,
    trace_id       TEXT,
    producer_sub   TEXT,
    payload        BLOB    NOT NULL,
    created_at     INTEGER NOT NULL
) STRICT;

-- Operator settings that outlive the process, as text.
CREATE TABLE settings (
    key        TEXT    PRIMARY KEY,
    value      TEXT    NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- +goose Down
DROP TABLE settings;
DROP TABLE push_buffer;
DROP INDEX trace_names_trace;
DROP TABLE trace_names;
DROP INDEX traces_message;
DROP TABLE traces;
