package store_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
	"github.com/comb-broker/comb/store"
)

// goose's version rows changed with sqlite3 while the file is served:
// the served file still backs up and checks (before: "holds no comb
// schema", and GET /api/v1/system/backup answered 500), check says what
// is off, and the next start writes the rows again instead of running
// migrations the schema already has (before: comb serve would not start,
// "table queues already exists").
func TestVersionRowsEditedByHandAreReadFromTheSchema(t *testing.T) {
	ctx := context.Background()
	for _, edit := range []string{
		`UPDATE goose_db_version SET is_applied = 0`,
		`UPDATE goose_db_version SET version_id = 0`,
		`DELETE FROM goose_db_version WHERE version_id = (SELECT MAX(version_id) FROM goose_db_version)`,
		`DELETE FROM goose_db_version WHERE version_id > 3`,
		`DELETE FROM goose_db_version`,
		`DROP TABLE goose_db_version`,
		`UPDATE goose_db_version SET version_id = 'x' WHERE version_id = 2`,
		`UPDATE goose_db_version SET is_applied = 'yes'`,
		`UPDATE goose_db_version SET version_id = 1000000`,
	} {
		t.Run(edit, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "c.db")
			st := openLogged(t, path, nil)
			pushN(t, st, "a", 5)
			want := combtest.SQLite3Exec(t, path, `SELECT MAX(version_id) FROM goose_db_version`)
			wantRows := combtest.SQLite3Exec(t, path, `SELECT COUNT(*) || ' ' || MAX(version_id) || ' ' || MIN(is_applied) FROM goose_db_version`)
			combtest.SQLite3Exec(t, path, "PRAGMA busy_timeout = 10000; "+edit)
			if err := st.Backup(ctx, filepath.Join(dir, "backup.db")); err != nil {
				t.Errorf("backup of the served file: %v", err)
			}
			rep, err := store.Check(ctx, path)
			if err != nil {
				t.Fatalf("check of the served file: %v", err)
			}
			if strconv.FormatInt(rep.SchemaVersion, 10) != want || len(rep.Findings) != 1 ||
				!strings.Contains(rep.Findings[0].Detail, "goose_db_version's rows") {
				t.Errorf("check: version %d, findings %v; want version %s and the rows named", rep.SchemaVersion, rep.Findings, want)
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{path, filepath.Join(dir, "backup.db")} {
				var logs bytes.Buffer
				st := openLogged(t, p, slog.New(slog.NewTextHandler(&logs, nil)))
				if !strings.Contains(logs.String(), "goose_db_version's rows") {
					t.Errorf("%s: open said nothing of the rows it wrote again:\n%s", filepath.Base(p), logs.String())
				}
				pushN(t, st, "b", 1)
				if err := st.Close(); err != nil {
					t.Fatal(err)
				}
				if got := combtest.SQLite3Exec(t, p, `SELECT COUNT(*) || ' ' || MAX(version_id) || ' ' || MIN(is_applied) FROM goose_db_version`); got != wantRows {
					t.Errorf("%s: rows %q after open, want %q as before the edit", filepath.Base(p), got, wantRows)
				}
				if got := combtest.SQLite3Exec(t, p, `SELECT SUM(frame_count) FROM segments`); got != "6" {
					t.Errorf("%s: %s messages stored, want 6", filepath.Base(p), got)
				}
				combtest.CheckInvariants(t, p)
			}
		})
	}
}

// Rows that claim a version past this binary's beside every version it
// knows are still a newer comb's file: refused, not written down.
func TestWellFormedRowsOfANewerVersionAreStillRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	st := openLogged(t, path, nil)
	pushN(t, st, "a", 1)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	combtest.SQLite3Exec(t, path, `INSERT INTO goose_db_version (version_id, is_applied) SELECT MAX(version_id) + 1, 1 FROM goose_db_version`)
	if s, err := store.Open(context.Background(), store.Options{Path: path}); err == nil {
		s.Close()
		t.Fatal("opened a file of a newer schema")
	} else if !errors.Is(err, combtype.ErrSchemaTooNew) {
		t.Errorf("open: %v, want ErrSchemaTooNew", err)
	}
}
