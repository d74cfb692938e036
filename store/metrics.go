package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// Read-side figures for the status and metrics routes: counts over segment
// index entries, cursors and watermarks, never over messages.

// PendingWrites is the number of writes waiting for the writer, not yet in
// a commit: the database's queue of waiting requests.
func (s *Store) PendingWrites() int { return len(s.ops) }

// ReaderStats are the reader pool's connection statistics.
func (s *Store) ReaderStats() sql.DBStats { return s.rdb.Stats() }

// DatabaseSize is the size in bytes of the database file and of its WAL.
func (s *Store) DatabaseSize() (file, wal int64, err error) {
	fi, err := os.Stat(s.path)
	if err != nil {
		return 0, 0, fmt.Errorf("stat database: %w", err)
	}
	wi, err := os.Stat(s.walPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fi.Size(), 0, nil
	case err != nil:
		return 0, 0, fmt.Errorf("stat wal: %w", err)
	}
	return fi.Size(), wi.Size(), nil
}

// IngestSeries counts the messages committed per bucket in [From, To],
// from segment commit times and frame counts, no frame decoded: one range
// of the segments_time index, so it costs the segments committed in the
// range, not the partitions (a landing search per partition cost 1.9 s at
// 10,000 queues). Every bucket is present, empty ones as 0. Messages
// retention removed are not counted, except in the minutes an earlier
// request counted: a range of at most a day that starts on a minute, in
// buckets of whole minutes, is counted minute by minute and the passed
// minutes are kept (ingestmemo.go).
func (s *Store) IngestSeries(ctx context.Context, tenant string, f combtype.SeriesFilter) ([]combtype.SeriesPoint, error) {
	if f.Bucket <= 0 || f.To.Before(f.From) {
		return nil, fmt.Errorf("%w: empty series", combtype.ErrInvalid)
	}
	from, to, bucket := micros(f.From), micros(f.To), f.Bucket.Microseconds()
	n := (to-from)/bucket + 1
	out := make([]combtype.SeriesPoint, n)
	for i := range out {
		out[i].At = fromMicros(from + int64(i)*bucket)
	}
	if from >= 0 && from%microsPerMinute == 0 && bucket%microsPerMinute == 0 && to-from < ingestKeepMinutes*microsPerMinute {
		if err := s.minuteSeries(ctx, tenant, f, out); err != nil {
			return nil, err
		}
		return out, nil
	}
	by, err := s.ingestCounts(ctx, tenant, f, from, to, from, bucket)
	if err != nil {
		return nil, err
	}
	for i, count := range by {
		if i >= 0 && i < n {
			out[i].Messages += count
		}
	}
	return out, nil
}

// QueueDepths returns every tenant's queues' depths and group lags, in two
// aggregate queries over partitions and cursors. A queue above the live
// limit is not summed here: its figures come from the background sum
// (groupstats.go), with StatsAge, and until the first one is made the
// queue is left out.
func (s *Store) QueueDepths(ctx context.Context) ([]combtype.QueueDepth, error) {
	depths, _, err := s.FirstQueueDepths(ctx, 0)
	return depths, err
}

// FirstQueueDepths is QueueDepths of the first limit queues by name, then
// tenant (all of them when limit <= 0), and how many queues are past
// them: a scrape of a server with queues past counting reads no more than
// it writes.
func (s *Store) FirstQueueDepths(ctx context.Context, limit int) ([]combtype.QueueDepth, int, error) {
	type key struct{ tenant, queue string }
	by := map[key]*combtype.QueueDepth{}
	get := func(tenant, name string) *combtype.QueueDepth {
		d := by[key{tenant, name}]
		if d == nil {
			d = &combtype.QueueDepth{Tenant: tenant, Queue: name}
			by[key{tenant, name}] = d
		}
		return d
	}
	lo, hi := detachedTenantPrefix, detachedTenantPrefix+"\xff"
	// Only the keys: every column of 10,000 queues, scanned, was most of
	// a scrape's store time.
	if limit <= 0 {
		limit = -1 // SQLite's "no limit"
	}
	queues, err := listQueueKeys(ctx, s.r, `SELECT id, uuid, tenant, name FROM queues WHERE NOT (tenant >= ?1 AND tenant < ?2)
		ORDER BY name, tenant LIMIT ?3`, lo, hi, limit)
	if err != nil {
		return nil, 0, err
	}
	rest := 0
	if limit > 0 && len(queues) == limit {
		if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM queues WHERE NOT (tenant >= ?1 AND tenant < ?2)`, lo, hi).Scan(&rest); err != nil {
			return nil, 0, fmt.Errorf("count queues: %w", err)
		}
		rest -= len(queues)
	}
	large, err := s.largeGroupStats(ctx, queues)
	if err != nil {
		return nil, 0, err
	}
	var small []int64
	for _, q := range queues {
		snap := large[q.ID]
		switch {
		case snap == nil:
			small = append(small, q.ID)
		case snap.stats != nil:
			d := get(q.Tenant, q.Name)
			d.Stored, d.Depth, d.Summarized, d.StatsAge = snap.stats.stored, snap.stats.depth, true, snap.age
			d.GroupLag = make(map[string]int64, len(snap.stats.groups))
			for _, g := range snap.stats.groups {
				d.GroupLag[g.Group] = g.TotalLag
			}
		}
	}
	ids := jsonInts(small)
	// A group's positions are its rows and what its subscriptions imply
	// (implied.go); the most lag over the groups is the least committed's.
	// A partition of a queue no group reads has nothing but its stored
	// messages to count: two probes tell, where the positions take four
	// (at 10,000 queues most have no group).
	rows, err := s.r.QueryContext(ctx, `WITH `+queuesHeads+`
		SELECT q.tenant, q.name, `+sumOf(storedExpr)+`, `+sumOf(`CASE
			WHEN NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.queue_id = q.id)
				AND NOT EXISTS (SELECT 1 FROM cursors c WHERE c.partition_id = p.id) THEN `+storedExpr+`
			ELSE COALESCE(
				`+lagOfCommitted(groupCommittedExpr("?2"))+`,
				`+lagOfCommitted(leastCommittedExpr)+`,
				`+storedExpr+`) END`)+`
		FROM queues q JOIN partitions p ON p.queue_id = q.id
		WHERE q.id IN (SELECT value FROM json_each(?1))
		GROUP BY q.id`, ids, combtype.QueueModeGroup)
	if err != nil {
		return nil, 0, fmt.Errorf("read queue depths: %w", err)
	}
	for rows.Next() {
		var tenant, name string
		var stored, depth int64
		if err := rows.Scan(&tenant, &name, &stored, &depth); err != nil {
			rows.Close()
			return nil, 0, fmt.Errorf("scan queue depth: %w", err)
		}
		d := get(tenant, name)
		d.Stored, d.Depth = stored, depth
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("read queue depths: %w", err)
	}
	rows, err = s.r.QueryContext(ctx, `SELECT q.tenant, q.name, gq.g,
			`+sumOf(groupLagExpr)+`
		FROM `+groupPositionsIn(`(SELECT value FROM json_each(?1))`, "")+`
		GROUP BY q.id, gq.g`, ids)
	if err != nil {
		return nil, 0, fmt.Errorf("read group lag: %w", err)
	}
	for rows.Next() {
		var tenant, name, group string
		var lag int64
		if err := rows.Scan(&tenant, &name, &group, &lag); err != nil {
			rows.Close()
			return nil, 0, fmt.Errorf("scan group lag: %w", err)
		}
		d := get(tenant, name)
		if d.GroupLag == nil {
			d.GroupLag = map[string]int64{}
		}
		d.GroupLag[group] = lag
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("read group lag: %w", err)
	}
	out := make([]combtype.QueueDepth, 0, len(by))
	for _, d := range by {
		out = append(out, *d)
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Tenant < out[j].Tenant || out[i].Tenant == out[j].Tenant && out[i].Queue < out[j].Queue
	})
	return out, rest, nil
}

// CountDLQ counts tenant's DLQ rows of the named queues (all queues when
// nil) that failed in [from, to].
func (s *Store) CountDLQ(ctx context.Context, tenant string, queues []string, from, to time.Time) (int64, error) {
	var n int64
	var list any
	if queues != nil {
		list = jsonStrings(queues)
	}
	live, err := dlqLive(ctx, s.r, tenant)
	if err != nil {
		return 0, err
	}
	err = s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM dlq WHERE tenant = ?1
		AND (?2 IS NULL OR queue_name IN (SELECT value FROM json_each(?2))) AND failed_at BETWEEN ?3 AND ?4`+live,
		tenant, list, micros(from), micros(to)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count dead letters: %w", err)
	}
	return n, nil
}

// DatabaseStats reads SQLite's page figures.
func (s *Store) DatabaseStats(ctx context.Context) (combtype.DatabaseStats, error) {
	var d combtype.DatabaseStats
	err := s.r.QueryRowContext(ctx, `SELECT page_size, page_count, freelist_count, journal_mode
		FROM pragma_page_size(), pragma_page_count(), pragma_freelist_count(), pragma_journal_mode()`).
		Scan(&d.PageSize, &d.PageCount, &d.FreelistCount, &d.JournalMode)
	if err != nil {
		return d, fmt.Errorf("read database stats: %w", err)
	}
	return d, nil
}
