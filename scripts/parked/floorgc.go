//go:build linux

package main

import (
	"context"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// A floor's collector is paced as comb serve paces its own (cli/serve.go:
// tuneGC and followMemoryLimit), so the two differ in their work, not in
// their memory settings. It matters after the first wake: with Go's
// defaults no cycle ran between wakes of 10,000 through net/http, so each
// wake's replies ran into memory never touched before (7,800 and 3,100
// page faults in the second and third wakes, against 620 and 1,600 paced
// as comb, whose collection while the pops wait lets a wake reuse the
// last one's garbage). As in comb, GOGC and GOMEMLIMIT in the
// environment override it.
const (
	floorMemoryLimit     = 28 << 20
	floorGCPercent       = 400
	floorLimitHeadroom   = 2
	floorLargeGCPercent  = 200
	floorMemoryBackstop  = 4
	floorFollowEvery     = 250 * time.Millisecond
	floorQuietGrowth     = 1 << 20
	floorQuietCollectGap = 2 * time.Second
)

// paceFloorGC sets the collector as comb serve does and follows the live
// heap until ctx ends.
func paceFloorGC(ctx context.Context) {
	ownsPercent := os.Getenv("GOGC") == ""
	if ownsPercent {
		debug.SetGCPercent(floorGCPercent)
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(floorMemoryLimit)
	samples := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"}}
	t := time.NewTicker(floorFollowEvery)
	defer t.Stop()
	percent := floorGCPercent
	var prev int64
	var collected time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		metrics.Read(samples)
		var v [3]int64
		for i, s := range samples {
			if s.Value.Kind() == metrics.KindUint64 {
				v[i] = int64(min(s.Value.Uint64(), math.MaxInt64/4))
			}
		}
		live, keep, objects := v[0], v[0]+v[1], v[2]
		small := floorLimitHeadroom*keep <= floorMemoryLimit
		if !ownsPercent {
			debug.SetMemoryLimit(max(floorMemoryLimit, floorLimitHeadroom*keep))
			continue
		}
		limit, p := int64(floorMemoryLimit), floorGCPercent
		if !small {
			limit, p = floorMemoryBackstop*keep, floorLargeGCPercent
		}
		if p != percent {
			percent = p
			debug.SetGCPercent(p)
		}
		debug.SetMemoryLimit(limit)
		// Parked pops have grown the heap past what the last cycle saw and
		// stopped: collect now, while they wait, not in their wake.
		if !small && objects-live > keep/2 && objects-prev < floorQuietGrowth && time.Since(collected) >= floorQuietCollectGap {
			runtime.GC()
			collected = time.Now()
			metrics.Read(samples[2:])
			objects = int64(min(samples[2].Value.Uint64(), math.MaxInt64/4))
		}
		prev = objects
	}
}
