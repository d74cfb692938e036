package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/pressly/goose/v3"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/migrations"
)

// A schema changed by another program.
//
// The migrations bring a file to comb's schema once; nothing looks at it
// again, and another program can change it at any time: drop an index
// (every statement SQLite planned with it then fails, "no such index",
// and pops, listings and the status answered 500 while pushes were still
// answered 201), drop a column or a table, or add a trigger that runs
// inside comb's own transactions and can fail them. comb check found the
// file clean all the same, since every row was where it belonged.
//
// So the schema a file has is compared with the one the migrations make
// (applied to an empty database in memory): comb check reports each
// difference that changes what comb's statements do, and Open puts back
// a missing index (it holds nothing but what its table holds) or trigger
// of comb's (it holds nothing at all) and refuses what it cannot put back
// itself. Indexes, columns, tables and
// views another program adds are left alone: comb's statements name what
// they read, and those change nothing they do.

// schemaObject is one entry of a database's schema.
type schemaObject struct {
	kind, name, table, sql string
}

// schemaOf reads q's schema: its tables, indexes and triggers (not
// SQLite's own), and each table's columns.
func schemaOf(ctx context.Context, q querier) (objects map[string]schemaObject, columns map[string][]string, err error) {
	rows, err := q.QueryContext(ctx, `SELECT type, name, tbl_name, COALESCE(sql, '') FROM sqlite_schema
		WHERE type IN ('table', 'index', 'trigger') AND name NOT LIKE 'sqlite\_%' ESCAPE '\'`)
	if err != nil {
		return nil, nil, fmt.Errorf("read the schema: %w", err)
	}
	defer rows.Close()
	objects = map[string]schemaObject{}
	for rows.Next() {
		var o schemaObject
		if err := rows.Scan(&o.kind, &o.name, &o.table, &o.sql); err != nil {
			return nil, nil, fmt.Errorf("read the schema: %w", err)
		}
		objects[o.kind+" "+o.name] = o
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("read the schema: %w", err)
	}
	columns = map[string][]string{}
	for _, o := range objects {
		if o.kind != "table" {
			continue
		}
		cols, err := q.QueryContext(ctx, `SELECT name FROM pragma_table_info(?)`, o.name)
		if err != nil {
			return nil, nil, fmt.Errorf("read the columns of %s: %w", o.name, err)
		}
		for cols.Next() {
			var c string
			if err := cols.Scan(&c); err != nil {
				cols.Close()
				return nil, nil, fmt.Errorf("read the columns of %s: %w", o.name, err)
			}
			columns[o.name] = append(columns[o.name], c)
		}
		cols.Close()
		if err := cols.Err(); err != nil {
			return nil, nil, fmt.Errorf("read the columns of %s: %w", o.name, err)
		}
	}
	return objects, columns, nil
}

// combSchema is the schema the migrations up to version make (all of them
// when version is 0), read from an empty database in memory they are
// applied to.
func combSchema(ctx context.Context, version int64) (map[string]schemaObject, map[string][]string, error) {
	db, err := sql.Open("sqlite", "file::memory:")
	if err != nil {
		return nil, nil, fmt.Errorf("comb's schema: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one connection: one in-memory database
	provider, err := goose.NewProvider(goose.DialectSQLite3, db, migrations.FS)
	if err != nil {
		return nil, nil, fmt.Errorf("comb's schema: %w", err)
	}
	if version > 0 {
		_, err = provider.UpTo(ctx, version)
	} else {
		_, err = provider.Up(ctx)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("comb's schema: %w", err)
	}
	return schemaOf(ctx, db)
}

// schemaDrift is how the schema of q differs from comb's at version (0:
// the newest): missing are comb's indexes and triggers q lacks (which can
// be made again from their sql), broken the rest, each a sentence.
func schemaDrift(ctx context.Context, q querier, version int64) (missing []schemaObject, broken []string, err error) {
	want, wantCols, err := combSchema(ctx, version)
	if err != nil {
		return nil, nil, err
	}
	have, haveCols, err := schemaOf(ctx, q)
	if err != nil {
		return nil, nil, err
	}
	for key, o := range want {
		if _, ok := have[key]; ok || key == "table goose_db_version" {
			// goose's table is read for the version (versionrows.go),
			// which says what is wrong with it.
			continue
		}
		switch {
		case (o.kind == "index" || o.kind == "trigger") && o.sql != "":
			if _, ok := have["table "+o.table]; ok {
				missing = append(missing, o)
				continue
			}
			fallthrough
		default:
			broken = append(broken, fmt.Sprintf("%s %s is missing", o.kind, o.name))
		}
	}
	for table, cols := range wantCols {
		if _, ok := have["table "+table]; !ok {
			continue // said above
		}
		for _, c := range cols {
			if !slices.Contains(haveCols[table], c) {
				broken = append(broken, fmt.Sprintf("table %s has no column %s", table, c))
			}
		}
	}
	for key, o := range have {
		if _, ok := want[key]; !ok && o.kind == "trigger" {
			broken = append(broken, fmt.Sprintf("trigger %s on %s is not comb's: it runs inside comb's writes and can fail them (DROP TRIGGER %s)",
				o.name, o.table, o.name))
		}
	}
	slices.SortFunc(missing, func(a, b schemaObject) int { return strings.Compare(a.name, b.name) })
	slices.Sort(broken)
	return missing, broken, nil
}

// mendSchema makes again the indexes of comb's another program dropped,
// and refuses a schema changed in a way it cannot put back (schemaDrift).
func (s *Store) mendSchema(ctx context.Context) error {
	missing, broken, err := schemaDrift(ctx, s.wdb, 0)
	if err != nil {
		return err
	}
	if len(broken) > 0 {
		return fmt.Errorf("%w: the schema of %s was changed by another program: %s; run comb check, and restore the file from a backup (docs/operations.md)",
			combtype.ErrDamaged, s.path, strings.Join(broken, "; "))
	}
	for _, o := range missing {
		if _, err := s.wdb.ExecContext(ctx, o.sql); err != nil {
			return fmt.Errorf("make %s %s again: %w", o.kind, o.name, err)
		}
		s.log.Warn("an "+o.kind+" of comb's was missing from the database file (dropped by another program?) and is made again", o.kind, o.name, "table", o.table)
	}
	return nil
}

// checkSchemaDrift is comb check's look at the schema (schemaDrift), held
// against the schema of the file's own version: a file an older comb
// wrote (a backup taken before an upgrade) lacks what later migrations
// add, which comb serve adds when it opens it, and is not damaged. Held
// against the newest, such a backup had findings, and comb restore
// refused it.
func checkSchemaDrift(ctx context.Context, tx *sql.Tx, rep *combtype.CheckReport) error {
	missing, broken, err := schemaDrift(ctx, tx, rep.SchemaVersion)
	if err != nil {
		return err
	}
	for _, o := range missing {
		rep.Findings = append(rep.Findings, combtype.Finding{Check: "schema",
			Detail: fmt.Sprintf("%s %s is missing (comb serve makes it again when it starts)", o.kind, o.name)})
	}
	for _, b := range broken {
		rep.Findings = append(rep.Findings, combtype.Finding{Check: "schema", Detail: b})
	}
	return nil
}
