package store

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/comb-broker/comb/combtype"
)

// newGroupsBehindWrites opens a store with a queue of 10 partitions, one
// message each, read by groups consumer groups subscribed to new messages
// that have claimed nothing (no cursor rows), and then writes one segment
// to every partition segments times over.
func newGroupsBehindWrites(tb testing.TB, groups, segments int) *Store {
	tb.Helper()
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(tb.TempDir(), "comb.db")})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	round := func(r int) {
		items := make([]combtype.PushItem, 0, 10)
		for p := range 10 {
			items = append(items, combtype.PushItem{Queue: "q", Partition: fmt.Sprintf("p%d", p),
				TxnID: fmt.Sprintf("t%d-%d", p, r), Payload: []byte(`1`)})
		}
		if _, err := s.Push(ctx, "", items); err != nil {
			tb.Fatal(err)
		}
	}
	round(-1)
	for g := range groups {
		res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: fmt.Sprintf("g%05d", g), Batch: 1,
			SubscriptionMode: "new"})
		if err != nil || (res != nil && len(res.Messages) > 0) {
			tb.Fatal(err, res)
		}
	}
	for r := range segments {
		round(r)
	}
	return s
}

// A group subscribed to new messages starts each partition it has no
// cursor row on at the partition's head when it subscribed. Found by
// walking back from the newest segment, that head cost every segment
// written since, for every such group and partition, in every listing,
// status and lag read, and in the claims. The walk must start at the
// first mark past the registration.
func TestTheHeadAtSubscriptionWalksFromAMark(t *testing.T) {
	s := newGroupsBehindWrites(t, 3, 20)
	ctx := context.Background()
	rows, err := s.r.QueryContext(ctx, `EXPLAIN QUERY PLAN SELECT p.id, s.group_name, `+impliedExpr+`
		FROM partitions p JOIN subscriptions s ON s.queue_id = p.queue_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{
		"SEARCH h USING INDEX segments_partition_offset (partition_id=? AND base_offset<?)": 0,
		"SEARCH m USING INDEX segments_partition_mark (partition_id=? AND id>?)":            0,
	}
	for _, d := range plan {
		if _, ok := want[d]; ok {
			want[d]++
		} else if strings.Contains(d, " h ") || strings.Contains(d, " m ") {
			t.Errorf("unexpected read of segments: %q", d)
		}
	}
	for d, n := range want {
		// Once for a start from new messages, once from a time.
		if n != 2 {
			t.Errorf("%q: %d times in the plan, want 2:\n%s", d, n, strings.Join(plan, "\n"))
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

// headAtSeqExpr gives what its definition gives, the end of the newest
// segment with an id at most seq, for every seq: on partitions written in
// segments of 1 to 150 messages, interleaved, some cut by retention and
// some with a segment set aside (a hole), as a damaged one is.
func TestHeadAtSeqIsTheNewestSegmentAtOrBeforeIt(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "comb.db")
	s, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for c := range 400 {
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
	defer db.Close()
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
	var maxID int64
	if err := db.QueryRowContext(ctx, `SELECT MAX(id) FROM segments`).Scan(&maxID); err != nil {
		t.Fatal(err)
	}
	rows, err := db.QueryContext(ctx, `WITH RECURSIVE seq(v) AS (SELECT 0 UNION ALL SELECT v + 1 FROM seq WHERE v <= ?1)
		SELECT p.name, seq.v, `+headAtSeqExpr("seq.v")+`,
			CASE WHEN p.last_segment_id <= seq.v THEN p.last_offset ELSE
			COALESCE((SELECT d.base_offset + d.frame_count - 1 FROM segments d
				WHERE d.partition_id = p.id AND d.id <= seq.v ORDER BY d.base_offset DESC LIMIT 1), -1) END
		FROM partitions p, seq`, maxID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n, marked := 0, 0
	for rows.Next() {
		var name string
		var seq, got, want int64
		if err := rows.Scan(&name, &seq, &got, &want); err != nil {
			t.Fatal(err)
		}
		n++
		if got != want {
			t.Errorf("%s at seq %d: head %d, want %d", name, seq, got, want)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM segments m WHERE `+segmentMarkExpr).Scan(&marked); err != nil {
		t.Fatal(err)
	}
	var segments int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM segments`).Scan(&segments); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d heads compared; %d of %d segments are marks", n, marked, segments)
	if n < 4*int(maxID) || marked == 0 || marked == segments {
		t.Fatalf("%d heads, %d of %d segments marks: the data does not test the walk", n, marked, segments)
	}
}

// BenchmarkListMessagesNewGroupsBehindWrites reads a page of that queue
// with 1,000 such groups, 100 and 1,000 segments a partition after they
// subscribed: the cost must not follow the segments.
func BenchmarkListMessagesNewGroupsBehindWrites(b *testing.B) {
	for _, segments := range []int{100, 1000} {
		b.Run(fmt.Sprintf("segments=%d", segments), func(b *testing.B) {
			s := newGroupsBehindWrites(b, 1000, segments)
			ctx := context.Background()
			b.ResetTimer()
			for range b.N {
				msgs, mi, err := s.ListMessages(ctx, "", combtype.MessageFilter{Queue: "q", Limit: 100})
				if err != nil || len(msgs) != 100 || mi.BusGroups != 1000 {
					b.Fatal(err, len(msgs), mi)
				}
			}
		})
	}
}
