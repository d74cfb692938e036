package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
)

// Hot statements compare ids with +? rather than ?: SQLite marks a
// statement whose "column = ?" may be left as a filter to be compiled
// again whenever 0 or 1 is bound there (its plan may change for those),
// and the first queue and partition of every database have id 1. A unary
// plus hides the parameter from the planner and changes no result.

// maxCachedStmts bounds the statement cache; statements built with a
// varying text beyond it are prepared and closed per use.
const maxCachedStmts = 512

// stmtCache keeps prepared statements by their text. database/sql with this
// driver prepares every query anew, and for comb's short queries parsing
// costs more than running: preparing once roughly halves a pop or an ack.
type stmtCache struct {
	db interface {
		PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
		QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	}
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

func newStmtCache(db interface {
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}) *stmtCache {
	return &stmtCache{db: db, m: map[string]*sql.Stmt{}}
}

// get returns the cached statement for query, or nil when the cache is
// full and the caller should run the query unprepared.
func (c *stmtCache) get(ctx context.Context, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.m[query]; st != nil {
		return st, nil
	}
	if len(c.m) >= maxCachedStmts {
		return nil, nil
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	c.m[query] = st
	return st, nil
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for q, st := range c.m {
		st.Close()
		delete(c.m, q)
	}
}

// readDB runs reads on the reader pool through cached statements.
type readDB struct{ c *stmtCache }

func (r readDB) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := r.c.get(ctx, query)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return r.c.db.QueryContext(ctx, query, args...)
	}
	return st.QueryContext(ctx, args...)
}

func (r readDB) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := r.c.get(ctx, query)
	if err != nil || st == nil {
		// An error surfaces from Scan, as database/sql does.
		return r.c.db.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// ExecContext runs a statement on the writer's connection, inside the
// open transaction, through the cache.
func (w *wtx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	w.s.wstatements.Add(1)
	st, err := w.s.wstmts.get(ctx, query)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return w.tx.ExecContext(ctx, query, args...)
	}
	return st.ExecContext(ctx, args...)
}

// QueryContext is ExecContext for queries.
func (w *wtx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	w.s.wstatements.Add(1)
	st, err := w.s.wstmts.get(ctx, query)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return w.tx.QueryContext(ctx, query, args...)
	}
	return st.QueryContext(ctx, args...)
}

// QueryRowContext is ExecContext for single-row queries.
func (w *wtx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	w.s.wstatements.Add(1)
	st, err := w.s.wstmts.get(ctx, query)
	if err != nil || st == nil {
		return w.tx.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}
