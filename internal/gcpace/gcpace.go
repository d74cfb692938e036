// Package gcpace paces the garbage collector of a long-running comb
// server: a high GOGC under a soft memory limit for a small heap that
// allocates with every request; once the process keeps more than half
// that limit on thousands of goroutines (parked long-polls), GOGC pacing
// with the limit as a backstop and one collection while the heap is
// quiet; and when it keeps as much on fewer (large requests in flight), a
// limit a little above what it keeps. It is
// comb serve's policy; scripts/parked runs its floor servers under it
// too, so what they are compared on is their work, not their memory
// settings.
package gcpace

import (
	"context"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// The collector's settings unless GOMEMLIMIT and GOGC are set.
const (
	defaultMemoryLimit = 28 << 20
	defaultGCPercent   = 400
	// memoryLimitHeadroom is how many times what the collector must keep
	// (live heap and goroutine stacks) the soft limit is at least.
	memoryLimitHeadroom = 2
	// largeGCPercent paces the collector of a process that keeps more
	// than half the default limit on thousands of goroutines (parked
	// long-polls, parkedGoroutines): a cycle after twice as many new
	// bytes as it keeps. One wake of
	// every parked pop allocates about as much as the pops keep (10 KB
	// against 12 KB each at 2,000), so at Go's default of 100 a cycle
	// came in the middle of half the wakes, scanning every parked
	// goroutine's stack while the replies waited: 0.27 s of CPU at
	// 2,000 parked, 0.76 s at 10,000, as much as the rest of the wake.
	largeGCPercent = 200
	// memoryBackstop is how many times what the collector must keep the
	// soft limit is while largeGCPercent paces it: above the heap goal
	// (live + 2 × (live + stacks), at most 3 × what it keeps), so it
	// only bounds what pacing alone would let through.
	memoryBackstop = 4
	// memoryFollowEvery is how often the soft limit follows them.
	memoryFollowEvery = 250 * time.Millisecond
	// parkedGoroutines is how many goroutines make a process one that
	// parks long-polls by the thousand, which largeGCPercent paces.
	// Fewer goroutines keeping much are large requests in flight (a
	// push of 60 MB holds its body, and what it decoded, until it is
	// committed): paced by largeGCPercent under the backstop, four such
	// pushes took the process to 216-270 MB; they are paced by the soft
	// limit instead, a little above what is kept.
	parkedGoroutines = 1000
	// parkedHold is how long a process stays paced as one that parks
	// long-polls after it last was one: a wake of thousands answers them
	// all within a second, their goroutines end as they are answered,
	// and pacing that followed their count turned to the soft limit in
	// the middle of the wake (at 10,000, a cycle of 0.9 s of CPU in it).
	parkedHold = 10 * time.Second
)

// Tune sets the collector for a broker whose live heap is a few MB while
// every request allocates: with Go's default GOGC of 100 the heap is
// collected each time it doubles, a few times a second under load. A
// higher GOGC collects far less often, and the soft memory limit still
// bounds the heap, so garbage from bursts of requests is collected before
// the edge box's memory is. Measured with the bench module: server CPU per
// message and the batch-100 push rate both improve (see the README's
// performance section). GOGC and GOMEMLIMIT, as getenv reads them,
// override these. It reports whether the caller owns the soft limit,
// which Follow then keeps above what the collector must keep, and whether
// it owns GOGC too.
func Tune(getenv func(string) string) (ownsLimit, ownsPercent bool) {
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemoryLimit)
		ownsLimit = true
	}
	if getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
		ownsPercent = true
	}
	return ownsLimit, ownsPercent
}

// memoryLimitFor is the soft limit for a process whose collector must keep
// live bytes of heap and stacks bytes of goroutine stacks, when the caller
// does not own GOGC. A fixed limit below that makes the collector run back to
// back, each cycle scanning every stack again: 2,000 parked long-polls (a
// goroutine each, plus its connection's) were enough for the collector to
// take more CPU than the work, and to delay their wake-ups by seconds.
// With the limit at least memoryLimitHeadroom times what is live, a cycle
// comes after as many new bytes as it must scan, like Go's default GOGC
// of 100, never back to back.
func memoryLimitFor(live, stacks int64) int64 {
	return max(defaultMemoryLimit, memoryLimitHeadroom*(live+stacks))
}

// gcSettingsFor is the soft limit and GOGC for such a process when the
// caller owns both. A small one keeps defaultGCPercent under the default
// limit.
//
// One that keeps more than half of it on thousands of goroutines (parked,
// see parkedPacing) is paced by largeGCPercent, with the limit a backstop
// above the heap goal that gives. Where the limit paced it, the collector
// ran as soon as the heap met a limit computed from the live heap of the
// last cycle, which parking more pops had outgrown (at 10,000 parked, a
// cycle in each wake), and, at the limit, every new span of a wake's
// replies first returned free pages to the system (madvise), which the
// next span faulted back in: a sixth of the wake's CPU. GOGC's goal is
// taken from each cycle's own live heap and stacks.
//
// One that keeps as much on fewer goroutines (large requests in flight)
// keeps defaultGCPercent under a limit a quarter again what it keeps, at
// least half the default limit above it: a cycle after that much new
// heap, as GOGC 25 would, so its memory stays a little above its live
// requests'. What such requests keep is mostly their bodies, bytes the
// collector does not scan, so a cycle of a 70 MB heap takes a few
// milliseconds: at half again, one stream cycle of 62 MB took the server
// to 143 MB, past the 128 MB docs/limits.md promises; at a quarter, 121 MB
// (and four 60 MB pushes 98-99 MB, against 109-110, in the same time).
func gcSettingsFor(live, stacks int64, parked bool) (limit int64, percent int) {
	keep := live + stacks
	if parked {
		return memoryBackstop * keep, largeGCPercent
	}
	return max(defaultMemoryLimit, keep+max(defaultMemoryLimit/2, keep/4)), defaultGCPercent
}

// parkedPacing tells, tick by tick, whether the process is one that parks
// long-polls by the thousand: it runs parkedGoroutines or more and keeps
// more than half the default limit, or did so within parkedHold.
type parkedPacing struct{ until time.Time }

// parked reports it for a process that keeps live bytes of heap and
// stacks bytes of stacks on goroutines goroutines at now.
func (p *parkedPacing) parked(live, stacks, goroutines int64, now time.Time) bool {
	if goroutines >= parkedGoroutines && memoryLimitHeadroom*(live+stacks) > defaultMemoryLimit {
		p.until = now.Add(parkedHold)
	}
	return now.Before(p.until)
}

// Follow moves the soft limit (and GOGC, if ownsPercent) with the live
// heap and stacks until ctx ends. Call it only if Tune reported that the
// caller owns the soft limit.
func Follow(ctx context.Context, ownsPercent bool) {
	samples := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"},
		{Name: "/sched/goroutines:goroutines"}, {Name: "/memory/classes/heap/objects:bytes"}}
	t := time.NewTicker(memoryFollowEvery)
	defer t.Stop()
	percent := defaultGCPercent
	var objects int64
	var collected time.Time
	var pacing parkedPacing
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		metrics.Read(samples)
		var v [4]int64
		for i, s := range samples {
			if s.Value.Kind() == metrics.KindUint64 {
				v[i] = int64(min(s.Value.Uint64(), math.MaxInt64/4))
			}
		}
		if !ownsPercent {
			debug.SetMemoryLimit(memoryLimitFor(v[0], v[1]))
			continue
		}
		parked := pacing.parked(v[0], v[1], v[2], time.Now())
		limit, p := gcSettingsFor(v[0], v[1], parked)
		if p != percent {
			percent = p
			debug.SetGCPercent(p)
		}
		debug.SetMemoryLimit(limit)
		if collectWhileQuiet(parked, v[0], v[1], v[3], objects) && time.Since(collected) >= quietCollectEvery {
			runtime.GC()
			collected = time.Now()
			metrics.Read(samples[3:])
			v[3] = int64(min(samples[3].Value.Uint64(), math.MaxInt64/4))
		}
		objects = v[3]
	}
}

const (
	// quietGrowth is how much the heap may grow in one memoryFollowEvery
	// and still be quiet: what a few requests a second allocate.
	quietGrowth = 1 << 20
	// quietCollectEvery bounds how often collectWhileQuiet collects. Each
	// time, the heap must also have grown by half of what is kept since
	// the last cycle, so at most it collects as GOGC 50 would, and only
	// while allocating less than quietGrowth a tick. Longer, a pause in a
	// slow burst of parking pops spent the collection, and the rest of
	// the burst parked after it.
	quietCollectEvery = 2 * time.Second
)

// collectWhileQuiet reports whether a process paced by largeGCPercent
// should collect now: its heap (objects bytes, prev a tick ago) has grown
// by more than half of what the last cycle kept (live heap and stacks)
// since that cycle, and stopped growing. That is what parking thousands
// of long-polls does: each holds its connection's buffers and request,
// live, but the heap goal was set by a cycle that ran before most of them
// parked, so the one push that wakes them all met the goal in the middle
// of its replies, and the collector scanned every parked stack while they
// waited (0.2-0.8 s of CPU in a wake of 2,000 to 10,000). Collected while
// they wait instead, the goal is taken from what they keep, and their
// wake fits in the room GOGC leaves. A busy heap (growing faster than
// quietGrowth a tick) is left to the pacer.
func collectWhileQuiet(parked bool, live, stacks, objects, prev int64) bool {
	if !parked {
		return false
	}
	return objects-live > (live+stacks)/2 && objects-prev < quietGrowth
}

// streamingGCPercent paces the collector of a command that reads a whole
// file row by row and keeps one row at a time (comb check, and comb
// backup's check of its copy): the SQLite driver copies every blob it
// returns, so such a command allocates as many bytes as it reads while
// keeping about a megabyte. At Go's default of 100 the heap grew to 4 MB
// plus whatever was allocated while a cycle marked; comb check of a 2
// GiB file peaked at 37 MiB of RSS, 30 MiB at 25, in the same time (each
// cycle has about a megabyte to mark).
const streamingGCPercent = 25

// Streaming sets the collector for such a command unless GOGC is set,
// and returns what puts it back: the command's process, or the test that
// runs the command in its own, goes on as it was.
func Streaming(getenv func(string) string) (restore func()) {
	if getenv("GOGC") != "" {
		return func() {}
	}
	before := debug.SetGCPercent(streamingGCPercent)
	return func() { debug.SetGCPercent(before) }
}
