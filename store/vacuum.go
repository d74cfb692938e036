package store

import (
	"context"
	"fmt"
)

// Returning free pages to the file system.

// FreePages is the number of pages on the database's freelist.
func (s *Store) FreePages(ctx context.Context) (int64, error) {
	var n int64
	if err := s.r.QueryRowContext(ctx, `PRAGMA freelist_count`).Scan(&n); err != nil {
		return 0, fmt.Errorf("read freelist_count: %w", err)
	}
	return n, nil
}

// IncrementalVacuum returns up to pages free pages to the file system in
// one writer op and reports the freelist left. It does nothing on a file
// created without auto_vacuum=INCREMENTAL.
func (s *Store) IncrementalVacuum(ctx context.Context, pages int) (int64, error) {
	var left int64
	err := s.submit(ctx, &writeOp{isolated: true, apply: func(w *wtx) error {
		if _, err := w.ExecContext(w.ctx, fmt.Sprintf(`PRAGMA incremental_vacuum(%d)`, max(pages, 1))); err != nil {
			return fmt.Errorf("incremental vacuum: %w", err)
		}
		if err := w.QueryRowContext(w.ctx, `PRAGMA freelist_count`).Scan(&left); err != nil {
			return fmt.Errorf("read freelist_count: %w", err)
		}
		return nil
	}})
	return left, err
}
