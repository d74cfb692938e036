package gcpace

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
	if limit, pct := gcSettingsFor(3<<20, 1<<20); limit != defaultMemoryLimit || pct != defaultGCPercent {
		t.Errorf("small server: limit %d, GOGC %d; want the defaults %d, %d", limit, pct, defaultMemoryLimit, defaultGCPercent)
	}
	// Many parked pops: GOGC paces the collector, to a heap goal of
	// live + 2 × (live + stacks), leaving room for a wake's replies,
	// below the limit, which only backs it up.
	live, stacks := int64(60<<20), int64(80<<20)
	limit, pct := gcSettingsFor(live, stacks)
	if pct < 200 || limit < live+stacks+(live+stacks)*int64(pct)/100+(live+stacks)/2 {
		t.Errorf("10,000 parked pops: limit %d, GOGC %d: the limit binds before the heap goal", limit, pct)
	}
	if limit > 5*(live+stacks) {
		t.Errorf("10,000 parked pops: limit %d, more than 5 times the %d bytes kept", limit, live+stacks)
	}

	// Many goroutines parked on deep stacks, as long-polls are: the
	// settings Follow makes must clear their stacks with room
	// to spare, whether it owns GOGC or not.
	prevLimit, prevPct := debug.SetMemoryLimit(math.MaxInt64), debug.SetGCPercent(defaultGCPercent)
	t.Cleanup(func() { debug.SetMemoryLimit(prevLimit); debug.SetGCPercent(prevPct) })
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
	for _, ownsPercent := range []bool{false, true} {
		debug.SetMemoryLimit(math.MaxInt64)
		debug.SetGCPercent(defaultGCPercent)
		ctx, cancel := context.WithTimeout(context.Background(), 3*memoryFollowEvery)
		Follow(ctx, ownsPercent)
		cancel()
		s := []metrics.Sample{{Name: "/memory/classes/heap/stacks:bytes"}}
		metrics.Read(s)
		stacks := int64(s[0].Value.Uint64())
		limit, pct := debug.SetMemoryLimit(-1), debug.SetGCPercent(-1)
		debug.SetGCPercent(pct)
		if limit < 2*stacks || stacks < defaultMemoryLimit/2 {
			t.Fatalf("owning GOGC %v: soft limit %d with %d bytes of stacks", ownsPercent, limit, stacks)
		}
		if want := map[bool]int{false: defaultGCPercent, true: largeGCPercent}[ownsPercent]; pct != want {
			t.Fatalf("owning GOGC %v: GOGC %d, want %d", ownsPercent, pct, want)
		}
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

func TestTheCollectorRunsOnceParkedPopsHaveGrownTheHeapAndItIsQuiet(t *testing.T) {
	const mb = 1 << 20
	cases := []struct {
		name                        string
		live, stacks, objects, prev int64
		want                        bool
	}{
		// 2,000 pops parked since the last cycle (live 13 MB, stacks
		// 3 MB then) and the heap at 40 MB, still a tick ago.
		{"parked since the last cycle, quiet", 13 * mb, 4 * mb, 40 * mb, 40 * mb, true},
		{"parked, still parking", 13 * mb, 4 * mb, 40 * mb, 36 * mb, false},
		{"collected since they parked", 33 * mb, 8 * mb, 36 * mb, 36 * mb, false},
		// A small server is paced by the soft limit, not by GOGC.
		{"small server", 4 * mb, 1 * mb, 12 * mb, 12 * mb, false},
	}
	for _, c := range cases {
		if got := collectWhileQuiet(c.live, c.stacks, c.objects, c.prev); got != c.want {
			t.Errorf("%s: collect %v, want %v", c.name, got, c.want)
		}
	}
}

// The collector settings are process-wide, so this test restores them and
// must not run in parallel with others that read them.
func TestTuneSetsTheCollectorUnlessTheEnvironmentDoes(t *testing.T) {
	prevPct, prevLimit := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetGCPercent(prevPct); debug.SetMemoryLimit(prevLimit) })

	Tune(func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != defaultGCPercent {
		t.Errorf("GC percent = %d, want %d", got, defaultGCPercent)
	}
	if got := debug.SetMemoryLimit(math.MaxInt64); got != defaultMemoryLimit {
		t.Errorf("memory limit = %d, want %d", got, defaultMemoryLimit)
	}

	env := map[string]string{"GOGC": "100", "GOMEMLIMIT": "1GiB"}
	Tune(func(k string) string { return env[k] })
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GC percent with GOGC set = %d, want it left at 100", got)
	}
	if got := debug.SetMemoryLimit(math.MaxInt64); got != math.MaxInt64 {
		t.Errorf("memory limit with GOMEMLIMIT set = %d, want it left alone", got)
	}
}
