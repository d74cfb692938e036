package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// landing returns the first segment of a partition committed at or after
// t (µs), nil when none is that recent. lastOffset is the partition's last
// offset, read with the caller's view of it.
//
// Segments carry no index on created_at: one would add a leaf page per
// partition to every push commit, a third of its WAL writes. None is
// needed, because flush stamps a segment max(now, the partition's last
// created_at), so created_at never decreases with base_offset, and the
// first segment at or after t is found by searching offsets. The search
// gallops back from the newest segment, then halves: a recent t (a claim
// behind a delay, the last minute's ingest) costs a few probes of the
// offset index, an old one about 2·log2 of the partition's length.
func landing(ctx context.Context, db querier, partitionID, lastOffset, t int64) (*SegmentRef, error) {
	// Below, P(o) says the first segment starting at or after offset o is
	// missing or committed at or after t. P is false then true as o grows;
	// the answer is that segment for the smallest o where P holds.
	// P(lastOffset+1) holds (no segment starts there), and lo = -1 stands
	// for "before every offset", where P is taken as false.
	lo, hi := int64(-1), lastOffset+1
	var found *SegmentRef // the segment at hi; none at lastOffset+1
	if p, ok := db.(interface {
		PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
	}); ok {
		// A transaction or a bare connection prepares every query anew,
		// which would cost more than the probe itself.
		st, err := p.PrepareContext(ctx, segmentFromQuery)
		if err != nil {
			return nil, fmt.Errorf("prepare segment search: %w", err)
		}
		defer st.Close()
		db = stmtQuerier{st}
	}
	holds := func(o int64) (bool, error) {
		seg, err := segmentFrom(ctx, db, partitionID, o)
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
	for step := int64(1); hi-step > lo; step *= 2 {
		ok, err := holds(hi - step)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
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

// stmtQuerier runs a prepared statement whatever query it is handed.
type stmtQuerier struct{ st *sql.Stmt }

func (q stmtQuerier) QueryRowContext(ctx context.Context, _ string, args ...any) *sql.Row {
	return q.st.QueryRowContext(ctx, args...)
}

func (q stmtQuerier) QueryContext(ctx context.Context, _ string, args ...any) (*sql.Rows, error) {
	return q.st.QueryContext(ctx, args...)
}
