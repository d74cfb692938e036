package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math"
	"sync/atomic"

	"modernc.org/sqlite"

	"github.com/comb-broker/comb/combtype"
)

// A damaged page of the file stops whatever statement reads through it,
// a read as much as a write, at whatever step it is met: the query, a row
// of a scan, the commit. The server's connections therefore mark SQLite's
// damage results with combtype.ErrDamaged where they leave the driver, so
// every path above (the writer, each reader, a reply written row by row)
// hands it on as such without a check of its own, and the server answers
// it in its one named way instead of as an unknown failure. Any other
// error passes through untouched: database/sql compares some of them
// (driver.ErrSkip, driver.ErrBadConn) by identity.

// openSQLite opens dsn through the sqlite driver with its damage results
// marked and counted in seen (Stats.Damaged).
func openSQLite(dsn string, seen *atomic.Int64) (*sql.DB, error) {
	c, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(damageConnector{c, seen}), nil
}

// isDamage reports whether err is SQLite finding the file damaged: a
// malformed page (SQLITE_CORRUPT and its extended codes) or a header that
// is no longer a database's (SQLITE_NOTADB).
func isDamage(err error) bool {
	code := sqliteCode(err)
	return code == sqliteCorrupt || code == sqliteNotADB
}

// markDamage wraps err with combtype.ErrDamaged when it is damage, once,
// and counts it in seen.
func markDamage(seen *atomic.Int64, err error) error {
	// A scan ends in io.EOF: no need to look into it.
	if err == nil || err == io.EOF || !isDamage(err) || errors.Is(err, combtype.ErrDamaged) {
		return err
	}
	seen.Add(1)
	return fmt.Errorf("%w: %w", combtype.ErrDamaged, err)
}

type damageConnector struct {
	driver.Connector
	seen *atomic.Int64
}

func (c damageConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, markDamage(c.seen, err)
	}
	sc, ok := conn.(sqliteConn)
	if !ok {
		conn.Close()
		return nil, fmt.Errorf("sqlite driver connection %T lacks an interface database/sql uses", conn)
	}
	return &damageConn{conn: sc, seen: c.seen}, nil
}

// damageConn forwards every optional interface the driver's connections
// implement (sqlite.NewConnector lists them): hiding one would make
// database/sql fall back to its context-free paths.
type damageConn struct {
	conn sqliteConn
	seen *atomic.Int64
}

// sqliteConn is what the driver's connections implement; Connect refuses
// one that does not, a driver change to notice at once rather than a
// fallback to take quietly.
type sqliteConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// Unwrap lets the driver's own helpers (sqlite.Limit) see the connection.
func (c *damageConn) Unwrap() driver.Conn { return c.conn }

func (c *damageConn) Close() error { return markDamage(c.seen, c.conn.Close()) }

func (c *damageConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *damageConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.conn.PrepareContext(ctx, query)
	if err != nil {
		return nil, markDamage(c.seen, err)
	}
	ss, ok := st.(sqliteStmt)
	if !ok {
		st.Close()
		return nil, fmt.Errorf("sqlite driver statement %T lacks an interface database/sql uses", st)
	}
	return &damageStmt{st: ss, seen: c.seen}, nil
}

func (c *damageConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *damageConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.conn.BeginTx(ctx, opts)
	if err != nil {
		return nil, markDamage(c.seen, err)
	}
	return damageTx{tx, c.seen}, nil
}

func (c *damageConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	res, err := c.conn.ExecContext(ctx, query, args)
	return res, markDamage(c.seen, err)
}

func (c *damageConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := c.conn.QueryContext(ctx, query, args)
	if err != nil {
		return nil, markDamage(c.seen, err)
	}
	return damageRows{rows, c.seen}, nil
}

func (c *damageConn) Ping(ctx context.Context) error { return markDamage(c.seen, c.conn.Ping(ctx)) }

func (c *damageConn) ResetSession(ctx context.Context) error { return c.conn.ResetSession(ctx) }

func (c *damageConn) IsValid() bool { return c.conn.IsValid() }

type damageStmt struct {
	st   sqliteStmt
	seen *atomic.Int64
}

type sqliteStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

func (s *damageStmt) Close() error  { return markDamage(s.seen, s.st.Close()) }
func (s *damageStmt) NumInput() int { return s.st.NumInput() }

func (s *damageStmt) Exec(args []driver.Value) (driver.Result, error) {
	res, err := s.st.Exec(args)
	return res, markDamage(s.seen, err)
}

func (s *damageStmt) Query(args []driver.Value) (driver.Rows, error) {
	rows, err := s.st.Query(args)
	if err != nil {
		return nil, markDamage(s.seen, err)
	}
	return damageRows{rows, s.seen}, nil
}

func (s *damageStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	res, err := s.st.ExecContext(ctx, args)
	return res, markDamage(s.seen, err)
}

func (s *damageStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := s.st.QueryContext(ctx, args)
	if err != nil {
		return nil, markDamage(s.seen, err)
	}
	return damageRows{rows, s.seen}, nil
}

type damageTx struct {
	tx   driver.Tx
	seen *atomic.Int64
}

func (t damageTx) Commit() error   { return markDamage(t.seen, t.tx.Commit()) }
func (t damageTx) Rollback() error { return markDamage(t.seen, t.tx.Rollback()) }

// damageRows marks the damage a scan meets past its first row.
type damageRows struct {
	driver.Rows
	seen *atomic.Int64
}

func (r damageRows) Next(dest []driver.Value) error {
	if err := r.Rows.Next(dest); err != nil {
		return markDamage(r.seen, err)
	}
	clampOverflow(dest)
	return nil
}

func (r damageRows) Close() error { return markDamage(r.seen, r.Rows.Close()) }

// clampOverflow turns each value of dest that is a float beyond int64's
// range into the nearest int64. comb's columns hold integers, but SQLite
// computes an integer expression that overflows (an offset another
// program set to 2^63-1, plus one) in floating point, and database/sql
// then refuses to scan 9.2e+18 into an int64: every listing and pop that
// read such an offset answered 500. No expression comb reads is a float
// that large for any other reason.
func clampOverflow(dest []driver.Value) {
	for i, v := range dest {
		f, ok := v.(float64)
		if !ok {
			continue
		}
		switch {
		case f >= math.MaxInt64:
			dest[i] = int64(math.MaxInt64)
		case f <= math.MinInt64:
			dest[i] = int64(math.MinInt64)
		}
	}
}
