package cli

import (
	"context"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
)

func TestTheSoftMemoryLimitStaysAboveWhatTheCollectorMustKeep(t *testing.T) {
	if got := memoryLimitFor(3<<20, 1<<20); got != defaultMemoryLimit {
		t.Errorf("small server: limit %d, want the default %d", got, defaultMemoryLimit)
	}
	if got := memoryLimitFor(60<<20, 80<<20); got != 280<<20 {
		t.Errorf("10,000 parked pops: limit %d, want %d", got, 280<<20)
	}

	// Many goroutines parked on deep stacks, as long-polls are: the limit
	// followMemoryLimit sets must clear their stacks with room to spare.
	prev := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 3000 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			deep(64, release)
		}()
	}
	defer func() { close(release); wg.Wait() }()
	runtime.GC()
	ctx, cancel := context.WithTimeout(context.Background(), 3*memoryFollowEvery)
	defer cancel()
	followMemoryLimit(ctx)
	s := []metrics.Sample{{Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(s)
	stacks := int64(s[0].Value.Uint64())
	if limit := debug.SetMemoryLimit(-1); limit < 2*stacks || stacks < defaultMemoryLimit/2 {
		t.Fatalf("soft limit %d with %d bytes of stacks", limit, stacks)
	}
}

// deep waits on release under n frames of stack.
func deep(n int, release chan struct{}) byte {
	var pad [256]byte
	if n == 0 {
		<-release
		return pad[0]
	}
	return deep(n-1, release) + pad[n%256]
}
