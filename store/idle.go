package store

import (
	"sync"
	"time"
)

// Idle marks. A pop of a group that has nothing due on a queue is told so
// by scanCandidates, which for a group that may have something anywhere
// (subscribed to all messages, or with over maxSuspects cursor rows)
// walks the whole queue: a second or so at a million partitions, on every
// pop of an idle group. What the walk reads changes only with a commit, or
// with time as leases expire, so its answer is kept, per queue and group,
// with the commit sequence it was read at and the earliest expiry of a
// lease over pending data (leaseWake): a pop that comes before either
// changes gives the same answer without the walk. Anything that can make
// something due (a push, a seek or a snapshot restored, a nack, a lease
// released, retention, a group deleted or moved) is a commit, so no list
// of them is kept here that a new kind of write could be missing from.
//
// The sequence (Store.commitSeq) is odd while a commit may be becoming
// visible and is made even once it has returned; a mark is taken only at
// an even sequence read before the walk, and holds only while the sequence
// is that same value. A commit that readers could see after the walk began
// has therefore changed it, whether or not the walk saw it. Writes made by
// another process to the file are not seen; comb's writer keeps rows of
// its own in memory too and assumes there are none.

// maxIdleMarks bounds the marks kept: past it they are all dropped and
// the next pops walk again.
const maxIdleMarks = 4096

type idleKey struct {
	queue int64
	group string
}

type idleMark struct {
	seq  int64     // commitSeq when the walk began
	wake time.Time // earliest expiry of a lease over pending data, zero if none
}

type idleMarks struct {
	mu sync.Mutex
	m  map[idleKey]idleMark
}

// nothingDue tells whether group has nothing due on queue at commit
// sequence seq and time now (micros), as a walk found, and when to look
// again if so.
func (im *idleMarks) nothingDue(k idleKey, seq, now int64) (time.Time, bool) {
	if seq%2 != 0 {
		return time.Time{}, false
	}
	im.mu.Lock()
	mk, ok := im.m[k]
	im.mu.Unlock()
	if !ok || mk.seq != seq || (!mk.wake.IsZero() && now >= micros(mk.wake)) {
		return time.Time{}, false
	}
	return mk.wake, true
}

// mark keeps that a walk begun at sequence seq found nothing due for k,
// with wake the earliest expiry of a lease over pending data.
func (im *idleMarks) mark(k idleKey, seq int64, wake time.Time) {
	if seq%2 != 0 {
		return
	}
	im.mu.Lock()
	defer im.mu.Unlock()
	if im.m == nil || len(im.m) >= maxIdleMarks {
		im.m = map[idleKey]idleMark{}
	}
	im.m[k] = idleMark{seq: seq, wake: wake}
}
