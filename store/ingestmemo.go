package store

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// The ingest series of the status routes, minute by minute.
//
// IngestSeries counts the messages committed per bucket from the segments
// committed in the range, so a request costs the segments of its range:
// on a file whose million partitions had each been written within the
// hour, GET /api/v1/status (the last hour) and /api/v1/status/analytics
// (the last day) took 1.1-1.4 s each, and a broker committing a thousand
// segments a second would give them a few million segments an hour to
// read, on every poll of a dashboard. A minute that has passed does not
// change: segments are stamped when they are committed (created_at, by
// the store's clock), so once a minute is over by ingestSettle the counts
// of each filter's minutes are kept, and a request reads only the minutes
// no request has read yet and the minute under way.
//
// What is kept is what was committed: a minute counted before retention
// or a queue delete removed some of its messages still counts them (a
// range read for the first time, after a restart, does not). And a clock
// stepped back may stamp a new segment with a minute already kept (a
// partition's created_at never decreases); that minute keeps its count
// until the memo forgets it.

// ingestSettle is how long after a minute's end its counts are kept: a
// commit stamped near the end of the minute is visible to readers by then.
const ingestSettle = 5 * time.Second

// Bounds of the memo: the minutes of a day and a little more for each
// filter, for maxIngestFilters filters (a dashboard asks a few).
const (
	ingestKeepMinutes = 25 * 60
	maxIngestFilters  = 32
)

const microsPerMinute = int64(time.Minute / time.Microsecond)

type ingestKey struct{ tenant, queue, namespace, task string }

// ingestMinutes holds the counts of the minutes [lo, lo+len(counts)) of
// one filter (minutes since the epoch).
type ingestMinutes struct {
	mu     sync.Mutex
	lo     int64
	counts []int64
}

type ingestMemo struct {
	mu   sync.Mutex
	keys map[ingestKey]*ingestMinutes
}

func (m *ingestMemo) of(k ingestKey) *ingestMinutes {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.keys[k]; e != nil {
		return e
	}
	if m.keys == nil || len(m.keys) >= maxIngestFilters {
		m.keys = map[ingestKey]*ingestMinutes{}
	}
	e := &ingestMinutes{}
	m.keys[k] = e
	return e
}

// minuteSeries is IngestSeries for a range that starts on a minute, in
// buckets of whole minutes: the passed minutes from the memo, the rest
// from the segments.
func (s *Store) minuteSeries(ctx context.Context, tenant string, f combtype.SeriesFilter, out []combtype.SeriesPoint) error {
	from, to, bucket := micros(f.From), micros(f.To), f.Bucket.Microseconds()
	fromMin := from / microsPerMinute
	// Kept minutes: passed by ingestSettle, and wholly inside the range.
	closed := (micros(s.clock.Now()) - ingestSettle.Microseconds()) / microsPerMinute
	hi := min(closed, (to+1)/microsPerMinute)
	add := func(minute, n int64) {
		if i := (minute*microsPerMinute - from) / bucket; i >= 0 && i < int64(len(out)) {
			out[i].Messages += n
		}
	}
	if hi > fromMin {
		e := s.ingest.of(ingestKey{tenant, f.Queue, f.Namespace, f.Task})
		e.mu.Lock()
		err := s.fillMinutes(ctx, tenant, f, e, fromMin, hi, closed)
		if err == nil {
			for m := fromMin; m < hi; m++ {
				add(m, e.counts[m-e.lo])
			}
		}
		e.mu.Unlock()
		if err != nil {
			return err
		}
	}
	rest := max(from, hi*microsPerMinute)
	if rest > to {
		return nil
	}
	live, err := s.ingestCounts(ctx, tenant, f, rest, to, 0, microsPerMinute)
	if err != nil {
		return err
	}
	for m, n := range live {
		add(m, n)
	}
	return nil
}

// fillMinutes makes e hold the minutes [lo, hi), reading from the segments
// those it does not, and forgets those before closed - ingestKeepMinutes.
// The caller holds e.mu.
func (s *Store) fillMinutes(ctx context.Context, tenant string, f combtype.SeriesFilter, e *ingestMinutes, lo, hi, closed int64) error {
	end := e.lo + int64(len(e.counts))
	if len(e.counts) == 0 || hi < e.lo || lo > end {
		// Nothing kept that touches the range: it starts again.
		e.lo, e.counts, end = lo, nil, lo
	}
	if lo < e.lo {
		counts, err := s.minuteCounts(ctx, tenant, f, lo, e.lo)
		if err != nil {
			return err
		}
		e.lo, e.counts = lo, append(counts, e.counts...)
	}
	if hi > end {
		counts, err := s.minuteCounts(ctx, tenant, f, end, hi)
		if err != nil {
			return err
		}
		e.counts = append(e.counts, counts...)
	}
	if drop := closed - ingestKeepMinutes - e.lo; drop > 0 && lo >= closed-ingestKeepMinutes {
		drop = min(drop, int64(len(e.counts)))
		e.lo, e.counts = e.lo+drop, append([]int64(nil), e.counts[drop:]...)
	}
	return nil
}

// minuteCounts counts the messages committed in each of the minutes
// [lo, hi).
func (s *Store) minuteCounts(ctx context.Context, tenant string, f combtype.SeriesFilter, lo, hi int64) ([]int64, error) {
	by, err := s.ingestCounts(ctx, tenant, f, lo*microsPerMinute, hi*microsPerMinute-1, 0, microsPerMinute)
	if err != nil {
		return nil, err
	}
	out := make([]int64, hi-lo)
	for m, n := range by {
		if m >= lo && m < hi {
			out[m-lo] = n
		}
	}
	return out, nil
}

// otherQueuesProbed bounds the queues of other tenants ingestCounts
// probes for a write in its range.
const otherQueuesProbed = 1000

// ingestCounts counts the messages of f's queues committed in [from, to]
// (µs), by (created_at - origin) / unit: one range of the segments_time
// index.
func (s *Store) ingestCounts(ctx context.Context, tenant string, f combtype.SeriesFilter, from, to, origin, unit int64) (map[int64]int64, error) {
	// Each segment of the range is asked whether its partition is one of
	// f's, a set of every partition written since from: at a million
	// partitions written within the hour, building and probing it was
	// two thirds of the read. A tenant's whole series needs no such
	// question when no partition of another tenant (a queue being
	// deleted included) was written since from, which the index of
	// partitions by queue and last write answers with a probe a queue.
	// Past otherQueuesProbed such queues the set is asked for instead.
	whole := false
	if f.Queue == "" && f.Namespace == "" && f.Task == "" {
		err := s.r.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM queues WHERE tenant != ?1 LIMIT ?3)) < ?3
			AND NOT EXISTS (SELECT 1 FROM queues q WHERE q.tenant != ?1
				AND EXISTS (SELECT 1 FROM partitions p INDEXED BY partitions_queue_last_segment_at
					WHERE p.queue_id = q.id AND p.last_segment_at >= ?2))`, tenant, from, otherQueuesProbed+1).Scan(&whole)
		if err != nil {
			return nil, fmt.Errorf("count messages per bucket: %w", err)
		}
	}
	rows, err := s.r.QueryContext(ctx, `SELECT (s.created_at - ?8) / ?2, `+sumOf("s.frame_count")+`
		FROM segments s INDEXED BY segments_time
		WHERE s.created_at >= ?1 AND s.created_at <= ?3 AND (?9 OR s.partition_id IN (SELECT p.id FROM partitions p
			WHERE p.last_segment_at >= ?1 AND p.queue_id IN (SELECT id FROM queues WHERE tenant = ?4
				AND (?5 = '' OR name = ?5) AND (?6 = '' OR namespace = ?6) AND (?7 = '' OR task = ?7))))
		GROUP BY 1`, from, unit, to, tenant, f.Queue, f.Namespace, f.Task, origin, whole)
	if err != nil {
		return nil, fmt.Errorf("count messages per bucket: %w", err)
	}
	defer rows.Close()
	out := map[int64]int64{}
	for rows.Next() {
		var i, n int64
		if err := rows.Scan(&i, &n); err != nil {
			return nil, fmt.Errorf("scan bucket: %w", err)
		}
		out[i] += n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count messages per bucket: %w", err)
	}
	return out, nil
}
