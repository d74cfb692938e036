package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
)

// enumeratedLag is the tenant's lag summary as summarise read it before
// sumLag: one row per position, implied ones included, every one added.
// It is the reference sumLag is held to.
func enumeratedLag(t testing.TB, s *Store, tenant string, now time.Time) (offsets, ages lagSummer) {
	t.Helper()
	rows, err := s.r.QueryContext(context.Background(), `SELECT `+groupLagExpr+`, `+groupOldestExpr+`
		FROM `+groupPositionsIn(tenantQueues("?1"), ""), tenant)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	offsets, ages = lagSummer{whole: true}, lagSummer{}
	for rows.Next() {
		var lag int64
		var oldest sql.NullInt64
		if err := rows.Scan(&lag, &oldest); err != nil {
			t.Fatal(err)
		}
		offsets.add(float64(lag))
		age := 0.0
		if oldest.Valid {
			age = max(float64(micros(now)-oldest.Int64)/1e6, 0)
		}
		ages.add(age)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return offsets, ages
}

// sameLag reports how got differs from want: counts, Min, Max and Median
// exactly; Avg to the rounding of a float sum taken in another order
// (offsets are whole, so their sum is exact either way).
func sameLag(what string, got, want *lagSummer) error {
	if got.n != want.n {
		return fmt.Errorf("%s: %d positions, want %d", what, got.n, want.n)
	}
	g, w := got.summary(), want.summary()
	if g.Min != w.Min || g.Max != w.Max || g.Median != w.Median ||
		math.Abs(g.Avg-w.Avg) > 1e-9*max(math.Abs(w.Avg), 1) {
		return fmt.Errorf("%s: %+v, want %+v", what, g, w)
	}
	return nil
}

// TestLagSumIsTheEnumeration: the lag summary read from what may lag,
// the rest counted, is the one that enumerating every position gives,
// over random stores: partitions written before and after groups of
// every mode subscribe, partitions created later, cursor rows from pops
// and seeks, heads cut by retention, a subscription moved to a time,
// one from the very time of a push, the clock stepped back, and a second
// tenant beside.
func TestLagSumIsTheEnumeration(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(8) {
		rng := rand.New(rand.NewPCG(seed, 26))
		t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
		c := clock.NewManual(t0)
		s := openTestStore(t, c)
		var pushed []time.Time // when each push was made
		push := func(tenant, queue, prefix string, n int) {
			pushed = append(pushed, c.Now())
			var items []combtype.PushItem
			for range n {
				p := fmt.Sprintf("%s%02d", prefix, rng.IntN(16))
				for range 1 + rng.IntN(3) {
					items = append(items, combtype.PushItem{Queue: queue, Partition: p, Payload: []byte(`1`)})
				}
			}
			if _, err := s.Push(ctx, tenant, items); err != nil {
				t.Fatal(err)
			}
			c.Advance(time.Duration(1+rng.IntN(30)) * time.Second)
		}
		evict := func(queue string) {
			for _, p := range partitionsOf(t, s, queue) {
				if rng.IntN(3) == 0 && p.LastOffset >= 0 {
					if _, err := s.EvictPrefix(ctx, p.ID, rng.Int64N(p.LastOffset+2), c.Now(), EvictLimits{}); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		pop := func(tenant, queue, group string, req combtype.PopRequest) {
			req.Queue, req.Group, req.AutoAck, req.Batch = queue, group, true, 1+rng.IntN(4)
			if rng.IntN(2) == 0 {
				req.Partition = fmt.Sprintf("a%02d", rng.IntN(16))
			}
			if _, err := s.Pop(ctx, tenant, req); err != nil {
				t.Fatal(err)
			}
		}
		check := func(when string) {
			t.Helper()
			now := c.Now()
			for _, tenant := range []string{"", "other"} {
				wantO, wantA := enumeratedLag(t, s, tenant, now)
				gotO, gotA, err := s.sumLag(ctx, tenant, now)
				if err != nil {
					t.Fatal(err)
				}
				if err := sameLag("offset lag", &gotO, &wantO); err != nil {
					t.Errorf("seed %d, tenant %q, %s: %v", seed, tenant, when, err)
				}
				if err := sameLag("time lag", &gotA, &wantA); err != nil {
					t.Errorf("seed %d, tenant %q, %s: %v", seed, tenant, when, err)
				}
			}
		}
		for range 4 {
			push("", "q", "a", 10)
			push("", "r", "a", 4)
			push("other", "q", "a", 6)
		}
		evict("q")
		check("before any group")
		past := c.Now().Add(-time.Duration(1+rng.IntN(90)) * time.Second)
		future := c.Now().Add(10 * time.Minute)
		groups := []struct {
			name string
			req  combtype.PopRequest
		}{
			{"all", combtype.PopRequest{SubscriptionMode: "all"}},
			{"all2", combtype.PopRequest{SubscriptionMode: "all"}},
			{"new", combtype.PopRequest{SubscriptionMode: "new"}},
			{"new2", combtype.PopRequest{SubscriptionMode: "new"}},
			{"past", combtype.PopRequest{SubscriptionFrom: past.Format(time.RFC3339Nano)}},
			{"future", combtype.PopRequest{SubscriptionFrom: future.Format(time.RFC3339Nano)}},
			// From the very time of a push: its partitions' newest
			// segments are at the time, not past it.
			{"at", combtype.PopRequest{SubscriptionFrom: pushed[rng.IntN(len(pushed))].Format(time.RFC3339Nano)}},
			{"", combtype.PopRequest{}}, // queue mode
		}
		for _, g := range groups {
			// A pop of a partition that does not exist subscribes the
			// group and claims nothing.
			req := g.req
			req.Queue, req.Group, req.Partition = "q", g.name, "none"
			if _, err := s.Pop(ctx, "", req); err != nil {
				t.Fatal(err)
			}
			if rng.IntN(2) == 0 {
				req.Queue = "r"
				if _, err := s.Pop(ctx, "", req); err != nil {
					t.Fatal(err)
				}
			}
			if rng.IntN(2) == 0 {
				push("", "q", "a", 3)
			}
		}
		if _, err := s.Pop(ctx, "other", combtype.PopRequest{Queue: "q", Group: "all", AutoAck: true, Batch: 2}); err != nil {
			t.Fatal(err)
		}
		check("subscribed")
		for range 3 {
			push("", "q", "a", 5)
			push("", "q", "b", 3) // partitions created after every registration
			for _, g := range groups {
				if rng.IntN(2) == 0 {
					pop("", "q", g.name, g.req)
				}
			}
		}
		check("popped")
		evict("q")
		check("evicted")
		// Seeks write cursor rows: to the end, to a time, to an offset.
		for _, g := range groups[:4] {
			var target combtype.SeekTarget
			switch rng.IntN(3) {
			case 0:
				target.ToEnd = true
			case 1:
				at := t0.Add(time.Duration(rng.IntN(200)) * time.Second)
				target.Time = &at
			default:
				off := int64(-1)
				target.Offset = &off
			}
			req := combtype.SeekRequest{Group: g.name, Queue: "q", Target: target}
			if ps := partitionsOf(t, s, "q"); rng.IntN(2) == 0 {
				req.Partition = ps[rng.IntN(len(ps))].Name
			}
			if _, err := s.Seek(ctx, "", req); err != nil && !errors.Is(err, combtype.ErrInvalid) {
				t.Fatal(err)
			}
		}
		check("sought")
		if _, err := s.UpdateSubscription(ctx, "", "new2", t0.Add(time.Duration(rng.IntN(120))*time.Second)); err != nil {
			t.Fatal(err)
		}
		c.Set(t0.Add(-time.Hour)) // the clock steps back
		push("", "q", "a", 4)
		push("", "q", "c", 4)
		check("moved and stepped back")
		c.Set(future.Add(time.Minute))
		push("", "q", "a", 4)
		push("", "q", "b", 4)
		evict("q")
		evict("r")
		check("past the future time")
	}
}

// TestWeightedAddIsRepeatedAdd: adding a figure w times at once keeps
// what w adds keep, below exactLagValues, across it and past it.
func TestWeightedAddIsRepeatedAdd(t *testing.T) {
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 27))
		var once, each lagSummer
		once.whole, each.whole = seed%2 == 0, seed%2 == 0
		for once.n < 3*exactLagValues {
			v := float64(rng.IntN(5000))
			if !once.whole {
				v = rng.Float64() * 900
			}
			w := int64(rng.IntN(4))
			if rng.IntN(50) == 0 {
				w = int64(rng.IntN(exactLagValues / 2))
			}
			once.addN(v, w)
			for range w {
				each.add(v)
			}
			if err := sameLag(fmt.Sprintf("seed %d, after %d", seed, once.n), &once, &each); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestTimestampGroupsLagReadsOnlyWhatWasWrittenFromTheirTime: the lag of
// a group subscribed from a time, on the partitions that existed when it
// subscribed, is read through partitions_queue_last_segment_at from the
// time on, not by walking every partition that existed then (about a
// second per such group at a million partitions).
func TestTimestampGroupsLagReadsOnlyWhatWasWrittenFromTheirTime(t *testing.T) {
	s := openTestStore(t, clock.NewManual(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)))
	plan := queryPlan(t, s, impliedLagQuery, "")
	const want = "USING INDEX partitions_queue_last_segment_at (queue_id=? AND last_segment_at>?)"
	if !slices.ContainsFunc(plan, func(d string) bool { return strings.Contains(d, want) }) {
		t.Errorf("no read of the partitions written from a time through its index:\n%s", strings.Join(plan, "\n"))
	}
}

// queryPlan is the steps of SQLite's plan for query, one a line.
func queryPlan(t *testing.T, s *Store, query string, args ...any) []string {
	t.Helper()
	var plan []string
	for _, step := range planSteps(t, s, query, args...) {
		plan = append(plan, step.detail)
	}
	return plan
}

// planStep is a row of EXPLAIN QUERY PLAN: parent 0 is an outermost step.
type planStep struct {
	id, parent int
	detail     string
}

func planSteps(t *testing.T, s *Store, query string, args ...any) []planStep {
	t.Helper()
	rows, err := s.rdb.Query(`EXPLAIN QUERY PLAN `+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var steps []planStep
	for rows.Next() {
		var step planStep
		var unused int
		if err := rows.Scan(&step.id, &step.parent, &unused, &step.detail); err != nil {
			t.Fatal(err)
		}
		steps = append(steps, step)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return steps
}
