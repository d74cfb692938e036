package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/comb-broker/comb/combtype"
)

// landing returns the first segment of p committed at or after t (µs),
// nil when none is that recent. db should run its probes prepared: the
// writer's and the readers' statement caches do; a transaction or a bare
// connection is wrapped once with landingProbes. It reads no segment past p.LastOffset, and
// trusts p.LastSegmentAt, the newest segment's time, as of the same view.
//
// Segments carry no index on created_at: one would add a leaf page per
// partition to every push commit, a third of its WAL writes. None is
// needed, because flush stamps a segment max(now, the partition's last
// created_at), so created_at never decreases with base_offset, and the
// first segment at or after t is found by searching offsets. The search
// guesses the offset by interpolating between the oldest and the newest
// segment's times, gallops from the guess until it brackets the answer,
// then halves: a few probes of the offset index when messages arrive at a
// steady rate, about 2·log2 of the partition's length at worst.
func landing(ctx context.Context, db querier, p *combtype.Partition, t int64) (*SegmentRef, error) {
	if p.LastSegmentAt < t {
		return nil, nil // every segment is older
	}
	first, err := segmentFrom(ctx, db, p.ID, 0)
	if err != nil || first == nil || micros(first.CreatedAt) >= t {
		return first, err
	}
	// Below, P(o) says the first segment starting at or after offset o is
	// missing or committed at or after t. P is false then true as o grows;
	// the answer is that segment for the smallest o where P holds. P is
	// false at lo (the oldest segment) and true at hi = LastOffset+1,
	// where no segment starts.
	lo, hi := first.BaseOffset, p.LastOffset+1
	var found *SegmentRef // the segment at hi
	holds := func(o int64) (bool, error) {
		seg, err := segmentFrom(ctx, db, p.ID, o)
		if err != nil {
			return false, err
		}
		if seg == nil || micros(seg.CreatedAt) >= t {
			hi, found = o, seg
			return true, nil
		}
		lo = o
		return false, nil
	}
	if hi-lo > 1 {
		span := float64(t-micros(first.CreatedAt)) / float64(max(p.LastSegmentAt-micros(first.CreatedAt), 1))
		guess := min(max(lo+int64(span*float64(hi-lo)), lo+1), hi-1)
		ok, err := holds(guess)
		if err != nil {
			return nil, err
		}
		for step := int64(1); ; step *= 2 {
			// Gallop away from the guess, down while P holds, up while
			// it does not, until the answer is bracketed.
			o := hi - step
			if !ok {
				o = lo + step
			}
			if o <= lo || o >= hi {
				break
			}
			now, err := holds(o)
			if err != nil {
				return nil, err
			}
			if now != ok {
				break
			}
		}
	}
	for hi-lo > 1 {
		if _, err := holds(lo + (hi-lo)/2); err != nil {
			return nil, err
		}
	}
	return found, nil
}

const segmentFromQuery = `SELECT base_offset, frame_count, created_at FROM segments
	WHERE partition_id = +? AND base_offset >= +? ORDER BY base_offset LIMIT 1`

// segmentFrom returns the first segment of a partition starting at or
// after offset, nil if there is none.
func segmentFrom(ctx context.Context, db querier, partitionID, offset int64) (*SegmentRef, error) {
	var base, count, at int64
	err := db.QueryRowContext(ctx, segmentFromQuery, partitionID, offset).Scan(&base, &count, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("find segment from offset %d: %w", offset, err)
	}
	return &SegmentRef{BaseOffset: base, FrameCount: count, CreatedAt: fromMicros(at)}, nil
}

// landingProbes prepares landing's probe on db, a transaction or a bare
// connection, which would otherwise prepare every probe anew: a search of
// many partitions prepares it once. done releases it.
func landingProbes(ctx context.Context, db interface {
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}) (_ querier, done func(), _ error) {
	st, err := db.PrepareContext(ctx, segmentFromQuery)
	if err != nil {
		return nil, nil, fmt.Errorf("prepare segment search: %w", err)
	}
	return stmtQuerier{st}, func() { st.Close() }, nil
}

// stmtQuerier runs a prepared statement whatever query it is handed.
type stmtQuerier struct{ st *sql.Stmt }

func (q stmtQuerier) QueryRowContext(ctx context.Context, _ string, args ...any) *sql.Row {
	return q.st.QueryRowContext(ctx, args...)
}

func (q stmtQuerier) QueryContext(ctx context.Context, _ string, args ...any) (*sql.Rows, error) {
	return q.st.QueryContext(ctx, args...)
}
