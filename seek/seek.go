package seek

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/comb-broker/comb/store"
)

// Errors of a seek target, before anything is read.
var (
	// ErrNoTarget is a seek that names no position.
	ErrNoTarget = errors.New("Must specify toEnd=true or a timestamp")
	// ErrManyTargets is a seek that names more than one position.
	ErrManyTargets = errors.New("Specify only one of toEnd, timestamp, offset or snapshot")
)

// Target is where a seek moves a cursor. Exactly one field is set.
type Target struct {
	// ToEnd sets committed to the partition's last offset: everything
	// pending is skipped, the next push is the next delivery.
	ToEnd bool
	// Time sets committed just below the first segment committed at or
	// after it (segment-granular), or to the last offset when none is.
	Time *time.Time
	// Offset sets committed to exactly this value, so delivery resumes at
	// Offset+1. It must lie in [log_start-1, last_offset].
	Offset *int64
	// Snapshot restores the committed offsets captured by the named
	// snapshot, which must have been taken on the same queue (by any group).
	// Partitions created after it start from the oldest retained message.
	Snapshot string
}

// Validate reports whether exactly one position is named.
func (t Target) Validate() error {
	n := 0
	if t.ToEnd {
		n++
	}
	if t.Time != nil {
		n++
	}
	if t.Offset != nil {
		n++
	}
	if t.Snapshot != "" {
		n++
	}
	switch {
	case n == 0:
		return ErrNoTarget
	case n > 1:
		return ErrManyTargets
	}
	return nil
}

// Place resolves t on one partition. It is the one rule of where a seek
// lands; the store applies it to every partition a seek touches.
//
//   - ToEnd: committed = last_offset.
//   - Time: committed = base_offset-1 of the first segment committed at or
//     after the time, never below the retention floor (log_start-1); no
//     such segment puts it on last_offset, a future-only cursor. The cursor
//     can only land on a segment boundary, so up to frame_count-1 frames
//     committed before the time are delivered again (OvershootBound).
//     A group that subscribes from a time is seeded by the same rule,
//     written in SQL as seedExpr (store/subscriptions.go); a store test,
//     TestATimestampSubscriptionStartsWhereATimeSeekLands, checks that
//     both land on the same offsets.
//   - Offset: committed = the offset, refused outside [log_start-1, last_offset].
//   - Snapshot: committed = the captured value; log_start-1 on a partition
//     the snapshot does not cover (created after it).
//
// A time seek lands on the floor and reports Clamped when frames below the
// watermark were deleted by retention: some of them may have been committed
// at or after the time, and no seek can give them back. FramesEvicted is
// then log_start, the offsets that no longer exist. A snapshot position
// below the watermark is raised to it and reports exactly the frames it
// needed that retention deleted.
func Place(t Target, st *store.SeekState) (store.Placement, error) {
	p := &st.Partition
	floor := st.Floor()
	switch {
	case t.ToEnd:
		return store.Placement{Committed: p.LastOffset}, nil
	case t.Offset != nil:
		if off := *t.Offset; off < floor || off > p.LastOffset {
			return store.Placement{}, fmt.Errorf("%w: offset %d is outside the retained range of partition %q: "+
				"committed may be set from %d (replay everything retained) to %d (skip to end)",
				store.ErrInvalid, off, p.Name, floor, p.LastOffset)
		}
		return store.Placement{Committed: *t.Offset}, nil
	case t.Snapshot != "":
		if st.Captured == nil {
			return store.Placement{Committed: floor}, nil
		}
		pl := store.Placement{Committed: min(*st.Captured, p.LastOffset)}
		if pl.Committed < floor {
			pl.Clamped, pl.FramesEvicted, pl.Committed = true, floor-pl.Committed, floor
		}
		return pl, nil
	case t.Time != nil:
		evicted := p.LogStart > 0
		if st.Landing == nil {
			// Nothing retained is that recent. If retention emptied the
			// partition, frames at or after the time may have been deleted.
			pl := store.Placement{Committed: p.LastOffset}
			if evicted && p.LastOffset < p.LogStart && p.LastSegmentAt >= t.Time.UnixMicro() {
				pl.Clamped, pl.FramesEvicted = true, p.LogStart
			}
			return pl, nil
		}
		pl := store.Placement{
			Committed:      max(st.Landing.BaseOffset-1, floor),
			OvershootBound: max(st.Landing.FrameCount-1, 0),
		}
		if evicted && st.Landing.BaseOffset <= p.LogStart {
			pl.Clamped, pl.FramesEvicted = true, p.LogStart
		}
		return pl, nil
	}
	return store.Placement{}, ErrNoTarget
}

// Request moves one group's cursors on one queue.
type Request struct {
	Tenant string
	Group  string // "" = the queue-mode group
	Queue  string
	// Partition names one partition; "" seeks every partition of the queue.
	Partition string
	Target    Target
	// DryRun resolves the placements and changes nothing.
	DryRun bool
}

// Seek validates req and applies it to st in one write: see store.Seek for
// the side effects and errors, Place for where each cursor lands.
func Seek(ctx context.Context, st *store.Store, req Request) (*store.SeekResult, error) {
	if err := req.Target.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", store.ErrInvalid, err)
	}
	t := req.Target
	return st.Seek(ctx, store.SeekRequest{
		Tenant: req.Tenant, Group: req.Group, Queue: req.Queue, Partition: req.Partition,
		At: t.Time, Snapshot: t.Snapshot, DryRun: req.DryRun,
		Place: func(s *store.SeekState) (store.Placement, error) { return Place(t, s) },
	})
}
