package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/pressly/goose/v3"

	"github.com/comb-broker/comb/migrations"
)

// goose's version rows changed by another program.
//
// goose keeps the versions applied to a file as rows of goose_db_version
// and trusts them: rows deleted, set back or marked not applied by hand
// (a sqlite3 session, a DB browser "cleaning up") made it run again
// migrations the schema already had, and comb serve would not start
// ("table queues already exists"); a read-only open (comb backup, comb
// check, GET /api/v1/system/backup) called the served file "no comb
// schema" and the backup answered 500. The schema itself says which
// version a file is at: each version's schema is made in memory, and
// when the rows are not as goose writes them, or claim less than the
// schema shows, the version whose schema the file has is the one that
// counts. Open writes the rows again to say so; a read-only open just
// uses it. A file whose rows claim a version newer than this binary, and
// every version it knows besides, is still refused (ErrSchemaTooNew): a
// newer comb's additions may be invisible to this one's comparison.

// versionRows reads what goose's rows claim: the highest version applied,
// and whether they are as goose writes them (versions 0 to that one, each
// once and applied). exists is false when the table is gone.
func versionRows(ctx context.Context, q querier, latest int64) (claim int64, wellFormed, allKnown, exists bool, err error) {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_schema WHERE type = 'table' AND name = 'goose_db_version'`).
		Scan(&n); err != nil {
		return 0, false, false, false, fmt.Errorf("read schema version: %w", err)
	}
	if n == 0 {
		return 0, false, false, false, nil
	}
	// goose's table is not STRICT: a version edited to text or a blob
	// is neither claimed nor well formed.
	var rows, distinct, applied, known int64
	var lo, hi sql.NullInt64
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*), COUNT(DISTINCT version_id),
		COUNT(*) FILTER (WHERE typeof(version_id) = 'integer' AND is_applied IS 1),
		COUNT(DISTINCT version_id) FILTER (WHERE typeof(version_id) = 'integer' AND is_applied IS 1
			AND version_id BETWEEN 0 AND ?),
		MIN(version_id) FILTER (WHERE typeof(version_id) = 'integer'),
		MAX(version_id) FILTER (WHERE typeof(version_id) = 'integer'),
		COALESCE(MAX(version_id) FILTER (WHERE typeof(version_id) = 'integer' AND is_applied IS 1), 0)
		FROM goose_db_version`, latest).Scan(&rows, &distinct, &applied, &known, &lo, &hi, &claim); err != nil {
		return 0, false, false, true, fmt.Errorf("read schema version: %w", err)
	}
	wellFormed = rows > 0 && rows == distinct && rows == applied && lo.Int64 == 0 && hi.Int64 == rows-1
	return claim, wellFormed, known == latest+1, true, nil
}

// schemaShape is a schema as compared for its version: objects by kind
// and name, and each table's columns.
type schemaShape struct {
	objects map[string]schemaObject
	columns map[string][]string
}

// migrationShapes is the schema after each migration, [v] for version v
// (index 0 empty), made by applying the migrations one at a time to an
// empty database in memory, and the statement goose made its own table
// with there.
func migrationShapes(ctx context.Context) (shapes []schemaShape, gooseTable string, err error) {
	db, err := sql.Open("sqlite", "file::memory:")
	if err != nil {
		return nil, "", fmt.Errorf("comb's schema versions: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one connection: one in-memory database
	provider, err := goose.NewProvider(goose.DialectSQLite3, db, migrations.FS)
	if err != nil {
		return nil, "", fmt.Errorf("comb's schema versions: %w", err)
	}
	shapes = []schemaShape{{}}
	for {
		res, err := provider.UpByOne(ctx)
		if errors.Is(err, goose.ErrNoNextVersion) {
			break
		}
		if err != nil {
			return nil, "", fmt.Errorf("comb's schema versions: %w", err)
		}
		if int64(len(shapes)) != res.Source.Version {
			return nil, "", fmt.Errorf("comb's schema versions: migration %d follows %d", res.Source.Version, len(shapes)-1)
		}
		objects, columns, err := schemaOf(ctx, db)
		if err != nil {
			return nil, "", err
		}
		shapes = append(shapes, schemaShape{objects, columns})
	}
	if err := db.QueryRowContext(ctx, `SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'goose_db_version'`).
		Scan(&gooseTable); err != nil {
		return nil, "", fmt.Errorf("goose's table: %w", err)
	}
	return shapes, gooseTable, nil
}

// versionBySchema is the highest migration version whose schema q has,
// or 0 when it has none of them. Only what some version of comb's schema
// holds is compared: indexes, tables and columns another program added
// are left out, as schemaDrift leaves them alone.
func versionBySchema(ctx context.Context, q querier) (int64, error) {
	shapes, _, err := migrationShapes(ctx)
	if err != nil {
		return 0, err
	}
	objects, columns, err := schemaOf(ctx, q)
	if err != nil {
		return 0, err
	}
	known := map[string]bool{}
	knownCols := map[string]map[string]bool{}
	for _, s := range shapes {
		for k, o := range s.objects {
			known[k] = true
			if o.kind == "table" {
				if knownCols[o.name] == nil {
					knownCols[o.name] = map[string]bool{}
				}
				for _, c := range s.columns[o.name] {
					knownCols[o.name][c] = true
				}
			}
		}
	}
	have := map[string]bool{}
	for k := range objects {
		if known[k] && k != "table goose_db_version" {
			have[k] = true
		}
	}
	haveCols := map[string][]string{}
	for table, cols := range columns {
		for _, c := range cols {
			if knownCols[table][c] {
				haveCols[table] = append(haveCols[table], c)
			}
		}
		slices.Sort(haveCols[table])
	}
	for v := len(shapes) - 1; v >= 1; v-- {
		if sameShape(shapes[v], have, haveCols) {
			return int64(v), nil
		}
	}
	return 0, nil
}

func sameShape(s schemaShape, have map[string]bool, haveCols map[string][]string) bool {
	n := 0
	for k := range s.objects {
		if k == "table goose_db_version" {
			continue
		}
		if !have[k] {
			return false
		}
		n++
	}
	if n != len(have) {
		return false
	}
	for table, cols := range s.columns {
		if table == "goose_db_version" {
			continue
		}
		want := slices.Sorted(slices.Values(cols))
		if !slices.Equal(want, haveCols[table]) {
			return false
		}
	}
	return true
}

// schemaVersion is the version of comb's schema q's file is at, and
// whether goose's rows must be written again to say so (see above).
// A file with no table is version 0 and needs nothing.
func schemaVersion(ctx context.Context, q querier, latest int64) (version int64, mend bool, err error) {
	claim, wellFormed, allKnown, _, err := versionRows(ctx, q, latest)
	if err != nil {
		return 0, false, err
	}
	if (claim > latest && allKnown) || (wellFormed && claim == latest) {
		// A claim past this binary, beside rows of every version it
		// knows, is a newer comb's file, refused by the caller: that
		// comb's additions may be invisible to the comparison.
		return claim, false, nil
	}
	v, err := versionBySchema(ctx, q)
	if err != nil {
		return 0, false, err
	}
	if v == 0 || (wellFormed && v <= claim) {
		// Not a schema of comb's (the caller says what it is instead),
		// or rows that already claim it.
		return claim, false, nil
	}
	return v, true, nil
}

// mendVersionRows writes goose's rows again to say the file is at version
// v, as goose writes them (versions 0 to v, each applied), making the
// table first when another program dropped it; in one transaction.
func mendVersionRows(ctx context.Context, db *sql.DB, v int64) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("write schema version rows: %w", err)
	}
	defer tx.Rollback()
	_, _, _, exists, err := versionRows(ctx, tx, v)
	if err != nil {
		return err
	}
	if !exists {
		_, ddl, err := migrationShapes(ctx)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, ddl); err != nil {
			return fmt.Errorf("make goose_db_version again: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM goose_db_version`); err != nil {
		return fmt.Errorf("write schema version rows: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `WITH RECURSIVE v(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM v WHERE n < ?)
		INSERT INTO goose_db_version (version_id, is_applied) SELECT n, 1 FROM v`, v); err != nil {
		return fmt.Errorf("write schema version rows: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("write schema version rows: %w", err)
	}
	return nil
}
