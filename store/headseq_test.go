package store

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
)

// newGroupsBehindWrites opens a store with a queue of 10 partitions, one
// message each, read by groups consumer groups subscribed to new messages
// that have claimed nothing (no cursor rows), and then writes one segment
// to every partition segments times over.
func newGroupsBehindWrites(tb testing.TB, groups, segments int) *Store {
	tb.Helper()
	return groupsBetweenWrites(tb, groups, 1, segments, "new")
}

// groupsBetweenWrites opens a store with a queue of 10 partitions, writes
// one segment to each before times over, an hour apart from what follows,
// subscribes groups consumer groups with mode ("new", or "timestamp" from
// half an hour after the first writes) that claim nothing (no cursor
// rows), and writes one segment to each partition after times over.
func groupsBetweenWrites(tb testing.TB, groups, before, after int, mode string) *Store {
	tb.Helper()
	ctx := context.Background()
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	clk := clock.NewManual(start)
	s := openTestStore(tb, clk)
	round := func(r int) {
		clk.Advance(time.Millisecond)
		items := make([]combtype.PushItem, 0, 10)
		for p := range 10 {
			items = append(items, combtype.PushItem{Queue: "q", Partition: fmt.Sprintf("p%d", p),
				TxnID: fmt.Sprintf("t%d-%d", p, r), Payload: []byte(`1`)})
		}
		if _, err := s.Push(ctx, "", items); err != nil {
			tb.Fatal(err)
		}
	}
	for r := range before {
		round(r - before)
	}
	clk.Advance(time.Hour)
	from := ""
	if mode == "timestamp" {
		from = start.Add(30 * time.Minute).Format(time.RFC3339)
	}
	for g := range groups {
		res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: fmt.Sprintf("g%05d", g), Batch: 1,
			SubscriptionMode: mode, SubscriptionFrom: from})
		if err != nil || (res != nil && len(res.Messages) > 0) {
			tb.Fatal(err, res)
		}
	}
	for r := range after {
		round(r)
	}
	return s
}

// A group subscribed to new messages starts each partition it has no
// cursor row on at the partition's head when it subscribed. Found by
// walking back from the newest segment, that head cost every segment
// written since, for every such group and partition, in every listing,
// status and lag read, and in the claims; and where a group starting from
// a time starts, every segment before that time. Each walk must start at
// the nearest mark.
func TestTheHeadAtSubscriptionWalksFromAMark(t *testing.T) {
	s := newGroupsBehindWrites(t, 3, 20)
	ctx := context.Background()
	plan := queryPlan(t, s, `SELECT p.id, s.group_name, `+impliedExpr+`
		FROM partitions p JOIN subscriptions s ON s.queue_id = p.queue_id`)
	// Each twice: the head for a start from new messages and for one from
	// a time; the place of a time for a start from it and for partitions
	// met later.
	want := map[string]int{
		"SEARCH h USING INDEX segments_partition_offset (partition_id=? AND base_offset<?)":   2,
		"SEARCH m USING INDEX segments_partition_mark (partition_id=? AND id>?)":              2,
		"SEARCH l USING INDEX segments_partition_offset (partition_id=? AND base_offset>?)":   2,
		"SEARCH m USING INDEX segments_partition_mark_time (partition_id=? AND created_at<?)": 2,
	}
	for _, d := range plan {
		if _, ok := want[d]; ok {
			want[d]--
		} else if strings.Contains(d, " h ") || strings.Contains(d, " m ") || strings.Contains(d, " l ") {
			t.Errorf("unexpected read of segments: %q", d)
		}
	}
	for d, n := range want {
		if n != 0 {
			t.Errorf("%q: %d times more or less in the plan than wanted:\n%s", d, n, strings.Join(plan, "\n"))
		}
	}

	// And it is the head: every group, on every partition, is past the
	// first message and short of the 20 written since.
	msgs, _, err := s.ListMessages(ctx, "", combtype.MessageFilter{Queue: "q", Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 210 {
		t.Fatalf("%d messages listed, want 210", len(msgs))
	}
	for _, m := range msgs {
		want := 0
		if strings.HasSuffix(m.TxnID, "--1") {
			want = 3
		}
		if m.ConsumedBy != want || m.TotalGroups != 3 {
			t.Errorf("%s: %d of %d groups past it, want %d of 3", m.TxnID, m.ConsumedBy, m.TotalGroups, want)
		}
	}
}

// searchedSegments builds a file of four partitions written in segments
// of 1 to 150 messages, interleaved, by a clock that stands still, steps
// on and steps back; then cuts two by retention and sets a segment of two
// aside (a hole), as a damaged one is. It returns a plain connection to
// it.
func searchedSegments(t *testing.T) *sql.DB {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "comb.db")
	clk := clock.NewManual(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	s, err := Open(ctx, Options{Path: path, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for c := range 400 {
		switch rng.IntN(4) {
		case 0: // stands still
		case 1:
			clk.Advance(-time.Duration(rng.IntN(1000)) * time.Millisecond)
		default:
			clk.Advance(time.Duration(rng.IntN(1000)) * time.Millisecond)
		}
		var items []combtype.PushItem
		for p := range 4 {
			if rng.IntN(3) == 0 {
				continue
			}
			n := 1 + rng.IntN(150)
			if rng.IntN(2) == 0 {
				n = 1 + rng.IntN(4)
			}
			for i := range n {
				items = append(items, combtype.PushItem{Queue: "q", Partition: fmt.Sprintf("p%d", p),
					TxnID: fmt.Sprintf("c%d-%d-%d", c, p, i), Payload: []byte(`1`)})
			}
		}
		if len(items) == 0 {
			continue
		}
		if _, err := s.Push(ctx, "", items); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	// Retention on p1 and p3; a hole in p2 and at the end of p3.
	for _, q := range []string{
		`DELETE FROM segments WHERE partition_id = (SELECT id FROM partitions WHERE name = 'p1') AND base_offset < 900`,
		`UPDATE partitions SET log_start = (SELECT MIN(base_offset) FROM segments WHERE partition_id = partitions.id) WHERE name = 'p1'`,
		`DELETE FROM segments WHERE partition_id = (SELECT id FROM partitions WHERE name = 'p3')
			AND base_offset < (SELECT last_offset - 100 FROM partitions WHERE name = 'p3')`,
		`UPDATE partitions SET log_start = (SELECT MIN(base_offset) FROM segments WHERE partition_id = partitions.id) WHERE name = 'p3'`,
		`DELETE FROM segments WHERE id = (SELECT id FROM segments WHERE partition_id = (SELECT id FROM partitions WHERE name = 'p2')
			ORDER BY base_offset LIMIT 1 OFFSET 40)`,
		`DELETE FROM segments WHERE id = (SELECT MAX(id) FROM segments WHERE partition_id = (SELECT id FROM partitions WHERE name = 'p3'))`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	var marked, segments int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FILTER (WHERE `+segmentMarkExpr+`), COUNT(*) FROM segments m`).
		Scan(&marked, &segments); err != nil {
		t.Fatal(err)
	}
	if marked == 0 || marked == segments {
		t.Fatalf("%d of %d segments are marks: the data does not test the walks", marked, segments)
	}
	return db
}

// compareSearches runs query, whose rows are a partition's name, the
// value searched for, what the expression under test gives and what its
// definition gives, and fails on every row where the two differ.
func compareSearches(t *testing.T, db *sql.DB, query string, args ...any) {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var name string
		var v, got, want int64
		if err := rows.Scan(&name, &v, &got, &want); err != nil {
			t.Fatal(err)
		}
		n++
		if got != want {
			t.Errorf("%s at %d: %d, want %d", name, v, got, want)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 1000 {
		t.Fatalf("%d values compared", n)
	}
	t.Logf("%d values compared", n)
}

// headAtSeqExpr gives what its definition gives, the end of the newest
// segment with an id at most seq, for every seq.
func TestHeadAtSeqIsTheNewestSegmentAtOrBeforeIt(t *testing.T) {
	db := searchedSegments(t)
	compareSearches(t, db, `WITH RECURSIVE seq(v) AS (SELECT 0 UNION ALL SELECT v + 1 FROM seq
			WHERE v <= (SELECT MAX(id) FROM segments))
		SELECT p.name, seq.v, `+headAtSeqExpr("seq.v")+`,
			CASE WHEN p.last_segment_id <= seq.v THEN p.last_offset ELSE
			COALESCE((SELECT d.base_offset + d.frame_count - 1 FROM segments d
				WHERE d.partition_id = p.id AND d.id <= seq.v ORDER BY d.base_offset DESC LIMIT 1), -1) END
		FROM partitions p, seq`)
}

// placeTimeExpr gives what its definition gives, just below the first
// segment committed at or after t, for every commit time and the
// microseconds on either side of it.
func TestPlaceTimeIsTheFirstSegmentAtOrAfterIt(t *testing.T) {
	db := searchedSegments(t)
	compareSearches(t, db, `WITH ts(v) AS (SELECT DISTINCT created_at + d FROM segments, (SELECT -1 AS d UNION ALL SELECT 0 UNION ALL SELECT 1))
		SELECT p.name, ts.v, `+placeTimeExpr("ts.v")+`,
			CASE WHEN p.last_segment_at < ts.v THEN p.last_offset ELSE COALESCE(
				(SELECT MAX(d.base_offset - 1, p.log_start - 1) FROM segments d
					WHERE d.partition_id = p.id AND d.created_at >= ts.v ORDER BY d.base_offset LIMIT 1),
				p.last_offset) END
		FROM partitions p, ts`)
}

// segmentHoldingQuery reads what its definition reads, the commit time of
// the first segment ending at or after an offset, for every offset.
func TestSegmentHoldingIsTheFirstEndingAtOrAfterIt(t *testing.T) {
	db := searchedSegments(t)
	compareSearches(t, db, `WITH RECURSIVE o(v) AS (SELECT -1 UNION ALL SELECT v + 1 FROM o
			WHERE v <= (SELECT MAX(last_offset) FROM partitions))
		SELECT p.name, o.v,
			(`+strings.ReplaceAll(strings.ReplaceAll(segmentHoldingQuery, "?1", "p.id"), "?2", "o.v")+`),
			COALESCE((SELECT created_at FROM segments WHERE partition_id = p.id AND base_offset + frame_count > o.v
				ORDER BY base_offset LIMIT 1), 0)
		FROM partitions p, o`)
}

// BenchmarkListMessagesNewGroupsBehindWrites reads a page of that queue
// with 1,000 such groups, 100 and 1,000 segments a partition after they
// subscribed: the cost must not follow the segments.
func BenchmarkListMessagesNewGroupsBehindWrites(b *testing.B) {
	for _, segments := range []int{100, 1000} {
		b.Run(fmt.Sprintf("segments=%d", segments), func(b *testing.B) {
			benchListing(b, newGroupsBehindWrites(b, 1000, segments), 1000)
		})
	}
}

// BenchmarkListMessagesNewGroupsApartBehindWrites is the listing of
// BenchmarkListMessagesNewGroupsBehindWrites with every group registered
// after a write of its own (one segment to one partition), so no two
// share a start_seq: the readers' heads are then as many as the pairs,
// what they cost before the heads were shared.
func BenchmarkListMessagesNewGroupsApartBehindWrites(b *testing.B) {
	ctx := context.Background()
	clk := clock.NewManual(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	s := openTestStore(b, clk)
	push := func(p int, id string) {
		clk.Advance(time.Millisecond)
		if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", Partition: fmt.Sprintf("p%d", p), TxnID: id,
			Payload: []byte(`1`)}}); err != nil {
			b.Fatal(err)
		}
	}
	for p := range 10 {
		push(p, fmt.Sprintf("first-%d", p))
	}
	const groups = 1000
	for g := range groups {
		push(g%10, fmt.Sprintf("before-%d", g))
		if _, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: fmt.Sprintf("g%05d", g), Batch: 1,
			SubscriptionMode: "new"}); err != nil {
			b.Fatal(err)
		}
	}
	for r := range 100 {
		for p := range 10 {
			push(p, fmt.Sprintf("after-%d-%d", p, r))
		}
	}
	benchListing(b, s, groups)
}

// BenchmarkListMessagesTimeGroupsAfterHistory reads a page of a queue
// whose 1,000 groups start from a time with 100 and 1,000 segments a
// partition before it, and 10 after: the cost must not follow the
// history.
func BenchmarkListMessagesTimeGroupsAfterHistory(b *testing.B) {
	for _, before := range []int{100, 1000} {
		b.Run(fmt.Sprintf("before=%d", before), func(b *testing.B) {
			benchListing(b, groupsBetweenWrites(b, 1000, before, 10, "timestamp"), 1000)
		})
	}
}

func benchListing(b *testing.B, s *Store, groups int) {
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		msgs, mi, err := s.ListMessages(ctx, "", combtype.MessageFilter{Queue: "q", Limit: 100})
		if err != nil || len(msgs) != 100 || mi.BusGroups != groups {
			b.Fatal(err, len(msgs), mi)
		}
	}
}

// BenchmarkPopDelayedBehindHistory pops a delayed queue whose one group
// has consumed 100 and 1,000 segments of history and waits for a message
// not yet visible: the cost must not follow the history.
func BenchmarkPopDelayedBehindHistory(b *testing.B) {
	for _, history := range []int{100, 1000} {
		b.Run(fmt.Sprintf("history=%d", history), func(b *testing.B) {
			ctx := context.Background()
			clk := clock.NewManual(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
			s := openTestStore(b, clk)
			opts := combtype.DefaultQueueOptions()
			opts.DelayedProcessing = 60
			if _, _, err := s.Configure(ctx, "", combtype.ConfigureRequest{Queue: "d", Options: opts}); err != nil {
				b.Fatal(err)
			}
			push := func(id string) {
				clk.Advance(time.Millisecond)
				if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "d", Partition: "p0", TxnID: id, Payload: []byte(`1`)}}); err != nil {
					b.Fatal(err)
				}
			}
			for i := range history {
				push(fmt.Sprintf("h%d", i))
			}
			clk.Advance(2 * time.Minute)
			pop := func() int {
				res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "d", Group: "g", Batch: 10000, AutoAck: true})
				if err != nil {
					b.Fatal(err)
				}
				if res == nil {
					return 0
				}
				return len(res.Messages)
			}
			for got := 0; got < history; {
				n := pop()
				if n == 0 {
					b.Fatalf("%d of %d consumed", got, history)
				}
				got += n
			}
			push("later")
			b.ResetTimer()
			for range b.N {
				if n := pop(); n != 0 {
					b.Fatalf("%d messages popped before their delay", n)
				}
			}
		})
	}
}

// A partition's head when a group registered is the same for every group
// registered at the same start_seq, as groups that subscribe while
// nothing is written are. The readers that work out the implied cursors
// of many groups walk to it once per partition and shared start_seq, in
// the heads they materialise first, not once per group and partition: at
// 10,000 groups subscribed to new messages behind writes, the walks were
// most of a status read's, a queue detail's and a message listing's time.
// (A start_seq of one group's own is walked to beside its pairs; what
// each reader answers is held to the rule by the lag, listing and model
// tests.)
func TestImpliedReadersWalkToSharedHeadsOnce(t *testing.T) {
	s := openTestStore(t, clock.NewManual(time.Unix(1e9, 0)))
	for name, query := range map[string]string{
		"lag sums":            impliedLagQuery,
		"implied cursors":     impliedCursorsQuery,
		"above the floor":     impliedAboveFloorQuery,
		"least of partitions": impliedLeastsQuery,
	} {
		steps := planSteps(t, s, query, "[1]", "q")
		parent := map[int]planStep{}
		for _, st := range steps {
			parent[st.id] = st
		}
		inHeads := 0
		for _, st := range steps {
			if !strings.Contains(st.detail, "segments_partition_mark (") {
				continue
			}
			for p, ok := parent[st.parent]; ok; p, ok = parent[p.parent] {
				if p.detail == "MATERIALIZE heads" {
					inHeads++
					break
				}
			}
		}
		if inHeads == 0 {
			t.Errorf("%s: no walk to a head in materialised heads:\n%s", name, planText(steps))
		}
	}
}

func planText(steps []planStep) string {
	var b strings.Builder
	for _, st := range steps {
		fmt.Fprintf(&b, "%d %d %s\n", st.id, st.parent, st.detail)
	}
	return b.String()
}
