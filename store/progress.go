package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// progressInterval is how often a phase that cannot report as it goes
// (one SQLite statement doing all the work) is looked at from outside.
const progressInterval = 500 * time.Millisecond

// watch calls fn every interval on its own goroutine until the returned
// stop is called; stop waits for it, so fn never runs after stop returns.
func watch(interval time.Duration, fn func()) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fn()
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}

// pageBytes is the bytes of the database's pages that hold data (all of
// them less the free list): what VACUUM INTO writes, near enough, and what
// an integrity check reads.
func pageBytes(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int64, error) {
	var pages, free, size int64
	if err := q.QueryRowContext(ctx, `SELECT (SELECT page_count FROM pragma_page_count()),
		(SELECT freelist_count FROM pragma_freelist_count()), (SELECT page_size FROM pragma_page_size())`).Scan(&pages, &free, &size); err != nil {
		return 0, fmt.Errorf("page count: %w", err)
	}
	return (pages - free) * size, nil
}

// readProgress reports the bytes this process has read since it was made,
// as the phase's progress toward total, every progressInterval: SQLite's
// integrity check reads every page of the file once, in one statement that
// says nothing until it ends. Where the platform cannot tell (readBytes),
// Done is -1.
func readProgress(phase string, total int64, fn func(combtype.Progress)) (stop func()) {
	start, ok := readBytes()
	report := func() {
		p := combtype.Progress{Phase: phase, Done: -1, Total: total, Unit: combtype.UnitBytes}
		if now, ok2 := readBytes(); ok && ok2 {
			// Pages read twice (an index checked against its table) count
			// twice, so the phase is never shown done before it is.
			p.Done = min(now-start, total*99/100)
		}
		fn(p)
	}
	report()
	return watch(progressInterval, report)
}
