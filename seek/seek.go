// Package seek is the rule of where a consumer group's cursor goes on one
// partition: where a group starts on first contact (subscription modes
// all / new / timestamp) and where a seek moves it (to the end, to a time,
// to an offset, to a snapshot).
//
// It is pure: Place and Seed read a State the store filled from the
// database and return a committed offset; the store does the I/O and
// applies the result. It imports nothing else of comb (not even the vocabulary), so the rule can be
// read, and tested, without a database.
package seek

import (
	"errors"
	"fmt"
	"time"
)

// Errors of Place.
var (
	// ErrNoTarget is returned by Place for a target that names no
	// position. (Callers check a target names exactly one before placing
	// it: see combtype.SeekTarget.Validate.)
	ErrNoTarget = errors.New("seek names no position")
	// ErrOffsetOutOfRange is matched by the *OffsetError Place returns for
	// an offset outside the partition's retained range [Floor, LastOffset].
	ErrOffsetOutOfRange = errors.New("offset outside the retained range")
)

// OffsetError is an offset target outside one partition's retained range.
type OffsetError struct {
	Partition string
	Offset    int64
	// Floor and Last are the range a committed value may take: Floor
	// replays everything retained, Last skips to the end.
	Floor, Last int64
}

func (e *OffsetError) Error() string {
	return fmt.Sprintf("offset %d is outside the retained range of partition %q: "+
		"committed may be set from %d (replay everything retained) to %d (skip to end)",
		e.Offset, e.Partition, e.Floor, e.Last)
}

// Is makes an OffsetError match ErrOffsetOutOfRange.
func (e *OffsetError) Is(target error) bool { return target == ErrOffsetOutOfRange }

// Target is where a seek moves a cursor. Exactly one field is set; were
// more, Place would take the first in the order below.
type Target struct {
	// ToEnd sets committed to the partition's last offset: everything
	// pending is skipped, the next push is the next delivery.
	ToEnd bool
	// Time sets committed just below the first segment committed at or
	// after it (segment-granular), or to the last offset when none is.
	Time *time.Time
	// Offset sets committed to exactly this value, so delivery resumes at
	// Offset+1. It must lie in [Floor, LastOffset].
	Offset *int64
	// Snapshot restores the committed offsets captured by the named
	// snapshot. Partitions created after it start from the oldest retained
	// message.
	Snapshot string
}

// Segment is what the rule needs of one stored segment.
type Segment struct {
	BaseOffset int64
	FrameCount int64
}

// State is what the rule sees of one partition and one group's cursor on
// it.
type State struct {
	// Name is the partition's name, for error messages.
	Name string
	// LastOffset is the highest offset written; -1 when nothing was.
	LastOffset int64
	// LogStart is the first offset retention still keeps (LastOffset+1
	// when retention emptied the partition).
	LogStart int64
	// LastSegmentAt is when the newest segment was committed, in
	// microseconds since the Unix epoch; 0 when there is none.
	LastSegmentAt int64
	// HasCursor is false when the group never met this partition;
	// Committed is then Floor().
	HasCursor bool
	Committed int64
	// Landing is the first segment committed at or after the target's (or
	// the start's) time; nil when no segment is that recent or there is no
	// time. The store finds it on the offset index (store/landing.go).
	Landing *Segment
	// Captured is the snapshot's committed value for this partition; nil
	// when the target names no snapshot or the partition was created
	// after it.
	Captured *int64
}

// Floor is the lowest committed value that still means something: just
// below the first retained offset.
func (s *State) Floor() int64 { return s.LogStart - 1 }

// Placement is where a seek puts one partition's cursor.
type Placement struct {
	Committed int64
	// Clamped is true when the position wanted lay below the retention
	// watermark and was raised to it; FramesEvicted counts the offsets
	// below the watermark that the seek could not give back.
	Clamped       bool
	FramesEvicted int64
	// OvershootBound is, for a time seek, the most frames older than the
	// time that the landing segment can deliver again: its frame count
	// minus one.
	OvershootBound int64
}

// Place resolves t on one partition. It is the one rule of where a seek
// lands; the store applies it to every partition a seek touches, and Seed
// applies its time branch to a group's first cursors.
//
//   - ToEnd: committed = LastOffset.
//   - Time: committed = BaseOffset-1 of the first segment committed at or
//     after the time, never below the floor (LogStart-1); no such segment
//     puts it on LastOffset, a future-only cursor. The cursor can only
//     land on a segment boundary, so up to FrameCount-1 frames committed
//     before the time are delivered again (OvershootBound).
//   - Offset: committed = the offset; outside [Floor, LastOffset] it is
//     an *OffsetError.
//   - Snapshot: committed = the captured value; the floor on a partition
//     the snapshot does not cover (created after it).
//
// A time seek lands on the floor and reports Clamped when frames below the
// watermark were deleted by retention: some of them may have been committed
// at or after the time, and no seek can give them back. FramesEvicted is
// then LogStart, the offsets that no longer exist. A snapshot position
// below the watermark is raised to it and reports exactly the frames it
// needed that retention deleted.
func Place(t Target, st *State) (Placement, error) {
	floor := st.Floor()
	switch {
	case t.ToEnd:
		return Placement{Committed: st.LastOffset}, nil
	case t.Offset != nil:
		if off := *t.Offset; off < floor || off > st.LastOffset {
			return Placement{}, &OffsetError{Partition: st.Name, Offset: off, Floor: floor, Last: st.LastOffset}
		}
		return Placement{Committed: *t.Offset}, nil
	case t.Snapshot != "":
		if st.Captured == nil {
			return Placement{Committed: floor}, nil
		}
		pl := Placement{Committed: min(*st.Captured, st.LastOffset)}
		if pl.Committed < floor {
			pl.Clamped, pl.FramesEvicted, pl.Committed = true, floor-pl.Committed, floor
		}
		return pl, nil
	case t.Time != nil:
		evicted := st.LogStart > 0
		if st.Landing == nil {
			// Nothing retained is that recent. If retention emptied the
			// partition, frames at or after the time may have been deleted.
			pl := Placement{Committed: st.LastOffset}
			if evicted && st.LastOffset < st.LogStart && st.LastSegmentAt >= t.Time.UnixMicro() {
				pl.Clamped, pl.FramesEvicted = true, st.LogStart
			}
			return pl, nil
		}
		pl := Placement{
			Committed:      max(st.Landing.BaseOffset-1, floor),
			OvershootBound: max(st.Landing.FrameCount-1, 0),
		}
		if evicted && st.Landing.BaseOffset <= st.LogStart {
			pl.Clamped, pl.FramesEvicted = true, st.LogStart
		}
		return pl, nil
	}
	return Placement{}, ErrNoTarget
}

// Start is where a group's new cursor on a partition begins. The zero
// Start is the oldest retained message.
type Start struct {
	// End starts after the partition's last message: a group subscribing
	// to new messages, at its first contact with the queue.
	End bool
	// Time, when set, starts where a seek to it lands (Place's time
	// branch): a group subscribing from a time, or a partition met later
	// by a group whose subscription stores one.
	Time *time.Time
}

// Seed is the committed value of a group's new cursor on the partition st
// describes. A group subscribing from a time thus starts exactly where a
// seek to that time would put it: both are Place.
func Seed(s Start, st *State) int64 {
	var t Target
	switch {
	case s.End:
		t.ToEnd = true
	case s.Time != nil:
		t.Time = s.Time
	default:
		return st.Floor()
	}
	pl, _ := Place(t, st) // ToEnd and Time never fail
	return pl.Committed
}

// Implied is the committed value of a group's cursor on a partition it has
// no cursor row on: where Seed put the cursor when the group registered,
// read now. A group's cursors are not written when it subscribes (at a
// million partitions that held every other write for seconds); each is
// written when the group first claims, acks or seeks on the partition,
// and until then every reader takes it from here.
//
// headAtStart is the partition's last offset when the group registered
// (-1 when it had none or did not exist yet): the store finds it by the
// segments' commit sequence, not by time, so a clock that stepped back
// does not move it.
//
//   - all: the floor, as Seed.
//   - new (s.End): headAtStart, what Seed wrote then.
//   - a time: Place's time branch applied to the partition as it is now,
//     but never past headAtStart. A segment committed at or after the time
//     that existed at registration is where Seed landed then, and still is;
//     when none existed, Seed put the cursor on the last offset of the
//     time, headAtStart, and a segment committed since is not earlier.
//
// A position below the retention watermark reads as the floor: what lies
// below it no longer exists, and the pop scan resumes at the floor anyway.
func Implied(s Start, headAtStart int64, st *State) int64 {
	floor := st.Floor()
	switch {
	case s.End:
		return max(headAtStart, floor)
	case s.Time != nil:
		pl, _ := Place(Target{Time: s.Time}, st) // Time never fails
		return max(min(pl.Committed, headAtStart), floor)
	}
	return floor
}
