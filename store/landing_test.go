package store

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
)

// TestLandingAndIngestCountsAgreeWithScans builds a partition whose commit
// times move forward, stand still and step back (flush then keeps the last
// time), and checks landing against a linear scan for times before, on,
// between and after every segment's.
func TestLandingAndIngestCountsAgreeWithScans(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clock.NewManual(start)
	st, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "comb.db"), Clock: clk, Synchronous: "NORMAL"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })

	rng := rand.New(rand.NewPCG(7, 11))
	for range 300 {
		switch rng.IntN(4) {
		case 0: // the same microsecond as the last segment
		case 1:
			clk.Advance(-time.Duration(rng.IntN(5000)) * time.Microsecond) // a clock stepping back
		default:
			clk.Advance(time.Duration(1+rng.IntN(5000)) * time.Microsecond)
		}
		items := make([]combtype.PushItem, 1+rng.IntN(3))
		for i := range items {
			items[i] = combtype.PushItem{Queue: "q", Payload: []byte(`{}`)}
		}
		if _, err := st.Push(ctx, "", items); err != nil {
			t.Fatal(err)
		}
	}

	type seg struct{ base, at int64 }
	var segs []seg
	rows, err := st.rdb.QueryContext(ctx, `SELECT base_offset, created_at FROM segments ORDER BY base_offset`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s seg
		if err := rows.Scan(&s.base, &s.at); err != nil {
			t.Fatal(err)
		}
		segs = append(segs, s)
	}
	rows.Close()
	parts, err := queryPartitions(ctx, st.r, `SELECT `+partitionColumns+` FROM partitions`)
	if err != nil || len(parts) != 1 {
		t.Fatalf("partitions: %v, %v", parts, err)
	}
	var times []int64
	for _, s := range segs {
		times = append(times, s.at-1, s.at, s.at+1)
	}
	times = append(times, 0, segs[len(segs)-1].at+1_000_000)
	for _, at := range times {
		want := int64(-1)
		for _, s := range segs {
			if s.at >= at {
				want = s.base
				break
			}
		}
		got, err := landing(ctx, st.r, parts[0], at)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case want < 0 && got != nil:
			t.Fatalf("landing(%d) = segment %d, want none", at, got.BaseOffset)
		case want >= 0 && (got == nil || got.BaseOffset != want):
			t.Fatalf("landing(%d) = %v, want segment %d", at, got, want)
		}
	}

	// The ingest counts agree with scans of every segment.
	first, final := segs[0].at, segs[len(segs)-1].at
	for _, w := range [][2]int64{{first, final}, {first + 1000, final - 1000}, {first + (final-first)/3, first + (final-first)/2}} {
		from, to, bucket := w[0], w[1], int64(700)
		series, err := st.IngestSeries(ctx, "", combtype.SeriesFilter{From: fromMicros(from), To: fromMicros(to), Bucket: 700 * time.Microsecond})
		if err != nil {
			t.Fatal(err)
		}
		want := make([]int64, len(series))
		rows, err := st.rdb.QueryContext(ctx, `SELECT (created_at - ?1) / ?2, frame_count FROM segments NOT INDEXED
			WHERE created_at BETWEEN ?1 AND ?3`, from, bucket, to)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var i, n int64
			if err := rows.Scan(&i, &n); err != nil {
				t.Fatal(err)
			}
			want[i] += n
		}
		rows.Close()
		for i := range series {
			if series[i].Messages != want[i] {
				t.Fatalf("series [%d, %d] bucket %d = %d messages, want %d", from, to, i, series[i].Messages, want[i])
			}
		}
		var recent int64
		if err := st.rdb.QueryRowContext(ctx, `SELECT COALESCE(SUM(frame_count), 0) FROM segments NOT INDEXED WHERE created_at > ?`,
			to).Scan(&recent); err != nil {
			t.Fatal(err)
		}
		if got, err := st.ingestedSince(ctx, "", to); err != nil || got != recent {
			t.Fatalf("ingestedSince(%d) = %d, %v; want %d", to, got, err, recent)
		}
	}

	if segs[0].base != 0 || len(segs) < 300 {
		t.Fatalf("fixture: %d segments from offset %d", len(segs), segs[0].base)
	}
}
