package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/comb-broker/comb/combtype"
)

// A push or transaction naming many partitions resolves them together
// (resolvePartitions): known and new ones, in two queues, more than one
// lookup's worth, names repeated and the default partition among them.
// Each name must still map to one partition, new ones numbered in the
// order they first appear, and a transaction that fails must leave none
// of its new partitions behind.
func TestAPushNamingManyPartitionsResolvesThemTogether(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "comb.db")
	s, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	var first []combtype.PushItem
	for i := range 5 {
		first = append(first, combtype.PushItem{Queue: "wide", Partition: fmt.Sprintf("old-%d", i), Payload: []byte(`1`)})
	}
	if _, err := s.Push(ctx, "", first); err != nil {
		t.Fatal(err)
	}

	// A transaction whose last push repeats a transactionId fails whole.
	var ops []combtype.TxOp
	for i := range 50 {
		ops = append(ops, combtype.TxOp{Type: "push", Items: []combtype.PushItem{{Queue: "wide", Partition: fmt.Sprintf("gone-%d", i%49),
			TxnID: fmt.Sprintf("t-%d", i%49), Payload: []byte(`2`)}}})
	}
	if _, err := s.Transaction(ctx, "", ops); !errors.Is(err, combtype.ErrInvalid) {
		t.Fatalf("a transaction repeating a transactionId = %v, want ErrInvalid", err)
	}

	const fresh = 1500 // more than partitionLookupNames
	var items []combtype.PushItem
	want := map[string][]string{} // queue -> partition names in first-appearance order
	add := func(queue, part string) {
		items = append(items, combtype.PushItem{Queue: queue, Partition: part, Payload: []byte(`3`)})
		name := part
		if name == "" {
			name = combtype.DefaultPartition
		}
		for _, n := range want[queue] {
			if n == name {
				return
			}
		}
		want[queue] = append(want[queue], name)
	}
	for i := range fresh {
		add("wide", fmt.Sprintf("new-%d", i))
		if i%300 == 0 {
			add("wide", fmt.Sprintf("old-%d", i%5)) // known
			add("wide", fmt.Sprintf("new-%d", i/2)) // repeated
			add("other", "")                        // default partition of a new queue
			add("other", fmt.Sprintf("o-%d", i))
		}
	}
	res, err := s.Push(ctx, "", items)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]string{} // queue/partition -> partition uuid
	count := map[string]int64{}
	for i, r := range res {
		k := items[i].Queue + "/" + items[i].Partition
		count[k]++
		if u, ok := byName[k]; ok && u != r.PartitionID {
			t.Fatalf("item %d: partition %s answered as %s and as %s", i, k, u, r.PartitionID)
		}
		byName[k] = r.PartitionID
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(ctx, Options{Path: path}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	for queue, names := range want {
		q, err := s.Queue(ctx, "", queue)
		if err != nil {
			t.Fatal(err)
		}
		parts, err := s.Partitions(ctx, q.ID)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		uuids := map[string]bool{}
		for _, p := range parts {
			if len(p.Name) > 5 && p.Name[:5] == "gone-" {
				t.Fatalf("partition %s of the failed transaction was kept", p.Name)
			}
			if queue == "wide" && p.Name[:4] == "old-" {
				if p.LastOffset < 0 {
					t.Fatalf("partition %s lost its first message", p.Name)
				}
				continue
			}
			if uuids[p.UUID] {
				t.Fatalf("partition %s repeats uuid %s", p.Name, p.UUID)
			}
			uuids[p.UUID] = true
			got = append(got, p.Name)
			part := p.Name
			if part == combtype.DefaultPartition {
				part = ""
			}
			if u := byName[queue+"/"+part]; u != p.UUID {
				t.Fatalf("partition %s/%s is stored as %s, its push answered %s", queue, p.Name, p.UUID, u)
			}
			if n := count[queue+"/"+part]; p.LastOffset != n-1 {
				t.Fatalf("partition %s/%s holds up to offset %d, want %d", queue, p.Name, p.LastOffset, n-1)
			}
		}
		wantNew := names
		if queue == "wide" {
			wantNew = nil
			for _, n := range names {
				if n[:4] != "old-" {
					wantNew = append(wantNew, n)
				}
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(wantNew) {
			t.Fatalf("queue %s holds partitions %d in id order, want %d in order of first appearance; first differing at %d",
				queue, len(got), len(wantNew), firstDiff(got, wantNew))
		}
	}
	// Partitions made after the batch still get ids of their own.
	if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "wide", Partition: "later", Payload: []byte(`4`)}}); err != nil {
		t.Fatal(err)
	}
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// BenchmarkPushToNewPartitions pushes 2,000 items, each to a partition
// the queue does not have yet: what a fleet of devices first pushing at
// once, or a transaction of such pushes, costs the writer.
func BenchmarkPushToNewPartitions(b *testing.B) {
	ctx := context.Background()
	s := openTestStore(b, nil)
	const n = 2000
	items := make([]combtype.PushItem, n)
	b.ReportAllocs()
	for i := range b.N {
		for j := range items {
			items[j] = combtype.PushItem{Queue: "wide", Partition: fmt.Sprintf("p-%d-%d", i, j), Payload: []byte(`{"v":1}`)}
		}
		if _, err := s.Push(ctx, "", items); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/partition")
}

// BenchmarkPushToNewQueues pushes 2,000 items, each to a queue that does
// not exist yet: each makes a queue and its Default partition.
func BenchmarkPushToNewQueues(b *testing.B) {
	ctx := context.Background()
	s := openTestStore(b, nil)
	const n = 2000
	items := make([]combtype.PushItem, n)
	for i := range b.N {
		for j := range items {
			items[j] = combtype.PushItem{Queue: fmt.Sprintf("q-%d-%d", i, j), Payload: []byte(`{"v":1}`)}
		}
		if _, err := s.Push(ctx, "", items); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/queue")
}
