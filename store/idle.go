package store

import (
	"slices"
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

// A mark also holds past commits that changed nothing of its queue but
// new segments, which a pop then finds through the queue's partitions
// written since (their last_segment_id is past the highest the walk could
// see): at a million partitions a group that had consumed every one
// walked them all, 3 s, on its first pop after any commit anywhere. What
// else can make something due for a group is a commit that touches the
// queue (wtx.touch: a seek, a lease released, a group deleted or
// subscribed again, a configure), as the wakes of parked pops need
// anyway; each such change has a counter per queue (and group), odd while
// its commit may be becoming visible, and a mark holds only while the
// counters it was taken at do. A lease of the group's own that an ack
// ends with messages left behind it (touchGroup) names its partition,
// which the next pops read with the new segments. An outside commit
// forgets every mark, and a mark this way lasts at most maxAppendMarkAge
// from its walk.

// maxIdleMarks bounds the marks kept: past it they are all dropped and
// the next pops walk again.
const maxIdleMarks = 4096

// maxChangeKeys bounds the queues (and groups) changes are counted for:
// past it the counts start again and every mark is forgotten.
const maxChangeKeys = 65536

// maxAppendMarkAge is how long a mark holds past commits that only
// appended, from the walk that took it: a bound on what a change no
// touch records could hide. From half that age, one pop at a time (at
// most one every markRefreshRetry) walks to take its place while the
// others still read it: when marks ran out together, every pop and every
// claim made for a parked pop walked again, and under a steady trickle
// of pushes each of those walks found something and left no mark, so
// they all went on walking (at a million partitions: pushes held 1.4 s,
// the server at a core).
const (
	maxAppendMarkAge = time.Minute
	markRefreshRetry = 10 * time.Second
)

type idleKey struct {
	queue int64
	group string
}

// idleSince is what a pop reads before it walks a queue: the counts of the
// changes that make its walk's answer stale, how many partitions have
// been changed for its group alone, and the highest segment id of the
// queue visible then.
type idleSince struct {
	queue, group int64 // changes to the queue for every group, for this group
	parts        int64 // partitions changed for this group alone, ever
	epoch        int64
	seg          int64
}

type idleMark struct {
	seq   int64     // commitSeq when the walk began
	wake  time.Time // earliest expiry of a lease over pending data, zero if none
	since idleSince
	at    int64 // micros: when the walk was made
	// due lists the partitions the walk found something due on, at most
	// maxSuspects, sorted: the pops after it read them with those written
	// since. Empty for a walk that found nothing due.
	due []int64
	// refreshing is when (micros) a pop began the walk that is to take
	// this mark's place; 0 if none has.
	refreshing int64
}

// maxPartLog bounds the partitions kept per queue and group; a mark older
// than them walks again.
const maxPartLog = 256

// changeCount is what is counted of one queue (and group).
type changeCount struct {
	n int64 // changes that end marks; odd while one may be becoming visible
	// The partitions a commit changed for the group alone (a lease ended
	// with messages left in it): the next pop of an idle group reads
	// them, not the queue. partSeq is odd while such a commit may be
	// becoming visible; start counts the ids dropped from the front.
	partSeq, start int64
	parts          []int64
}

type idleMarks struct {
	mu      sync.Mutex
	m       map[idleKey]idleMark
	changes map[watchChange]*changeCount
	epoch   int64
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
	if !ok || mk.seq != seq || len(mk.due) > 0 || (!mk.wake.IsZero() && now >= micros(mk.wake)) {
		return time.Time{}, false
	}
	return mk.wake, true
}

// since reads the change counts of tenant's queue and group (seg is left
// for the caller); ok is false while a change may be becoming visible.
func (im *idleMarks) since(key, group string) (idleSince, bool) {
	im.mu.Lock()
	defer im.mu.Unlock()
	s := idleSince{epoch: im.epoch}
	ok := true
	if c := im.changes[watchChange{key: key}]; c != nil {
		s.queue, ok = c.n, c.n%2 == 0
	}
	if c := im.changes[watchChange{key: key, group: group}]; c != nil {
		s.group, s.parts = c.n, c.start+int64(len(c.parts))
		ok = ok && c.n%2 == 0 && c.partSeq%2 == 0
	}
	return s, ok
}

// appendsOnly returns k's mark when only new segments and the partitions
// it also returns can have changed what its walk found: the counts are
// those of now, the partitions changed for the group since are still
// kept, its lease wake has not come, and it is younger than
// maxAppendMarkAge. key is the queue's watch key. With refresh (a pop on
// a reader, never the writer), the first caller to find the mark past
// half its age is told it does not hold, and renew, so that it walks
// and its walk renews the mark.
func (im *idleMarks) appendsOnly(k idleKey, key string, now idleSince, at int64, refresh bool) (_ idleMark, _ []int64, ok, renew bool) {
	im.mu.Lock()
	defer im.mu.Unlock()
	mk, ok := im.m[k]
	if !ok || mk.since.queue != now.queue || mk.since.group != now.group || mk.since.epoch != now.epoch ||
		(!mk.wake.IsZero() && at >= micros(mk.wake)) || at-mk.at >= maxAppendMarkAge.Microseconds() || at < mk.at {
		return idleMark{}, nil, false, false
	}
	if refresh && at-mk.at >= maxAppendMarkAge.Microseconds()/2 && at-mk.refreshing >= markRefreshRetry.Microseconds() {
		mk.refreshing = at
		im.m[k] = mk
		return idleMark{}, nil, false, true
	}
	if mk.since.parts == now.parts {
		return mk, nil, true, false
	}
	c := im.changes[watchChange{key: key, group: k.group}]
	if c == nil || mk.since.parts < c.start || now.parts > c.start+int64(len(c.parts)) || mk.since.parts > now.parts {
		return idleMark{}, nil, false, false
	}
	return mk, slices.Clone(c.parts[mk.since.parts-c.start : now.parts-c.start]), true, false
}

// mark keeps that a walk begun at sequence seq, after since was read,
// found nothing due for k at time at but on the partitions due (sorted;
// at most maxSuspects), with wake the earliest expiry of a lease over
// pending data.
func (im *idleMarks) mark(k idleKey, seq int64, wake time.Time, since idleSince, at int64, due []int64) {
	if seq%2 != 0 {
		return
	}
	im.mu.Lock()
	defer im.mu.Unlock()
	if im.m == nil || len(im.m) >= maxIdleMarks {
		im.m = map[idleKey]idleMark{}
	}
	mk := idleMark{seq: seq, wake: wake, since: since, at: at, due: due}
	if old, ok := im.m[k]; ok && old.at == at {
		// Renewed from the same walk: a walk to take its place may be
		// under way already.
		mk.refreshing = old.refreshing
	}
	im.m[k] = mk
}

// changing counts a commit's changes, once before it may become visible
// and once after (done; writer goroutine): changed ends marks, parts
// lists partitions changed for one group alone.
func (im *idleMarks) changing(changed map[watchChange]struct{}, parts map[watchChange][]int64, done bool) {
	if len(changed) == 0 && len(parts) == 0 {
		return
	}
	im.mu.Lock()
	defer im.mu.Unlock()
	if !done && (im.changes == nil || len(im.changes) >= maxChangeKeys) {
		// Counts begun again could meet a mark's values: forget them all.
		im.changes = map[watchChange]*changeCount{}
		im.epoch++
	}
	count := func(k watchChange) *changeCount {
		c := im.changes[k]
		if c == nil {
			c = &changeCount{}
			im.changes[k] = c
		}
		return c
	}
	for k := range changed {
		count(k).n++
	}
	for k, ids := range parts {
		c := count(k)
		c.partSeq++
		if !done {
			continue
		}
		c.parts = append(c.parts, ids...)
		if drop := len(c.parts) - maxPartLog; drop > 0 {
			c.start += int64(drop)
			c.parts = append(c.parts[:0:0], c.parts[drop:]...)
		}
	}
}

// idleWalk is a walk a claim made in the writer that found nothing due,
// at segment sequence seg (the segments of its own transaction come
// after it), with wake the earliest expiry of a lease over pending data.
type idleWalk struct {
	k    idleKey
	key  string // the queue's watch key
	seg  int64
	wake time.Time
}

// walked keeps the walks of a transaction that has committed as marks, at
// time at, unless the transaction changed their queue otherwise (changed,
// parts: what it did after a walk is not in it). Such a mark holds only
// past commits that append (appendsOnly), never by the commit sequence
// alone: the transaction's own new segments came after the walk.
func (im *idleMarks) walked(walks []idleWalk, changed map[watchChange]struct{}, parts map[watchChange][]int64, at int64) {
	for _, wk := range walks {
		all, grp := watchChange{key: wk.key}, watchChange{key: wk.key, group: wk.k.group}
		if _, ok := changed[all]; ok {
			continue
		}
		if _, ok := changed[grp]; ok {
			continue
		}
		if _, ok := parts[grp]; ok {
			continue
		}
		since, ok := im.since(wk.key, wk.k.group)
		if !ok {
			continue
		}
		since.seg = wk.seg
		im.mark(wk.k, neverSeq, wk.wake, since, at, nil)
	}
}

// neverSeq is no commit sequence: a mark taken at it is not read by
// nothingDue.
const neverSeq = -2

// forgetAll makes every mark stale (another program wrote to the file).
func (im *idleMarks) forgetAll() {
	im.mu.Lock()
	defer im.mu.Unlock()
	im.epoch++
	im.m = nil
}
