package migrations_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/pressly/goose/v3"
	_ "modernc.org/sqlite"

	"github.com/comb-broker/comb/migrations"
)

// TestUpDownUp applies every migration, writes a row in every table, rolls
// all the way down and up again: each Down must undo its Up even with rows
// present, and the versions must apply in order on a fresh file.
func TestUpDownUp(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	goose.SetLogger(goose.NopLogger())
	p, err := goose.NewProvider(goose.DialectSQLite3, db, migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	up, err := p.Up(ctx)
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	if len(up) == 0 {
		t.Fatal("no migration applied")
	}
	if _, err := db.Exec(`INSERT INTO queues (uuid, name, created_at) VALUES ('q', 'orders', 1);
		INSERT INTO partitions (uuid, queue_id, name, created_at) VALUES ('p', 1, 'Default', 1);
		INSERT INTO segments (partition_id, base_offset, frame_count, created_at, codec, raw_size, checksum, data) VALUES (1, 0, 1, 1, 0, 1, 0, x'00');
		INSERT INTO txids (partition_id, txn_key, offset) VALUES (1, 1, 0);
		INSERT INTO cursors (partition_id, group_name, committed, created_at) VALUES (1, 'g', -1, 1);
		INSERT INTO subscriptions (queue_id, group_name, mode, created_at) VALUES (1, 'g', 'all', 1);`); err != nil {
		t.Fatalf("insert rows: %v", err)
	}
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name != 'goose_db_version'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		tables = append(tables, n)
	}
	rows.Close()
	if _, err := p.DownTo(ctx, 0); err != nil {
		t.Fatalf("down with rows present: %v", err)
	}
	var left int
	if err := db.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name != 'goose_db_version'`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d tables left after migrating down (of %v)", left, tables)
	}
	if again, err := p.Up(ctx); err != nil || len(again) != len(up) {
		t.Fatalf("up again: %d applied, %v", len(again), err)
	}
}
