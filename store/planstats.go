package store

import (
	"context"
	"fmt"
	"time"
)

// Planner statistics. comb's queries are written for SQLite's planner as
// it is without statistics, and are measured that way. ANALYZE, or PRAGMA
// optimize, run by another program on the file (a sqlite3 session, a DB
// browser, a monitoring script) writes sqlite_stat1, and every connection
// that loads the schema afterwards plans with it, comb's included. Taken
// while the file was small, those rows go on telling the planner that a
// queue of 100,000 partitions has a handful: with statistics from a file
// of six partitions, the consumer-groups listing at 100,000 partitions
// took 38 ms instead of 0.5-1.1, the messages page 39 instead of 4-9, a
// Prometheus scrape 100-270 instead of 30-42
// (bench/results/analyze-2026-12-03.md). Statistics comb did not take can
// only move its plans away from the ones it was measured with, so the
// writer drops them: at open, and within statsCheckEvery of their
// appearance. Dropping the table changes the schema, and every connection
// plans its statements again without them.

// statsCheckEvery is how often the writer looks for statistics, busy or
// idle: one read of sqlite_schema.
const statsCheckEvery = time.Second

// statsTables are the tables ANALYZE writes (sqlite_stat4 only where SQLite
// was built with it, as some sqlite3 shells are).
const statsTables = `'sqlite_stat1', 'sqlite_stat2', 'sqlite_stat3', 'sqlite_stat4'`

// dropPlannerStats drops the statistics tables another program wrote, if
// any. It does not wait for another program's write lock (busy_timeout 0):
// the writer must not stall behind one, and the next look tries again. It
// reports whether it dropped any.
func (s *Store) dropPlannerStats(ctx context.Context) (bool, error) {
	rows, err := s.wconn.QueryContext(ctx,
		"SELECT name FROM sqlite_schema WHERE type = 'table' AND name IN ("+statsTables+")")
	if err != nil {
		return false, fmt.Errorf("look for planner statistics: %w", err)
	}
	var names []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return false, fmt.Errorf("look for planner statistics: %w", err)
		}
		names = append(names, name)
	}
	if err := rows.Close(); err != nil {
		return false, fmt.Errorf("look for planner statistics: %w", err)
	}
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("look for planner statistics: %w", err)
	}
	if len(names) == 0 {
		return false, nil
	}
	if _, err := s.wconn.ExecContext(ctx, "PRAGMA busy_timeout = 0"); err != nil {
		return false, fmt.Errorf("set busy_timeout: %w", err)
	}
	err = nil
	for _, name := range names {
		// The names come from the fixed list above, never from the file.
		if _, err = s.wconn.ExecContext(ctx, "DROP TABLE "+name); err != nil {
			err = fmt.Errorf("drop %s: %w", name, err)
			break
		}
	}
	if _, rerr := s.wconn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", s.busyTimeout)); rerr != nil && err == nil {
		err = fmt.Errorf("restore busy_timeout: %w", rerr)
	}
	if err != nil {
		return false, err
	}
	s.log.Info("dropped the planner statistics another program wrote (ANALYZE); comb plans its queries without them",
		"tables", names)
	return true, nil
}

// lookOutside runs, on the writer goroutine, what the writer checks of
// the changes other programs make to the file (pathReplaced,
// dropPlannerStats, checkAutoVacuum) if statsCheckEvery has passed since
// the last look. A
// failure to drop statistics (another program holding the write lock) is
// logged once and left for the next look.
func (s *Store) lookOutside(now time.Time) {
	if now.Sub(s.statsCheckedAt) < statsCheckEvery {
		return
	}
	s.statsCheckedAt = now
	if s.replaced.Load() || s.fileReplaced() {
		s.noteReplaced() // and writes nothing to the file
		return
	}
	ctx := context.Background()
	_, err := s.dropPlannerStats(ctx)
	if err != nil && !s.statsFailing {
		s.log.Warn("planner statistics another program wrote are left for the next look", "err", err)
	}
	s.statsFailing = err != nil
	s.checkAutoVacuum(ctx)
}
