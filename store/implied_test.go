package store

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
	"github.com/comb-broker/comb/seek"
)

// impliedOf reads the committed offset of group on every partition of
// queue as the readers do (committedExpr), by partition name.
func impliedOf(t *testing.T, s *Store, queue, group string) map[string]int64 {
	t.Helper()
	rows, err := s.r.QueryContext(context.Background(), `SELECT p.name, `+committedExpr+` FROM partitions p
		JOIN queues q ON q.id = p.queue_id
		LEFT JOIN cursors c ON c.partition_id = p.id AND c.group_name = ?2
		LEFT JOIN subscriptions s ON s.queue_id = p.queue_id AND s.group_name = ?2
		WHERE q.name = ?1`, queue, group)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var v int64
		if err := rows.Scan(&name, &v); err != nil {
			t.Fatal(err)
		}
		out[name] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// ruleState is what seek sees of p now, with the landing of at if set.
func ruleState(t *testing.T, s *Store, p *combtype.Partition, at *time.Time) seek.State {
	t.Helper()
	st := seekStateOf(p)
	if at != nil {
		l, err := landing(context.Background(), s.r, p, micros(*at))
		if err != nil {
			t.Fatal(err)
		}
		st.Landing = l.seg()
	}
	return st
}

func partitionsOf(t *testing.T, s *Store, queue string) []*combtype.Partition {
	t.Helper()
	parts, err := queryPartitions(context.Background(), s.r, `SELECT `+prefixed("p.", partitionColumns)+`
		FROM partitions p JOIN queues q ON q.id = p.queue_id WHERE q.name = ? ORDER BY p.id`, queue)
	if err != nil {
		t.Fatal(err)
	}
	return parts
}

// TestImpliedCursorsLieWhereSeedingPutThem: a group's missing cursors are
// read where seeding at its first pop would have written them (seek.Seed
// on the partition as it was then), for each mode, over random partitions
// that are pushed to, cut by retention and created after the group
// subscribed, with the clock stepped back in between; and the SQL the
// readers use agrees with the pure rule, seek.Implied, exactly.
func TestImpliedCursorsLieWhereSeedingPutThem(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 25))
		t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
		c := clock.NewManual(t0)
		s := openTestStore(t, c)
		push := func(prefix string, n int) {
			var items []combtype.PushItem
			for range n {
				p := fmt.Sprintf("%s%02d", prefix, rng.IntN(12))
				for range 1 + rng.IntN(3) {
					items = append(items, combtype.PushItem{Queue: "q", Partition: p, Payload: []byte(`1`)})
				}
			}
			if _, err := s.Push(ctx, "", items); err != nil {
				t.Fatal(err)
			}
		}
		evict := func() {
			for _, p := range partitionsOf(t, s, "q") {
				if rng.IntN(4) == 0 && p.LastOffset >= 0 {
					if _, err := s.EvictPrefix(ctx, p.ID, rng.Int64N(p.LastOffset+1), c.Now(), EvictLimits{}); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		for range 6 {
			push("a", 8)
			c.Advance(time.Minute)
		}
		evict()
		between := t0.Add(time.Duration(1+rng.IntN(4)) * time.Minute)
		future := c.Now().Add(30 * time.Minute)
		type group struct {
			name   string
			req    combtype.PopRequest
			start  seek.Start
			seeded map[string]int64 // what seeding wrote at the first pop
			head   map[string]int64 // last offsets then
		}
		groups := []*group{
			{name: "all", req: combtype.PopRequest{SubscriptionMode: "all"}},
			{name: "new", req: combtype.PopRequest{SubscriptionMode: "new"}, start: seek.Start{End: true}},
			{name: "between", req: combtype.PopRequest{SubscriptionFrom: between.Format(time.RFC3339Nano)}, start: seek.Start{Time: &between}},
			{name: "future", req: combtype.PopRequest{SubscriptionFrom: future.Format(time.RFC3339Nano)}, start: seek.Start{Time: &future}},
		}
		for _, g := range groups {
			g.seeded, g.head = map[string]int64{}, map[string]int64{}
			for _, p := range partitionsOf(t, s, "q") {
				st := ruleState(t, s, p, g.start.Time)
				g.seeded[p.Name], g.head[p.Name] = seek.Seed(g.start, &st), p.LastOffset
			}
			// A pop of a partition that does not exist subscribes the
			// group and claims nothing.
			req := g.req
			req.Queue, req.Group, req.Partition = "q", g.name, "none"
			if _, err := s.Pop(ctx, "", req); err != nil {
				t.Fatal(err)
			}
			push("a", 3)
		}
		// The clock steps back, then forwards past the future time.
		c.Set(t0.Add(-time.Hour))
		push("a", 6)
		push("b", 6) // partitions created after every registration
		evict()
		c.Set(future.Add(time.Minute))
		push("a", 4)
		push("b", 4)
		var rows int
		if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM cursors`).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		if rows != 0 {
			t.Fatalf("%d cursor rows written by pops that claimed nothing", rows)
		}
		for _, g := range groups {
			got := impliedOf(t, s, "q", g.name)
			for _, p := range partitionsOf(t, s, "q") {
				seeded, existed := g.seeded[p.Name]
				head, ok := g.head[p.Name]
				if !existed {
					// Met later: from its start, or from a time still to come
					// when the group subscribed (after_partition unset).
					var start seek.Start
					if g.name == "future" {
						start.Time = g.start.Time
					}
					st := ruleState(t, s, p, start.Time)
					seeded, head = seek.Seed(start, &st), -1
				} else if !ok {
					head = -1
				}
				st := ruleState(t, s, p, g.start.Time)
				if want := nextOffset(seeded, p.LogStart); nextOffset(got[p.Name], p.LogStart) != want {
					t.Errorf("seed %d, group %s, %s (log_start %d, last %d): read at %d, seeding put it at %d",
						seed, g.name, p.Name, p.LogStart, p.LastOffset, got[p.Name], seeded)
				}
				if existed {
					if rule := seek.Implied(g.start, head, &st); got[p.Name] != rule {
						t.Errorf("seed %d, group %s, %s: SQL reads %d, seek.Implied says %d", seed, g.name, p.Name, got[p.Name], rule)
					}
				}
			}
		}
	}
}

// TestANewGroupsLagIsRightWithoutCursorRows: the lag of a group that has
// claimed nothing, summed and listed, is what its subscription implies,
// with no cursor row written.
func TestANewGroupsLagIsRightWithoutCursorRows(t *testing.T) {
	ctx := context.Background()
	c := clock.NewManual(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	s := openTestStore(t, c)
	pushPartitions(t, s, "q", "p", 50, 3)
	for _, mode := range []string{"all", "new"} {
		if _, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: mode, Partition: "none", SubscriptionMode: mode}); err != nil {
			t.Fatal(err)
		}
	}
	pushPartitions(t, s, "q", "p", 20, 2) // p0..p19 get two more each
	var rows int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM cursors`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 0 {
		t.Fatalf("%d cursor rows, want none", rows)
	}
	want := map[string]int64{"all": 50*3 + 20*2, "new": 20 * 2}
	for group, lag := range want {
		n, err := s.Backlog(ctx, "", "q", group)
		if err != nil {
			t.Fatal(err)
		}
		if n != lag {
			t.Errorf("group %s: backlog %d, want %d", group, n, lag)
		}
	}
	sums, err := s.Groups(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, g := range sums {
		if lag, ok := want[g.Group]; ok {
			seen++
			if g.TotalLag != lag || g.Cursors != 50 {
				t.Errorf("group %s: listed with lag %d over %d partitions, want %d over 50", g.Group, g.TotalLag, g.Cursors, lag)
			}
		}
	}
	if seen != len(want) {
		t.Errorf("groups listed %+v, want both groups", sums)
	}
	lags, err := s.Group(ctx, "", "new")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, l := range lags {
		total += l.OffsetLag
	}
	if len(lags) != 50 || total != want["new"] {
		t.Errorf("group new: %d partitions with lag %d, want 50 with %d", len(lags), total, want["new"])
	}
}

// TestSegmentSequenceNeverFallsBelowARegistration: a group subscribed to
// new messages reads where a partition stood by segment ids. The newest
// segments deleted with their queue, SQLite would hand their ids out
// again after a restart, below the group's registration, and the group
// would take the messages pushed since for old ones and skip them.
func TestSegmentSequenceNeverFallsBelowARegistration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "comb.db")
	s, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	push := func(s *Store, queue string, n int) {
		items := make([]combtype.PushItem, n)
		for i := range items {
			items[i] = combtype.PushItem{Queue: queue, Partition: fmt.Sprint("p", i%3), Payload: []byte(`1`)}
		}
		if _, err := s.Push(ctx, "", items); err != nil {
			t.Fatal(err)
		}
	}
	push(s, "a", 6)
	push(s, "b", 30) // the highest segment ids
	if _, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "a", Group: "g", SubscriptionMode: "new"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteQueue(ctx, "", "b"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	push(s, "a", 3)
	got := 0
	for range 5 {
		res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "a", Group: "g", Batch: 10, AutoAck: true})
		if err != nil {
			t.Fatal(err)
		}
		got += len(res.Messages)
	}
	if got != 3 {
		t.Fatalf("the group subscribed to new messages got %d of the 3 pushed after it", got)
	}
}

// TestASeededSubscriptionKeepsWorking: a database whose group subscribed
// before lazy cursors has a row on every partition that existed then and
// no registration (start_seq NULL). Its rows are read as they are, and a
// partition created later starts from its oldest message, as before.
func TestASeededSubscriptionKeepsWorking(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, clock.NewManual(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)))
	pushPartitions(t, s, "q", "p", 3, 4)
	if _, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "g", Partition: "none", SubscriptionMode: "new"}); err != nil {
		t.Fatal(err)
	}
	// What seeding wrote: the registration without start_*, a row at the
	// end of every partition.
	if err := s.submit(ctx, &writeOp{apply: func(w *wtx) error {
		if _, err := w.ExecContext(w.ctx, `UPDATE subscriptions SET start_mode = NULL, start_from = NULL,
			start_seq = NULL, start_partition = NULL`); err != nil {
			return err
		}
		_, err := w.ExecContext(w.ctx, `INSERT INTO cursors (partition_id, group_name, committed, created_at)
			SELECT id, 'g', last_offset, 0 FROM partitions`)
		return err
	}}); err != nil {
		t.Fatal(err)
	}
	pushPartitions(t, s, "q", "p", 4, 2) // two more on p0..p2, and p3 created
	lags, err := s.Group(ctx, "", "g")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]int64{}
	for _, l := range lags {
		byName[l.Partition] = l.OffsetLag
	}
	want := map[string]int64{"p0000000": 2, "p0000001": 2, "p0000002": 2, "p0000003": 2}
	if !maps.Equal(byName, want) {
		t.Fatalf("lag by partition %v, want %v", byName, want)
	}
	got := 0
	for range 6 {
		res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "g", Batch: 10, AutoAck: true})
		if err != nil {
			t.Fatal(err)
		}
		got += len(res.Messages)
	}
	if got != 8 {
		t.Fatalf("the group got %d messages, want the 8 pushed after it subscribed", got)
	}
}

// TestCheckFindsSegmentsOutOfCommitOrder: the partition's head when a
// group subscribed is read by segment id, so check reports a partition
// whose segment ids do not grow with the offset (a file edited by hand).
func TestCheckFindsSegmentsOutOfCommitOrder(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "comb.db")
	s, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", Partition: "p", Payload: []byte(`1`)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	rep, err := Check(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		t.Errorf("a file as comb wrote it: %+v", f)
	}
	// The newer segment takes an id below the older one's.
	out, err := exec.Command("sqlite3", path, `UPDATE segments SET id = -5 WHERE base_offset = 1`).CombinedOutput()
	if err != nil {
		t.Fatalf("sqlite3: %v %s", err, out)
	}
	if rep, err = Check(ctx, path); err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 1 || rep.Findings[0].Check != "sequence" {
		t.Fatalf("findings %+v, want one of segments out of commit order", rep.Findings)
	}
}
