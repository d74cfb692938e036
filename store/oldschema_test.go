package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/migrations"
)

// A file an older comb wrote (here: migrated to version 20, as a backup
// taken before an upgrade is) is checked against the schema of its own
// version: it lacks what later migrations add, which comb serve adds when
// it opens it, and has no findings; what it lacks of its own version is
// still found. Against the newest schema it had three findings, and comb
// restore refused it.
func TestAnOlderSchemasFileIsCheckedAgainstItsOwnVersion(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	provider, err := goose.NewProvider(goose.DialectSQLite3, db, migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provider.UpTo(ctx, 20); err != nil {
		t.Fatal(err)
	}
	check := func() *combtype.CheckReport {
		t.Helper()
		rep, err := Check(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	if rep := check(); rep.SchemaVersion != 20 || len(rep.Findings) != 0 {
		t.Fatalf("check of a version 20 file = schema %d, findings %v; want 20 and none", rep.SchemaVersion, rep.Findings)
	}
	if _, err := db.ExecContext(ctx, `DROP INDEX snapshots_expiry`); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	rep := check()
	if len(rep.Findings) != 1 || !strings.Contains(rep.Findings[0].Detail, "index snapshots_expiry is missing") {
		t.Fatalf("check of a version 20 file without one of its indexes = %v", rep.Findings)
	}
}
