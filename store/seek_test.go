package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
	"github.com/comb-broker/comb/internal/combtest"
	"github.com/comb-broker/comb/seek"
	"github.com/comb-broker/comb/store"
)

func seekPush(t testing.TB, st *store.Store, tenant, queue, partition string, n int) {
	t.Helper()
	items := make([]combtype.PushItem, n)
	for i := range items {
		items[i] = combtype.PushItem{Queue: queue, Partition: partition, Payload: []byte(fmt.Sprint(i))}
	}
	if _, err := st.Push(context.Background(), tenant, items); err != nil {
		t.Fatalf("push: %v", err)
	}
}

// committedOf reads a group's cursors on a queue through a dry run, whose
// From is each cursor's committed value (raised to the retention floor).
func committedOf(t *testing.T, st *store.Store, tenant, queue, group string) map[string]int64 {
	t.Helper()
	res, err := st.Seek(context.Background(), tenant, combtype.SeekRequest{Group: group, Queue: queue,
		Target: combtype.SeekTarget{ToEnd: true}, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, p := range res.Partitions {
		if !p.Created {
			out[p.Partition] = p.From
		}
	}
	return out
}

func TestSeekIsAllOrNothingAcrossPartitions(t *testing.T) {
	st := combtest.MustOpenStore(t, combtest.Options{})
	ctx := context.Background()
	seekPush(t, st, "", "q", "a", 10)
	seekPush(t, st, "", "q", "b", 5)
	if _, err := st.Seek(ctx, "", combtype.SeekRequest{Group: "g", Queue: "q", Target: combtype.SeekTarget{ToEnd: true}}); err != nil {
		t.Fatal(err)
	}
	// Offset 7 exists on a but not on b: the rule refuses the second
	// partition, and the first must not move either.
	off := int64(7)
	_, err := st.Seek(ctx, "", combtype.SeekRequest{Group: "g", Queue: "q", Target: combtype.SeekTarget{Offset: &off}})
	if !errors.Is(err, combtype.ErrInvalid) || !errors.Is(err, seek.ErrOffsetOutOfRange) {
		t.Fatalf("seek = %v", err)
	}
	if got := committedOf(t, st, "", "q", "g"); got["a"] != 9 || got["b"] != 4 {
		t.Fatalf("cursors after a refused seek = %v", got)
	}
	if _, err := st.Seek(ctx, "", combtype.SeekRequest{Group: "g", Queue: "q"}); !errors.Is(err, combtype.ErrInvalid) ||
		!errors.Is(err, combtype.ErrNoTarget) {
		t.Fatalf("seek without a target = %v", err)
	}
}

// BenchmarkSeekTimestamp measures one timestamp seek on a partition of
// 10 000 segments and of 1 000 000: the landing segment is found by a
// search of the offset index (landing), about 2·log2(n) probes, so the cost
// grows with the log of the partition's length. "resolve" is a dry run (a read transaction); "apply"
// also moves the cursor through the writer and pays a durable commit.
func BenchmarkSeekTimestamp(b *testing.B) {
	sizes := []int{10_000, 1_000_000}
	type fixture struct {
		st         *store.Store
		start, end time.Time
	}
	fixtures := make([]fixture, len(sizes))
	for i, n := range sizes {
		st, start, end := seekBenchStore(b, n)
		fixtures[i] = fixture{st, start, end}
	}
	for i, n := range sizes {
		f := fixtures[i]
		for _, mode := range []string{"resolve", "apply"} {
			b.Run(fmt.Sprintf("segments=%d/%s", n, mode), func(b *testing.B) {
				ctx := context.Background()
				rng := rand.New(rand.NewPCG(1, 2))
				span := f.end.Sub(f.start)
				for b.Loop() {
					at := f.start.Add(time.Duration(rng.Int64N(int64(span))))
					res, err := f.st.Seek(ctx, "", combtype.SeekRequest{Group: "g", Queue: "bench",
						Target: combtype.SeekTarget{Time: &at}, DryRun: mode == "resolve"})
					if err != nil {
						b.Fatal(err)
					}
					if res.Partitions[0].To < -1 {
						b.Fatal("bad placement")
					}
				}
			})
		}
	}
}

// seekBenchStore builds queue "bench" with one partition of n one-frame
// segments, one second apart, written by direct multi-row INSERTs in one
// transaction on a second connection.
func seekBenchStore(b *testing.B, n int) (*store.Store, time.Time, time.Time) {
	b.Helper()
	st := combtest.MustOpenStore(b, combtest.Options{})
	seekPush(b, st, "", "bench", "Default", 1) // the queue, the partition and segment 0
	db, err := sql.Open("sqlite", "file:"+st.Path()+"?_pragma=busy_timeout(10000)")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var pid, first int64
	if err := db.QueryRow(`SELECT partition_id, created_at FROM segments`).Scan(&pid, &first); err != nil {
		b.Fatal(err)
	}
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`WITH RECURSIVE i(o) AS (SELECT 1 UNION ALL SELECT o + 1 FROM i WHERE o < ?2)
		INSERT INTO segments (partition_id, base_offset, frame_count, created_at, codec, raw_size, checksum, data)
		SELECT ?1, o, 1, ?3 + o * 1000000, codec, raw_size, checksum, data FROM i, segments WHERE base_offset = 0`, pid, n-1, first); err != nil {
		b.Fatal(err)
	}
	last := first + int64(n-1)*1_000_000
	if _, err := tx.Exec(`UPDATE partitions SET last_offset = ?, last_segment_at = ? WHERE id = ?`, n-1, last, pid); err != nil {
		b.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	return st, time.UnixMicro(first), time.UnixMicro(last)
}

// TestATimestampSubscriptionStartsWhereATimeSeekLands checks that a
// subscription's cursors seeded from a time (seek.Seed) and a seek to the
// time (seek.Place) land alike, on
// partitions with segments before, at and after the time, one whose front
// retention removed, and an empty one.
func TestATimestampSubscriptionStartsWhereATimeSeekLands(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 7, 30, 10, 0, 0, 0, time.UTC)
	clk := clock.NewManual(t0)
	st := combtest.MustOpenStore(t, combtest.Options{Clock: clk})
	for i, parts := range [][]string{{"a", "c"}, {"a", "b", "c"}, {"a", "c"}} {
		clk.Set(t0.Add(time.Duration(i) * time.Minute))
		for _, p := range parts {
			seekPush(t, st, "", "q", p, 3)
		}
	}
	q, err := st.Queue(ctx, "", "q")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Configure(ctx, "", combtype.ConfigureRequest{Queue: "q", Options: q.Options}); err != nil {
		t.Fatal(err) // adds the empty Default partition
	}
	parts, err := st.Partitions(ctx, q.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		if p.Name == "c" {
			if _, err := st.EvictPrefix(ctx, p.ID, 3, clk.Now(), store.EvictLimits{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	clk.Set(t0.Add(5 * time.Minute))

	landed := map[int64]bool{}
	for i, at := range []time.Time{t0.Add(-time.Hour), t0, t0.Add(30 * time.Second), t0.Add(time.Minute),
		t0.Add(2*time.Minute + time.Second), t0.Add(time.Hour)} {
		group := fmt.Sprintf("g%d", i)
		// The first pop subscribes the group; a lease leaves committed where
		// the seed put it.
		if _, err := st.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: group,
			SubscriptionFrom: at.Format(time.RFC3339Nano)}); err != nil {
			t.Fatal(err)
		}
		res, err := st.Seek(ctx, "", combtype.SeekRequest{Group: group, Queue: "q", Target: combtype.SeekTarget{Time: &at}, DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Partitions) != 4 {
			t.Fatalf("at %v: %d partitions, want 4", at, len(res.Partitions))
		}
		for _, p := range res.Partitions {
			if p.Created || p.From != p.To {
				t.Errorf("at %v, partition %s: subscription seeded committed %d (created by the seek: %v), a time seek lands on %d",
					at, p.Partition, p.From, p.Created, p.To)
			}
			if p.Partition == "a" {
				landed[p.To] = true
			}
		}
	}
	if len(landed) < 3 {
		t.Errorf("partition a landed on %v only: the times do not exercise the rule", landed)
	}
}
