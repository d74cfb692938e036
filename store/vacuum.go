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

// autoVacuumIncremental is PRAGMA auto_vacuum's value for INCREMENTAL.
const autoVacuumIncremental = 2

// checkAutoVacuum says once, in the log, that the file's auto_vacuum is
// not INCREMENTAL. comb sets it on every file it makes, but another
// program's VACUUM can switch it off (PRAGMA auto_vacuum=NONE; VACUUM runs
// beside a running server), and a file made before comb set it never had
// it. Then PRAGMA incremental_vacuum does nothing: retention frees pages
// inside the file but the file never shrinks, and on a full disk the
// writer cannot give pages back to the file system to resume pushes
// (reserve.go). Only a VACUUM makes it INCREMENTAL again, which rewrites
// the whole file and needs as much free space again: that is the
// operator's call, so comb says how instead of doing it.
func (s *Store) checkAutoVacuum(ctx context.Context) {
	var mode int
	if err := s.wconn.QueryRowContext(ctx, "PRAGMA auto_vacuum").Scan(&mode); err != nil {
		return // the next look reads it again
	}
	off := mode != autoVacuumIncremental
	if off && !s.vacuumOff {
		s.log.Warn("the database file does not give freed pages back to the file system (auto_vacuum is not INCREMENTAL: "+
			"another program's VACUUM, or a file made by an early comb): it will not shrink, and a full disk will not "+
			"recover by itself; stop comb and run: sqlite3 FILE 'PRAGMA auto_vacuum=INCREMENTAL; VACUUM'",
			"path", s.path, "auto_vacuum", mode)
	}
	s.vacuumOff = off
}
