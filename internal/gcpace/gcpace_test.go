package gcpace

import (
	"context"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
	"time"
)

func TestTheSoftMemoryLimitStaysAboveWhatTheCollectorMustKeep(t *testing.T) {
	if got := memoryLimitFor(3<<20, 1<<20); got != defaultMemoryLimit {
		t.Errorf("small server: limit %d, want the default %d", got, defaultMemoryLimit)
	}
	if got := memoryLimitFor(60<<20, 80<<20); got != 280<<20 {
		t.Errorf("10,000 parked pops: limit %d, want %d", got, 280<<20)
	}
	if limit, pct := gcSettingsFor(3<<20, 1<<20, false); limit != defaultMemoryLimit || pct != defaultGCPercent {
		t.Errorf("small server: limit %d, GOGC %d; want the defaults %d, %d", limit, pct, defaultMemoryLimit, defaultGCPercent)
	}
	// Many parked pops: GOGC paces the collector, to a heap goal of
	// live + 2 × (live + stacks), leaving room for a wake's replies,
	// below the limit, which only backs it up.
	live, stacks := int64(60<<20), int64(80<<20)
	limit, pct := gcSettingsFor(live, stacks, true)
	if pct < 200 || limit < live+stacks+(live+stacks)*int64(pct)/100+(live+stacks)/2 {
		t.Errorf("10,000 parked pops: limit %d, GOGC %d: the limit binds before the heap goal", limit, pct)
	}
	if limit > 5*(live+stacks) {
		t.Errorf("10,000 parked pops: limit %d, more than 5 times the %d bytes kept", limit, live+stacks)
	}
	// Large requests on few goroutines (four pushes of 60 MB): the limit
	// paces the collector, a quarter again above what is kept, so memory
	// follows the requests, and is at least half the default limit above
	// it, so cycles never come back to back.
	for _, keep := range []int64{20 << 20, 60 << 20, 240 << 20} {
		limit, pct := gcSettingsFor(keep-(1<<20), 1<<20, false)
		if pct != defaultGCPercent || limit < keep+defaultMemoryLimit/2 || limit > keep+max(defaultMemoryLimit/2, keep/4) {
			t.Errorf("large requests keeping %d MB: limit %d MB, GOGC %d", keep>>20, limit>>20, pct)
		}
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
		parked                      bool
		live, stacks, objects, prev int64
		want                        bool
	}{
		// 2,000 pops parked since the last cycle (live 13 MB, stacks
		// 3 MB then) and the heap at 40 MB, still a tick ago.
		{"parked since the last cycle, quiet", true, 13 * mb, 4 * mb, 40 * mb, 40 * mb, true},
		{"parked, still parking", true, 13 * mb, 4 * mb, 40 * mb, 36 * mb, false},
		{"collected since they parked", true, 33 * mb, 8 * mb, 36 * mb, 36 * mb, false},
		// Without parked pops the soft limit paces the collector, not GOGC.
		{"large requests", false, 13 * mb, 4 * mb, 40 * mb, 40 * mb, false},
		{"small server", false, 4 * mb, 1 * mb, 12 * mb, 12 * mb, false},
	}
	for _, c := range cases {
		if got := collectWhileQuiet(c.parked, c.live, c.stacks, c.objects, c.prev); got != c.want {
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

func TestStreamingPacesTheCollectorUntilItIsPutBack(t *testing.T) {
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })

	restore := Streaming(func(string) string { return "" })
	if got := debug.SetGCPercent(streamingGCPercent); got != streamingGCPercent {
		t.Errorf("GC percent while streaming = %d, want %d", got, streamingGCPercent)
	}
	restore()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GC percent put back = %d, want 100", got)
	}

	debug.SetGCPercent(300)
	restore = Streaming(func(k string) string { return map[string]string{"GOGC": "300"}[k] })
	if got := debug.SetGCPercent(300); got != 300 {
		t.Errorf("GC percent with GOGC set = %d, want it left at 300", got)
	}
	restore()
	if got := debug.SetGCPercent(100); got != 300 {
		t.Errorf("GC percent after a streaming command under GOGC = %d, want 300", got)
	}
}

func TestPacingForParkedPopsNeedsThousandsOfGoroutinesAndOutlastsTheirWake(t *testing.T) {
	const mb = 1 << 20
	t0 := time.Date(2026, 12, 2, 17, 0, 0, 0, time.UTC)
	var p parkedPacing
	steps := []struct {
		after                    time.Duration
		live, stacks, goroutines int64
		want                     bool
	}{
		{0, 4 * mb, 1 * mb, 40, false},
		// Four 60 MB pushes: much kept, on few goroutines.
		{time.Second, 150 * mb, 1 * mb, 60, false},
		// 10,000 parked pops.
		{2 * time.Second, 73 * mb, 87 * mb, 10050, true},
		// Their wake: answered, their goroutines end within a second,
		// and the pacing stays for the rest of it.
		{2*time.Second + 500*time.Millisecond, 73 * mb, 11 * mb, 400, true},
		{2*time.Second + parkedHold - time.Millisecond, 73 * mb, 11 * mb, 60, true},
		{2*time.Second + parkedHold, 73 * mb, 11 * mb, 60, false},
		// Thousands of goroutines that keep little: the small server's pacing.
		{30 * time.Second, 4 * mb, 8 * mb, 1500, false},
	}
	for i, s := range steps {
		if got := p.parked(s.live, s.stacks, s.goroutines, t0.Add(s.after)); got != s.want {
			t.Errorf("step %d (%v: live %d MB, stacks %d MB, %d goroutines): parked %v, want %v",
				i, s.after, s.live/mb, s.stacks/mb, s.goroutines, got, s.want)
		}
	}
}
