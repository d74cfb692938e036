package combtype

import (
	"time"
)

// GroupSummary is one (consumer group, queue) pair.
// Its figures are summed over the group's positions on the queue's
// partitions: cursor rows, and those its subscription implies.
type GroupSummary struct {
	Group string // the group's name; QueueModeGroup for queue mode
	Queue string // the queue's name
	// Cursors is the number of cursor rows: partitions this group has met.
	Cursors int64
	// PartitionsWithLag counts the partitions where OffsetLag > 0.
	PartitionsWithLag int64
	// TotalLag is the messages stored and not yet completed by the group
	// (from its next offset, or the log start, to the last), summed.
	TotalLag int64
	// MaxTimeLag is the age of the oldest unconsumed segment, 0 when none.
	MaxTimeLag time.Duration
	// TotalConsumed is the messages the group acked on the queue (a
	// replayed message counts again).
	TotalConsumed int64
	// Summarized is set when the figures of a queue too large to sum on
	// every read come from a sum made in the background, StatsAge ago
	// (MaxTimeLag is still told at the time of the read).
	Summarized bool
	// StatsAge is the age of that sum; 0 when Summarized is false.
	StatsAge time.Duration
}

// PartitionLag is one cursor of a group.
type PartitionLag struct {
	Group       string // the group's name; QueueModeGroup for queue mode
	Queue       string // the queue's name
	Partition   string // the partition's name
	PartitionID string // uuid
	LeaseID     string // "" when no lease is recorded
	LeaseActive bool   // a lease whose expiry is still ahead
	// LastConsumedAt is zero when the group never completed anything here.
	LastConsumedAt time.Time
	// TotalConsumed is the messages the group acked on the partition.
	TotalConsumed int64
	// OffsetLag is the messages stored past the group's committed offset
	// (or from the log start when it is below it); 0 when caught up.
	OffsetLag int64
	// OldestUnconsumedAt is the commit time of the segment holding the next
	// wanted offset; zero when nothing is pending.
	OldestUnconsumedAt time.Time
	// TimeLag is the broker clock's now minus OldestUnconsumedAt, at the
	// time of the read; 0 when nothing is pending.
	TimeLag time.Duration
	// Summarized is set on a lagging row of a queue too large to sort on
	// every read: the row, and its place in the listing, come from a sum
	// made in the background StatsAge ago (TimeLag is told at the time of
	// the read).
	Summarized bool
	// StatsAge is the age of that sum; 0 when Summarized is false.
	StatsAge time.Duration
}

// GroupState is derived, never stored: Lagging when the oldest unconsumed
// segment is older than five minutes, else Stable once the group consumed
// anything, else Dead.
func (g *GroupSummary) State() string {
	switch {
	case int64(g.MaxTimeLag/time.Second) > 300:
		return "Lagging"
	case g.TotalConsumed > 0:
		return "Stable"
	}
	return "Dead"
}

// CursorOffsets is where one group's cursor stands on one partition, in
// offsets.
type CursorOffsets struct {
	// Committed is the highest offset the group completed; LogStart - 1 or
	// less when it completed nothing still stored.
	Committed int64
	// LastOffset is the highest offset written; -1 while the partition is empty.
	LastOffset int64
	// LogStart is the first offset retention still keeps.
	LogStart int64
}

// SeekRequest moves one group's cursors on one queue.
type SeekRequest struct {
	Group string // "" = QueueModeGroup
	// Queue is the queue's name, required; an unknown queue (or one with
	// no partitions) is ErrQueueNotFound.
	Queue string
	// Partition names one partition; "" seeks every partition of the queue.
	Partition string
	// Target is where every cursor goes; exactly one position is named.
	Target SeekTarget
	// DryRun resolves every placement and changes nothing.
	DryRun bool
	// List, when above 0, is the most partitions the result lists;
	// SeekResult.Totals counts every one. A seek of a large queue then
	// holds a chunk of its partitions at a time, not all of them.
	List int
}

// SeekTarget is where a seek moves a cursor. Exactly one field is set.
type SeekTarget struct {
	// ToEnd sets committed to the partition's last offset: everything
	// pending is skipped, the next push is the next delivery.
	ToEnd bool
	// Time sets committed just below the first segment committed at or
	// after it (segment-granular), or to the last offset when none is.
	Time *time.Time
	// Offset sets committed to exactly this value, so delivery resumes at
	// Offset+1. It must lie in [log start-1, last offset]: outside, the
	// seek fails with ErrInvalid and nothing moves.
	Offset *int64
	// Snapshot restores the committed offsets captured by the named
	// snapshot, which must have been taken on the same queue (by any
	// group). Partitions created after it start from the oldest retained
	// message.
	Snapshot string
}

// Validate reports whether exactly one position is named: ErrNoTarget or
// ErrManyTargets when not.
func (t SeekTarget) Validate() error {
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

// PartitionSeek is what a seek did, or would do, to one partition.
type PartitionSeek struct {
	Partition   string // the partition's name
	PartitionID string // uuid
	// From is the committed value before the seek (the floor when the
	// group had no cursor there), To the one after.
	From, To int64
	// Redeliver counts frames the group will be handed again, Skip frames
	// it will never be handed.
	Redeliver, Skip int64
	// Clamped is true when the position wanted lay below the retention
	// watermark and was raised to it; FramesEvicted counts the offsets
	// below the watermark that the seek could not give back.
	Clamped       bool
	FramesEvicted int64 // offsets below the watermark not given back; 0 unless Clamped
	// OvershootBound is, for a time seek, the most frames older than the
	// time that the landing segment can deliver again.
	OvershootBound int64
	// Created is true when the seek gave the group its first cursor on
	// this partition.
	Created bool
}

// SeekResult is the outcome of a seek, one entry per partition in creation order.
type SeekResult struct {
	Queue string // the queue sought
	Group string // the group moved; QueueModeGroup when none was named
	// Partitions are the partitions touched, in creation order: every one,
	// or the first SeekRequest.List of them.
	Partitions []PartitionSeek
	// Totals sums the seek over every partition touched, listed or not.
	Totals SeekTotals
	// Snapshot is the snapshot applied, when the request named one; its
	// Cursors are not read.
	Snapshot *Snapshot
}

// SeekTotals sums a seek over the partitions it touched.
type SeekTotals struct {
	Partitions int64 // touched
	Moving     int64 // whose committed value changed (From != To)
	Clamped    int64 // clamped to the retention watermark
	// Redeliver, Skip, OvershootBound and FramesEvicted are the sums of
	// the partitions' fields.
	Redeliver, Skip, OvershootBound, FramesEvicted int64
}

// Add counts p in t.
func (t *SeekTotals) Add(p PartitionSeek) {
	t.Partitions++
	if p.From != p.To {
		t.Moving++
	}
	if p.Clamped {
		t.Clamped++
		t.FramesEvicted += p.FramesEvicted
	}
	t.Redeliver += p.Redeliver
	t.Skip += p.Skip
	t.OvershootBound += p.OvershootBound
}

// Clamped reports whether any partition was clamped, and how many frames
// the clamping could not give back in total.
func (r *SeekResult) Clamped() (bool, int64) {
	return r.Totals.Clamped > 0, r.Totals.FramesEvicted
}

// GroupDeleteRequest removes a consumer group's cursors.
type GroupDeleteRequest struct {
	Group string // required; QueueModeGroup is the queue-mode cursors
	// Queue, when not "", limits the deletion to that queue's cursors.
	Queue string
	// DeleteMetadata also removes the group's subscription records, so its
	// next pop starts as a new group (by its subscription mode) instead of
	// from the oldest retained message.
	DeleteMetadata bool
}

// BacklogRequest names a queue and a group whose backlog to count.
type BacklogRequest struct {
	Queue string // the queue's name; unknown counts 0
	Group string // "" = QueueModeGroup
}
