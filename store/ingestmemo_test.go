package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
)

// The ingest series counts passed minutes once and keeps them
// (ingestmemo.go): a series over minutes gives what the segments say, the
// minute under way and a minute the range ends inside are read from the
// segments every time, and a passed minute is not read again, so it still
// counts what was removed after it was counted.
func TestTheIngestSeriesKeepsThePassedMinutes(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(t0)
	s := openTestStore(t, clk)
	n := 0
	push := func(queue string, count int) {
		t.Helper()
		items := make([]combtype.PushItem, count)
		for i := range items {
			n++
			items[i] = combtype.PushItem{Queue: queue, TxnID: fmt.Sprint("m-", n), Payload: []byte(`1`)}
		}
		if _, err := s.Push(ctx, "", items); err != nil {
			t.Fatal(err)
		}
	}
	series := func(f combtype.SeriesFilter) string {
		t.Helper()
		return seriesOf(t, s, "", f)
	}
	minutes := func(to time.Time) string {
		return series(combtype.SeriesFilter{From: t0, To: to, Bucket: time.Minute})
	}
	clk.Set(t0.Add(10 * time.Second))
	push("a", 3) // minute 0
	clk.Set(t0.Add(70 * time.Second))
	push("b", 5) // minute 1, before 90 s
	clk.Set(t0.Add(100 * time.Second))
	push("a", 1) // minute 1, after 90 s
	clk.Set(t0.Add(130 * time.Second))
	push("a", 2) // minute 2, under way

	if got := minutes(clk.Now()); got != "[3 6 2]" {
		t.Fatalf("series = %s, want [3 6 2]", got)
	}
	e := s.ingest.of(ingestKey{})
	if e.lo != t0.Unix()/60 || len(e.counts) != 2 {
		t.Fatalf("kept minutes %d+%d, want the two passed from minute %d", e.lo, len(e.counts), t0.Unix()/60)
	}
	push("a", 4) // the minute under way grows
	if got := minutes(clk.Now()); got != "[3 6 6]" {
		t.Fatalf("series = %s, want [3 6 6]", got)
	}
	// A range that ends inside a passed minute counts that minute's
	// segments up to its end only.
	if got := minutes(t0.Add(90 * time.Second)); got != "[3 5]" {
		t.Fatalf("series to 90 s = %s, want [3 5]", got)
	}
	// Buckets of whole minutes, and a filter of its own.
	if got := series(combtype.SeriesFilter{From: t0, To: clk.Now(), Bucket: 2 * time.Minute}); got != "[9 6]" {
		t.Fatalf("two-minute buckets = %s, want [9 6]", got)
	}
	if got := series(combtype.SeriesFilter{From: t0, To: clk.Now(), Bucket: time.Minute, Queue: "b"}); got != "[0 5 0]" {
		t.Fatalf("queue b = %s, want [0 5 0]", got)
	}
	// Queue b deleted: its minute was counted already, and still is.
	if _, err := s.DeleteQueue(ctx, "", "b"); err != nil {
		t.Fatal(err)
	}
	if got := minutes(clk.Now()); got != "[3 6 6]" {
		t.Fatalf("series after the delete = %s, want the kept [3 6 6]", got)
	}
	// A range that does not start on a minute is read whole, as it is now.
	off := combtype.SeriesFilter{From: t0.Add(time.Second), To: clk.Now(), Bucket: time.Minute}
	if got := series(off); got != "[3 1 6]" {
		t.Fatalf("series from 1 s = %s, want [3 1 6] (b's 5 gone)", got)
	}
	// Minutes passed since are counted when asked, and kept.
	clk.Set(t0.Add(4*time.Minute + 10*time.Second))
	push("a", 7) // minute 4
	if got := minutes(clk.Now()); got != "[3 6 6 0 7]" {
		t.Fatalf("series = %s, want [3 6 6 0 7]", got)
	}
	if len(e.counts) != 4 {
		t.Fatalf("%d minutes kept, want 4", len(e.counts))
	}
}

// A tenant's series counts its own queues' messages only: read without
// asking each segment's partition when no other tenant's partition (a
// queue being deleted included) was written in the range, and asking it
// when one was.
func TestATenantsSeriesCountsItsOwnMessagesOnly(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewManual(t0)
	s := openTestStore(t, clk)
	push := func(tenant, queue string, count int) {
		t.Helper()
		items := make([]combtype.PushItem, count)
		for i := range items {
			items[i] = combtype.PushItem{Queue: queue, Payload: []byte(`1`)}
		}
		if _, err := s.Push(ctx, tenant, items); err != nil {
			t.Fatal(err)
		}
	}
	// Ranges that do not start on a minute are read from the segments on
	// every request.
	series := func(tenant string, from time.Time) string {
		t.Helper()
		return seriesOf(t, s, tenant, combtype.SeriesFilter{From: from, To: clk.Now(), Bucket: time.Minute})
	}
	clk.Set(t0.Add(10 * time.Second))
	push("other", "a", 100) // minute 0, another tenant
	clk.Set(t0.Add(70 * time.Second))
	push("", "a", 3) // minute 1
	push("", "b", 4)
	clk.Set(t0.Add(130 * time.Second))
	push("", "a", 5) // minute 2

	// The other tenant wrote in the range, and last wrote before it.
	if got := series("", t0.Add(time.Second)); got != "[0 7 5]" {
		t.Errorf("tenant '' from 1 s = %s, want [0 7 5]", got)
	}
	if got := series("", t0.Add(61*time.Second)); got != "[7 5]" {
		t.Errorf("tenant '' from 61 s = %s, want [7 5]", got)
	}
	if got := series("other", t0.Add(time.Second)); got != "[100 0 0]" {
		t.Errorf("tenant other = %s, want [100 0 0]", got)
	}
	// Queue b detached and not yet emptied: its segments are still in the
	// file, under a tenant no request names.
	if _, err := s.detachQueue(ctx, "", "b"); err != nil {
		t.Fatal(err)
	}
	if got := series("", t0.Add(61*time.Second)); got != "[3 5]" {
		t.Errorf("tenant '' after b was detached = %s, want [3 5]", got)
	}
	// The other tenant writes in the range's last minute.
	push("other", "a", 50)
	if got := series("", t0.Add(61*time.Second)); got != "[3 5]" {
		t.Errorf("tenant '' from 61 s, the other tenant writing = %s, want [3 5]", got)
	}
}

// seriesOf is tenant's ingest series for f, its counts printed.
func seriesOf(t *testing.T, s *Store, tenant string, f combtype.SeriesFilter) string {
	t.Helper()
	points, err := s.IngestSeries(context.Background(), tenant, f)
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, p := range points {
		out = append(out, p.Messages)
	}
	return fmt.Sprint(out)
}
