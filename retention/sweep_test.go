package retention_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
	"github.com/comb-broker/comb/internal/combtest"
	"github.com/comb-broker/comb/retention"
	"github.com/comb-broker/comb/store"
)

// backlog is a store on a Manual clock holding, in queue "old" with
// retention of a minute, parts partitions of segs segments of per
// messages each, all past retention once the clock moved an hour.
type backlog struct {
	t     *testing.T
	st    *store.Store
	clock *clock.Manual
	parts int
}

func newBacklog(t *testing.T, parts, segs, per int) *backlog {
	t.Helper()
	clk := clock.NewManual(t0)
	st := combtest.MustOpenStore(t, combtest.Options{Clock: clk})
	ctx := context.Background()
	o := combtype.DefaultQueueOptions()
	o.RetentionEnabled, o.RetentionSeconds = true, 60
	if _, _, err := st.Configure(ctx, "", combtype.ConfigureRequest{Queue: "old", Options: o}); err != nil {
		t.Fatal(err)
	}
	items := make([]combtype.PushItem, per)
	for s := range segs {
		for p := range parts {
			for i := range items {
				items[i] = combtype.PushItem{Queue: "old", Partition: partName(p), TxnID: fmt.Sprintf("old-%d-%d-%d", p, s, i),
					Payload: []byte(`{"old":true}`)}
			}
			if _, err := st.Push(ctx, "", items); err != nil {
				t.Fatal(err)
			}
		}
	}
	clk.Advance(time.Hour)
	return &backlog{t: t, st: st, clock: clk, parts: parts}
}

func partName(p int) string { return fmt.Sprintf("p%02d", p) }

// sql runs query with the sqlite3 command-line tool on the store's file,
// as an operator would, and returns its output as integers, one a line.
func (b *backlog) sql(query string) []int64 {
	b.t.Helper()
	var out []int64
	for _, line := range strings.Fields(combtest.SQLite3Exec(b.t, b.st.Path(), query)) {
		n, err := strconv.ParseInt(line, 10, 64)
		if err != nil {
			b.t.Fatalf("%s: %q is not a number", query, line)
		}
		out = append(out, n)
	}
	return out
}

// stored is the messages and segments stored per partition of "old", in
// partition order.
func (b *backlog) stored() (frames []int64, segments int64) {
	b.t.Helper()
	frames = b.sql(`SELECT (SELECT COALESCE(SUM(s.frame_count), 0) FROM segments s WHERE s.partition_id = p.id)
		FROM partitions p JOIN queues q ON q.id = p.queue_id WHERE q.name = 'old' AND p.name != 'Default' ORDER BY p.name`)
	segments = b.sql(`SELECT COUNT(*) FROM segments s JOIN partitions p ON p.id = s.partition_id
		JOIN queues q ON q.id = p.queue_id WHERE q.name = 'old'`)[0]
	return frames, segments
}

func sum(xs []int64) (n int64) {
	for _, x := range xs {
		n += x
	}
	return n
}

// A sweep that stops at its time has taken from every partition with
// expired segments, not emptied the first partitions and left the rest;
// the next passes go on where it stopped.
func TestSweepCutShortTakesFromEveryPartition(t *testing.T) {
	const parts, segs, per = 16, 10, 5
	b := newBacklog(t, parts, segs, per)
	ctx := context.Background()
	// One segment per op; each op moves the clock a second, so a pass of
	// a minute stops after 60 ops, with 160 to do.
	svc := retention.New(b.st, retention.Config{Interval: -1, LeaseInterval: -1, Clock: b.clock,
		PassTime: time.Minute, YieldRatio: -1, Limits: store.EvictLimits{Segments: 1},
		Logger: slog.New(slog.DiscardHandler), OnOp: func(retention.Stats) { b.clock.Advance(time.Second) }})
	now := b.clock.Now()
	st, err := svc.Sweep(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if st.Complete {
		t.Fatalf("a pass of 60 ops reported 160 segments' work complete: %+v", st)
	}
	frames, _ := b.stored()
	for p, n := range frames {
		if n == segs*per {
			t.Errorf("partition %s kept all its %d expired messages after a pass of %d ops: %v", partName(p), n, st.Segments, frames)
		}
	}
	if st.Partitions != parts {
		t.Errorf("stats say %d partitions lost segments, want %d", st.Partitions, parts)
	}
	// Later passes take turns and finish the work; what they report adds
	// up to what went.
	total := st.Frames
	for i := 0; !st.Complete; i++ {
		if i == 10 {
			t.Fatalf("not complete after 10 more passes: %+v", st)
		}
		if st, err = svc.Sweep(ctx, now); err != nil {
			t.Fatal(err)
		}
		total += st.Frames
	}
	frames, segments := b.stored()
	if sum(frames) != 0 || segments != 0 || total != parts*segs*per {
		t.Fatalf("after the passes: %v messages, %d segments stored; passes reported %d removed, want %d",
			frames, segments, total, parts*segs*per)
	}
}

// Passes too short to reach every partition once still reach every one
// over a few passes: each starts where the previous one stopped.
func TestShortPassesTakeTurnsOverThePartitions(t *testing.T) {
	const parts, segs, per = 16, 4, 5
	b := newBacklog(t, parts, segs, per)
	ctx := context.Background()
	svc := retention.New(b.st, retention.Config{Interval: -1, LeaseInterval: -1, Clock: b.clock,
		PassTime: 5 * time.Second, YieldRatio: -1, Limits: store.EvictLimits{Segments: 1},
		Logger: slog.New(slog.DiscardHandler), OnOp: func(retention.Stats) { b.clock.Advance(time.Second) }})
	now := b.clock.Now()
	for range 4 { // 4 passes of 5 ops: 20 ops for 16 partitions
		if _, err := svc.Sweep(ctx, now); err != nil {
			t.Fatal(err)
		}
	}
	frames, _ := b.stored()
	for p, n := range frames {
		if n == segs*per {
			t.Errorf("partition %s untouched after 4 passes of 5 ops: %v", partName(p), frames)
		}
	}
}

// logLines keeps the records a logger receives.
type logLines struct {
	mu    sync.Mutex
	lines []map[string]any
}

func (l *logLines) Enabled(context.Context, slog.Level) bool { return true }
func (l *logLines) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logLines) WithGroup(string) slog.Handler            { return l }
func (l *logLines) Handle(_ context.Context, r slog.Record) error {
	m := map[string]any{"msg": r.Message}
	r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.Any(); return true })
	l.mu.Lock()
	l.lines = append(l.lines, m)
	l.mu.Unlock()
	return nil
}

// What a sweep returns and logs is what it removed, counted in the file
// with sqlite3, also when it is canceled in the middle of a partition (a
// shutdown), and when it stops at its time.
func TestSweepTotalsAreWhatWasRemoved(t *testing.T) {
	const parts, segs, per = 4, 12, 7
	for _, stop := range []string{"canceled", "out of time"} {
		t.Run(stop, func(t *testing.T) {
			b := newBacklog(t, parts, segs, per)
			before, segsBefore := b.stored()
			log := &logLines{}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ops := 0
			svc := retention.New(b.st, retention.Config{Interval: -1, LeaseInterval: -1, Clock: b.clock,
				PassTime: time.Minute, YieldRatio: -1, Limits: store.EvictLimits{Segments: 3},
				Logger: slog.New(log), OnOp: func(retention.Stats) {
					// 3 segments an op: the 7th op is in the middle of the
					// third partition's second round.
					if ops++; ops == 7 {
						if stop == "canceled" {
							cancel()
						} else {
							b.clock.Advance(time.Minute)
						}
					}
				}})
			st, err := svc.Sweep(ctx, b.clock.Now())
			if stop == "canceled" && !errors.Is(err, context.Canceled) {
				t.Fatalf("canceled sweep: err %v", err)
			}
			if stop != "canceled" && err != nil {
				t.Fatal(err)
			}
			after, segsAfter := b.stored()
			removed := sum(before) - sum(after)
			if removed == 0 || removed == sum(before) {
				t.Fatalf("the sweep removed %d of %d messages: the test wants it stopped in the middle", removed, sum(before))
			}
			if st.Frames != removed || int64(st.Segments) != segsBefore-segsAfter || st.Complete {
				t.Errorf("sweep returned %d messages, %d segments, complete %v; the file lost %d messages, %d segments",
					st.Frames, st.Segments, st.Complete, removed, segsBefore-segsAfter)
			}
			log.mu.Lock()
			defer log.mu.Unlock()
			var logged, loggedSegs int64
			for _, m := range log.lines {
				if m["msg"] == "retention sweep" && m["messages"] != nil {
					logged += m["messages"].(int64)
					loggedSegs += m["segments"].(int64)
				}
			}
			if logged != removed || loggedSegs != segsBefore-segsAfter {
				t.Errorf("the log says %d messages, %d segments removed; the file lost %d, %d (lines %v)",
					logged, loggedSegs, removed, segsBefore-segsAfter, log.lines)
			}
		})
	}
}

// Pushes answered while a sweep runs, to the partitions it sweeps and to
// another queue, are all stored and delivered, each once; what the sweep
// removed is exactly the expired backlog.
func TestPushesDuringASweepAreKept(t *testing.T) {
	const parts, segs, per = 8, 40, 25
	b := newBacklog(t, parts, segs, per)
	ctx := context.Background()
	svc := retention.New(b.st, retention.Config{Interval: -1, LeaseInterval: -1, Clock: b.clock,
		PassTime: -1, YieldRatio: -1, Limits: store.EvictLimits{Segments: 2}, Logger: slog.New(slog.DiscardHandler)})
	now := b.clock.Now()
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		pushed = map[string]bool{} // queue/txn -> answered
		done   = make(chan struct{})
	)
	for w := range 2 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-done:
					if i > 20 {
						return
					}
				default:
				}
				q := "old"
				if i%2 == 1 {
					q = "live"
				}
				items := make([]combtype.PushItem, 3)
				for k := range items {
					items[k] = combtype.PushItem{Queue: q, Partition: partName((i + k) % parts),
						TxnID: fmt.Sprintf("new-%d-%d-%d", w, i, k), Payload: []byte(`{"new":true}`)}
				}
				res, err := b.st.Push(ctx, "", items)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for k, r := range res {
					if r.Status != "queued" {
						t.Errorf("push %s: %+v", items[k].TxnID, r)
					}
					pushed[q+"/"+items[k].TxnID] = true
				}
				mu.Unlock()
			}
		})
	}
	st, err := svc.Sweep(ctx, now)
	close(done)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if st.Frames != parts*segs*per || !st.Complete {
		t.Fatalf("sweep removed %d messages (complete %v), want the %d expired", st.Frames, st.Complete, parts*segs*per)
	}
	got := map[string]int{}
	for _, q := range []string{"old", "live"} {
		for {
			res, err := b.st.Pop(ctx, "", combtype.PopRequest{Queue: q, Group: "check", Batch: 1000, Partitions: parts, AutoAck: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Messages) == 0 {
				break
			}
			for _, m := range res.Messages {
				if strings.HasPrefix(m.TxnID, "old-") {
					t.Fatalf("expired message %s delivered after the sweep", m.TxnID)
				}
				got[q+"/"+m.TxnID]++
			}
		}
	}
	for k := range pushed {
		if got[k] != 1 {
			t.Errorf("answered push %s delivered %d times", k, got[k])
		}
	}
	if len(got) != len(pushed) {
		t.Errorf("%d messages delivered, %d pushes answered", len(got), len(pushed))
	}
	// The dedup keys of the expired messages went with them; those of the
	// new ones stayed.
	if n := b.sql(`SELECT COUNT(*) FROM txids`)[0]; n != int64(len(pushed)) {
		t.Errorf("%d dedup keys stored, want the %d of the new messages", n, len(pushed))
	}
}
