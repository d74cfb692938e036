package migrations_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/pressly/goose/v3"
	_ "modernc.org/sqlite"

	"github.com/comb-broker/comb/migrations"
)

// testRows holds one row for every table the migrations create, with the
// columns later migrations add set, so that each Down runs with rows
// present. A new table needs its row here: TestUpDownUp fails on a table
// this list does not fill.
var testRows = []struct{ table, insert string }{
	{"queues", `INSERT INTO queues (uuid, name, created_at) VALUES ('q', 'orders', 1)`},
	{"partitions", `INSERT INTO partitions (uuid, queue_id, name, created_at, last_segment_id) VALUES ('p', 1, 'Default', 1, 1)`},
	{"segments", `INSERT INTO segments (partition_id, base_offset, frame_count, created_at, codec, raw_size, checksum, data)
		VALUES (1, 0, 1, 1, 0, 1, 0, x'00')`},
	{"txids", `INSERT INTO txids (partition_id, txn_key, offset) VALUES (1, 1, 0)`},
	{"cursors", `INSERT INTO cursors (partition_id, group_name, committed, lease_id, lease_from, lease_to, lease_expires_at,
		created_at, dropped_lease) VALUES (1, 'g', -1, 'l', 0, 0, 2, 1, 'l0')`},
	{"subscriptions", `INSERT INTO subscriptions (queue_id, group_name, mode, from_time, created_at, after_partition,
		start_mode, start_from, start_seq, start_partition) VALUES (1, 'g', 'timestamp', 1, 1, 1, 'timestamp', 1, 1, 1)`},
	{"dlq", `INSERT INTO dlq (message_id, queue_name, partition_name, partition_uuid, group_name, txn_id, offset, payload,
		created_at, failed_at) VALUES ('p:0', 'orders', 'Default', 'p', 'g', 't', 0, x'00', 1, 1)`},
	{"snapshots", `INSERT INTO snapshots (name, group_name, queue_uuid, queue_name, created_at, expires_at)
		VALUES ('s', 'g', 'q', 'orders', 1, 2)`},
	{"snapshot_cursors", `INSERT INTO snapshot_cursors (snapshot_id, partition_uuid, partition_name, committed)
		VALUES (1, 'p', 'Default', -1)`},
	{"traces", `INSERT INTO traces (uuid, partition_uuid, txn_id, group_name, event_type, data, created_at)
		VALUES ('tr', 'p', 't', 'g', 'info', '{}', 1)`},
	{"trace_names", `INSERT INTO trace_names (tenant, name, trace_id) VALUES ('', 'n', 1)`},
	{"push_buffer", `INSERT INTO push_buffer (queue_name, partition_name, txn_id, payload, created_at)
		VALUES ('orders', 'Default', 't2', x'00', 1)`},
	{"settings", `INSERT INTO settings (key, value, updated_at) VALUES ('k', 'v', 1)`},
	{"tombstones", `INSERT INTO tombstones (partition_id, offset, created_at) VALUES (1, 0, 1)`},
	{"quarantined_segments", `INSERT INTO quarantined_segments (tenant, queue_name, partition_name, partition_uuid,
		base_offset, frame_count, reason, segment_created_at, codec, raw_size, checksum, data, quarantined_at, restored_through)
		VALUES ('', 'orders', 'Default', 'p', 0, 1, 'checksum', 1, 0, 1, 0, x'00', 1, 'g')`},
	{"stream_queries", `INSERT INTO stream_queries (id, name, source_queue, config_hash, created_at, updated_at, state_id)
		VALUES ('sq', 'agg', 'orders', 'h', 1, 1, 'sq2')`},
	{"stream_state", `INSERT INTO stream_state (query_id, partition_id, key, value, updated_at)
		VALUES ('sq', 'p', 'k', '0', 1)`},
	{"forwarders", `INSERT INTO forwarders (name, direction, queue, upstream_url, group_name, batch, created_at, updated_at)
		VALUES ('f', 'push', 'orders', 'http://127.0.0.1:1', 'g', 10, 1, 1)`},
	{"dlq_detached", `INSERT INTO dlq_detached (tenant, queue_name, through_id) VALUES ('', 'orders', 1)`},
	{"stream_state_detached", `INSERT INTO stream_state_detached (state_key) VALUES ('sq1')`},
}

// userTables lists the tables of db other than SQLite's and goose's own.
func userTables(t *testing.T, db *sql.DB) []string {
	return names(t, db, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'
		AND name != 'goose_db_version' ORDER BY name`)
}

// names returns the one text column query selects, row by row.
func names(t *testing.T, db *sql.DB, query string) []string {
	t.Helper()
	rows, err := db.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// openProvider opens a new database file and the goose provider of the
// migrations on it.
func openProvider(t *testing.T) (*sql.DB, *goose.Provider) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	goose.SetLogger(goose.NopLogger())
	p, err := goose.NewProvider(goose.DialectSQLite3, db, migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	return db, p
}

// TestUpDownUp applies every migration, writes a row in every table, rolls
// all the way down and up again: each Down must undo its Up even with rows
// present, and the versions must apply in order on a fresh file.
func TestUpDownUp(t *testing.T) {
	ctx := context.Background()
	db, p := openProvider(t)
	up, err := p.Up(ctx)
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	if len(up) == 0 {
		t.Fatal("no migration applied")
	}
	for _, r := range testRows {
		if _, err := db.Exec(r.insert); err != nil {
			t.Fatalf("insert a row in %s: %v", r.table, err)
		}
	}
	tables := userTables(t, db)
	filled := map[string]bool{}
	for _, r := range testRows {
		filled[r.table] = true
	}
	for _, table := range tables {
		if !filled[table] {
			t.Errorf("table %s has no row in testRows: add one, so its Down is tested with data", table)
			continue
		}
		delete(filled, table)
		var n int
		if err := db.QueryRow(`SELECT COUNT(*) FROM "` + table + `"`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Errorf("table %s is empty after its test row was written", table)
		}
	}
	for table := range filled {
		t.Errorf("testRows fills %s, which no migration creates", table)
	}
	if _, err := p.DownTo(ctx, 0); err != nil {
		t.Fatalf("down with rows present: %v", err)
	}
	if left := userTables(t, db); len(left) != 0 {
		t.Errorf("tables left after migrating down: %v (of %v)", left, tables)
	}
	if again, err := p.Up(ctx); err != nil || len(again) != len(up) {
		t.Fatalf("up again: %d applied, %v", len(again), err)
	}
}

// txidsKeyOrder returns the primary-key columns of txids, in key order.
func txidsKeyOrder(t *testing.T, db *sql.DB) []string {
	return names(t, db, `SELECT name FROM pragma_table_info('txids') WHERE pk > 0 ORDER BY pk`)
}

// txidsRows returns every row of txids as text, in one fixed order.
func txidsRows(t *testing.T, db *sql.DB) string {
	t.Helper()
	var s string
	if err := db.QueryRow(`SELECT COALESCE(group_concat(r, ' '), '') FROM (SELECT partition_id || ':' || txn_key || ':' || offset AS r
		FROM txids ORDER BY partition_id, txn_key, offset)`).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// Migration 9 rebuilds txids keyed by txn_key first; up and down must
// carry every row across.
func TestTxidsByKeyKeepsRows(t *testing.T) {
	ctx := context.Background()
	db, p := openProvider(t)
	if _, err := p.UpTo(ctx, 8); err != nil {
		t.Fatalf("up to 8: %v", err)
	}
	// Several partitions, keys out of order, one key shared by two
	// partitions and one key at two offsets of one partition (keys are not
	// unique to an id).
	if _, err := db.Exec(`INSERT INTO txids (partition_id, txn_key, offset) VALUES
		(1, 50, 0), (1, 10, 1), (1, 10, 2), (2, 50, 0), (2, -7, 1), (3, 9223372036854775807, 0)`); err != nil {
		t.Fatal(err)
	}
	// Partition 4 holds no key.
	if _, err := db.Exec(`INSERT INTO queues (uuid, name, created_at) VALUES ('q', 'orders', 1);
		INSERT INTO partitions (id, uuid, queue_id, name, created_at) VALUES
		(1, 'p1', 1, 'a', 1), (2, 'p2', 1, 'b', 1), (3, 'p3', 1, 'c', 1), (4, 'p4', 1, 'd', 1)`); err != nil {
		t.Fatal(err)
	}
	want := txidsRows(t, db)
	if got := txidsKeyOrder(t, db); fmt.Sprint(got) != "[partition_id txn_key offset]" {
		t.Fatalf("key before migration 9 = %v", got)
	}
	if _, err := p.UpTo(ctx, 9); err != nil {
		t.Fatalf("up to 9: %v", err)
	}
	if got := txidsKeyOrder(t, db); fmt.Sprint(got) != "[txn_key partition_id offset]" {
		t.Errorf("key after migration 9 = %v", got)
	}
	if got := txidsRows(t, db); got != want {
		t.Errorf("rows after migration 9 = %q, want %q", got, want)
	}
	// Each partition's highest key moves to its row.
	var ceilings string
	if err := db.QueryRow(`SELECT group_concat(id || ':' || COALESCE(max_txn_key, 'none'), ' ')
		FROM (SELECT id, max_txn_key FROM partitions ORDER BY id)`).Scan(&ceilings); err != nil {
		t.Fatal(err)
	}
	if want := "1:50 2:50 3:9223372036854775807 4:none"; ceilings != want {
		t.Errorf("max_txn_key after migration 9 = %q, want %q", ceilings, want)
	}
	var withoutRowid, strict bool
	if err := db.QueryRow(`SELECT wr, strict FROM pragma_table_list('txids')`).Scan(&withoutRowid, &strict); err != nil {
		t.Fatal(err)
	}
	if !withoutRowid || !strict {
		t.Errorf("txids after migration 9: WITHOUT ROWID %v, STRICT %v; want both", withoutRowid, strict)
	}
	if _, err := p.DownTo(ctx, 8); err != nil {
		t.Fatalf("down to 8: %v", err)
	}
	if got := txidsKeyOrder(t, db); fmt.Sprint(got) != "[partition_id txn_key offset]" {
		t.Errorf("key after migration 9's down = %v", got)
	}
	if got := txidsRows(t, db); got != want {
		t.Errorf("rows after migration 9's down = %q, want %q", got, want)
	}
}
