package store

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
)

// TestClaimWaveIsEachClaimAlone: the claims of many groups woken at once,
// fused into one wave, give each group exactly what its own claim applied
// alone gives, and leave the same cursors and subscriptions. Two stores go
// through the same history; then the same woken pops reach each writer in
// one batch, fused in one store and one by one in the other. The groups
// stand where a claim may differ: first contacts from the oldest message
// and from now, a live lease on one partition, an expired lease (a
// redelivery), a cursor moved on by acks, leases on every partition (a
// wake time, no message), pops of one group several times in the wave
// (partitions take turns), a named partition, a partition whose pending
// messages are all deleted, a partition the group never met, and the
// queue-mode group. Cursors are lazy (implied.go): a wave, as a claim
// alone, writes the rows of the partitions it claims and no other, and
// records the same registration (start_*) in the subscription.
func TestClaimWaveIsEachClaimAlone(t *testing.T) {
	type pop struct {
		name string
		req  combtype.PopRequest
	}
	var wake []pop
	add := func(name string, n int, req combtype.PopRequest) {
		for range n {
			wake = append(wake, pop{name, req})
		}
	}
	for i := range 6 {
		add(fmt.Sprintf("fresh-%d", i), 1, combtype.PopRequest{Group: fmt.Sprintf("fresh-%d", i), Batch: 1 + i, Partitions: 1 + i%3})
	}
	add("from-now", 1, combtype.PopRequest{Group: "from-now", SubscriptionMode: "new"})
	add("leased", 1, combtype.PopRequest{Group: "leased", Batch: 2})
	add("expired", 1, combtype.PopRequest{Group: "expired", Partition: "b", Batch: 5})
	add("acked", 1, combtype.PopRequest{Group: "acked", Batch: 10})
	add("all-leased", 1, combtype.PopRequest{Group: "all-leased", Batch: 10, Partitions: 5})
	add("twice", 3, combtype.PopRequest{Group: "twice", Batch: 1})
	add("named", 2, combtype.PopRequest{Group: "named", Partition: "c", Batch: 5})
	add("deleted", 1, combtype.PopRequest{Group: "deleted", Partition: "d"})
	add("unmet", 1, combtype.PopRequest{Group: "unmet", Batch: 10, Partitions: 5})
	add("queue-mode", 2, combtype.PopRequest{Batch: 2})
	for i := range wake {
		wake[i].req.Queue = "q"
	}

	type outcome struct {
		results    map[string][]string // by pop name, sorted
		cursors    []string
		subs       []string
		statements int64
		waved      int64
	}
	// How the woken pops reach the writer: each queued by its pop
	// (PopWoken), fused in waves or not, or parked and handed to the
	// writer by the commit that changed their queue (Park).
	type mode struct{ waves, handed bool }
	run := func(m mode) outcome {
		waves := m.waves
		ctx := context.Background()
		clk := clock.NewManual(time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC))
		s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "comb.db"), Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		s.SetClaimWaves(waves)
		push := func(partition string, n int) {
			t.Helper()
			var items []combtype.PushItem
			for i := range n {
				items = append(items, combtype.PushItem{Queue: "q", Partition: partition, TxnID: fmt.Sprintf("%s%d", partition, i),
					Payload: fmt.Appendf(nil, `"%s%d"`, partition, i)})
			}
			if _, err := s.Push(ctx, "", items); err != nil {
				t.Fatal(err)
			}
		}
		popNow := func(req combtype.PopRequest) *combtype.PopResult {
			t.Helper()
			req.Queue = "q"
			res, err := s.Pop(ctx, "", req)
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		push("a", 6)
		push("b", 4)
		push("c", 2)
		push("d", 2)
		// All of d is deleted: a claim there first moves past it.
		parts, err := s.Partitions(ctx, mustQueue(t, s, "q").ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range parts {
			if p.Name == "d" {
				for _, txn := range []string{"d0", "d1"} {
					if found, err := s.DeleteMessage(ctx, "", p.UUID, txn); err != nil || !found {
						t.Fatalf("delete %s: %v %v", txn, found, err)
					}
				}
			}
		}
		if res := popNow(combtype.PopRequest{Group: "expired", Partition: "b", Batch: 2}); len(res.Messages) != 2 {
			t.Fatalf("expired: %d messages", len(res.Messages))
		}
		popNow(combtype.PopRequest{Group: "unmet", Batch: 100, Partitions: 5})
		clk.Advance(6 * time.Minute) // the leases of "expired" and "unmet" run out
		if res := popNow(combtype.PopRequest{Group: "leased", Partition: "a", Batch: 2}); len(res.Messages) != 2 {
			t.Fatalf("leased: %d messages", len(res.Messages))
		}
		res := popNow(combtype.PopRequest{Group: "acked", Partition: "a", Batch: 3})
		var acks []combtype.AckItem
		for _, m := range res.Messages {
			acks = append(acks, combtype.AckItem{TxnID: m.TxnID, PartitionID: m.PartitionID, LeaseID: res.LeaseID})
		}
		if _, err := s.Ack(ctx, "", "acked", acks); err != nil {
			t.Fatal(err)
		}
		popNow(combtype.PopRequest{Group: "all-leased", Batch: 100, Partitions: 5})
		popNow(combtype.PopRequest{Group: "twice", Partition: "b"}) // its turn starts after b
		// A partition "unmet" never met: it has no cursor there.
		push("e", 1)
		clk.Advance(time.Second)

		type got struct {
			name string
			res  *combtype.PopResult
			err  error
		}
		out := make(chan got, len(wake))
		var statements int64
		if m.handed {
			changed, stop := s.Watch("", "q")
			defer stop()
			parked := make([]*ParkedPop, len(wake))
			for i, p := range wake {
				if parked[i] = s.Park("", &p.req, changed, time.Hour); parked[i] == nil {
					t.Fatalf("%s: not parked", p.name)
				}
			}
			statements = s.wstatements.Load()
			// A commit that changes q and nothing else hands them over.
			if err := s.submit(ctx, &writeOp{apply: func(w *wtx) error { w.touch("", "q"); return nil }}); err != nil {
				t.Fatal(err)
			}
			// Queued after them, this commits with or after their claims.
			if err := s.submit(ctx, &writeOp{apply: func(*wtx) error { return nil }}); err != nil {
				t.Fatal(err)
			}
			for i, p := range parked {
				select {
				case done := <-p.Done():
					res, claimed, err := p.Result(done)
					if !claimed {
						t.Fatalf("%s: no claim made", wake[i].name)
					}
					out <- got{wake[i].name, res, err}
				default:
					// Nothing due, nor a time to look again: parked again.
					if !p.Leave() {
						t.Fatalf("%s: neither answered nor parked again", wake[i].name)
					}
					out <- got{wake[i].name, &combtype.PopResult{Group: p.req.Group}, nil}
				}
			}
		} else {
			release := holdWriter(t, s)
			var wg sync.WaitGroup
			for _, p := range wake {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res, err := s.PopWoken(ctx, "", p.req)
					out <- got{p.name, res, err}
				}()
			}
			waitPending(t, s, len(wake))
			statements = s.wstatements.Load()
			release()
			wg.Wait()
		}
		close(out)
		o := outcome{results: map[string][]string{}}
		for g := range out {
			if g.err != nil {
				t.Fatalf("%s: %v", g.name, g.err)
			}
			o.results[g.name] = append(o.results[g.name], describePop(g.res))
		}
		o.statements = s.wstatements.Load() - statements
		o.waved = s.Stats().WaveClaims.Load()
		for _, rs := range o.results {
			slices.Sort(rs)
		}
		o.cursors = dumpRows(t, s, `SELECT c.group_name, p.name, c.committed, c.lease_id IS NOT NULL, c.lease_from, c.lease_to,
			c.lease_expires_at, c.retry_count, c.redelivery_count, c.total_consumed, c.created_at
			FROM cursors c JOIN partitions p ON p.id = c.partition_id ORDER BY c.group_name, p.name`)
		o.subs = dumpRows(t, s, `SELECT group_name, mode, from_time, created_at, after_partition,
			start_mode, start_from, start_seq, start_partition FROM subscriptions ORDER BY group_name`)
		return o
	}
	alone, fused, handed := run(mode{}), run(mode{waves: true}), run(mode{waves: true, handed: true})
	for _, other := range []struct {
		name string
		o    outcome
	}{{"in a wave", fused}, {"handed to the writer", handed}} {
		for _, p := range wake {
			if a, f := alone.results[p.name], other.o.results[p.name]; !slices.Equal(a, f) {
				t.Errorf("%s: alone %q, %s %q", p.name, a, other.name, f)
			}
		}
		if !slices.Equal(alone.cursors, other.o.cursors) {
			t.Errorf("cursors differ:\nalone %s\n%s %s", strings.Join(alone.cursors, "\n      "), other.name, strings.Join(other.o.cursors, "\n      "))
		}
		if !slices.Equal(alone.subs, other.o.subs) {
			t.Errorf("subscriptions differ:\nalone %q\n%s %q", alone.subs, other.name, other.o.subs)
		}
		// The wave was taken, for every claim: none had to go alone.
		if other.o.waved != int64(len(wake)) {
			t.Errorf("%d of %d claims fused %s", other.o.waved, len(wake), other.name)
		}
	}
	if alone.waved != 0 {
		t.Errorf("%d claims fused with waves off", alone.waved)
	}
	if fused.statements >= alone.statements {
		t.Errorf("%d statements in a wave, %d one by one", fused.statements, alone.statements)
	}
	t.Logf("statements for %d claims: %d one by one, %d fused, %d handed; e.g. %q", len(wake), alone.statements, fused.statements,
		handed.statements, fused.results["leased"])
}

// describePop is what a pop answered, without what differs by store (ids).
func describePop(res *combtype.PopResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "lease=%v claimed=%d partition=%q evicted=%d wake=%v msgs=[", res.LeaseID != "", res.PartitionsClaimed,
		res.Partition, res.FramesEvicted, res.WakeAt.UTC().Format(time.RFC3339Nano))
	for _, m := range res.Messages {
		fmt.Fprintf(&b, " %s/%s@%d retry=%d lease=%v %s", m.Partition, m.TxnID, m.Offset, m.RetryCount, m.LeaseID == res.LeaseID, m.Payload)
	}
	return b.String() + " ]"
}

func dumpRows(t *testing.T, s *Store, query string) []string {
	t.Helper()
	rows, err := s.rdb.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprint(vals...))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func mustQueue(t *testing.T, s *Store, name string) *combtype.Queue {
	t.Helper()
	q, err := s.Queue(context.Background(), "", name)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestWokenClaimIsDurableWhenItMaySubscribe: a woken pop's claim is lazy
// (committed without a sync) only while its group is known to be
// subscribed; once the group's subscription or its queue is deleted, the
// claim that subscribes it again is durable, as Pop makes it.
func TestWokenClaimIsDurableWhenItMaySubscribe(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "comb.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	req := combtype.PopRequest{Queue: "q", Group: "g"}
	lazy := func(what string, want bool) {
		t.Helper()
		before := s.Stats().LazyCommits.Load()
		if _, err := s.PopWoken(ctx, "", req); err != nil {
			t.Fatal(err)
		}
		if got := s.Stats().LazyCommits.Load() > before; got != want {
			t.Errorf("%s: lazy %v, want %v", what, got, want)
		}
	}
	if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", Payload: []byte(`1`)}}); err != nil {
		t.Fatal(err)
	}
	lazy("first contact", false)
	lazy("subscribed", true)
	if _, err := s.DeleteGroup(ctx, "", "g", "q", true); err != nil {
		t.Fatal(err)
	}
	lazy("after the group's delete", false)
	lazy("subscribed again", true)
	if _, err := s.DeleteQueue(ctx, "", "q"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", Payload: []byte(`2`)}}); err != nil {
		t.Fatal(err)
	}
	lazy("after the queue's delete", false)
	lazy("on the new queue", true)
	// A pop that looked on a reader and found the group subscribed
	// makes the woken claims after it lazy too.
	if _, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "h"}); err != nil {
		t.Fatal(err)
	}
	req.Group = "h"
	lazy("after Pop", true)
}

// TestClaimWaveWritesTheRowsOfSpansItDidNotRead: a group's first claim
// writes the cursor row of every partition it chose, also those whose
// messages did not fit in the reply (past MaxPopBytes): in a wave as
// alone. A wave writes the rows of what it leases with their leases, and
// the others on their own; the cursors and answers are the same.
func TestClaimWaveWritesTheRowsOfSpansItDidNotRead(t *testing.T) {
	const groups = 3
	run := func(waves bool) (results, cursors []string) {
		ctx := context.Background()
		s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "comb.db"),
			Clock: clock.NewManual(time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC))})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		s.SetClaimWaves(waves)
		big := append(append([]byte(`"`), make([]byte, combtype.MaxPopBytes*5/8)...), '"')
		for i := range big[1 : len(big)-1] {
			big[1+i] = 'x'
		}
		for _, p := range []string{"x", "y"} {
			if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", Partition: p, TxnID: p, Payload: big}}); err != nil {
				t.Fatal(err)
			}
		}
		release := holdWriter(t, s)
		out := make(chan string, groups)
		var wg sync.WaitGroup
		for i := range groups {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := s.PopWoken(ctx, "", combtype.PopRequest{Queue: "q", Group: fmt.Sprintf("g%d", i), Batch: 2, Partitions: 2})
				if err != nil {
					t.Error(err)
					return
				}
				out <- fmt.Sprintf("g%d %d %s", i, len(res.Messages), res.Partition)
			}()
		}
		waitPending(t, s, groups)
		release()
		wg.Wait()
		close(out)
		for r := range out {
			results = append(results, r)
		}
		slices.Sort(results)
		cursors = dumpRows(t, s, `SELECT c.group_name, p.name, c.committed, c.lease_id IS NOT NULL, c.lease_from, c.lease_to,
			c.lease_expires_at, c.redelivery_count, c.created_at FROM cursors c JOIN partitions p ON p.id = c.partition_id
			ORDER BY c.group_name, p.name`)
		if waved := s.Stats().WaveClaims.Load(); waves && waved != groups {
			t.Errorf("%d of %d claims fused", waved, groups)
		}
		return results, cursors
	}
	aloneRes, aloneCur := run(false)
	waveRes, waveCur := run(true)
	if !slices.Equal(aloneRes, waveRes) {
		t.Errorf("answers differ:\nalone %q\nwave  %q", aloneRes, waveRes)
	}
	if !slices.Equal(aloneCur, waveCur) {
		t.Errorf("cursors differ:\nalone %q\nwave  %q", aloneCur, waveCur)
	}
	if len(waveCur) != 2*groups {
		t.Errorf("%d cursor rows, want %d (both partitions of each group): %q", len(waveCur), 2*groups, waveCur)
	}
}
