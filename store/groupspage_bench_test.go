package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/comb-broker/comb/combtype"
)

// BenchmarkGroupsPageTenThousandQueues reads the groups listing of a
// tenant of 10,000 queues, one of them 1,200 partitions wide with a group
// on it: what the console's overview, groups and queue views ask.
func BenchmarkGroupsPageTenThousandQueues(b *testing.B) {
	ctx := context.Background()
	s := tenThousandQueues(b, 1)
	if _, err := s.Seek(ctx, "", combtype.SeekRequest{Group: "fleet", Queue: "wide", Target: combtype.SeekTarget{ToEnd: true}}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		g, _, err := s.GroupsPage(ctx, "", combtype.Page{Limit: 1000})
		if err != nil || len(g) != 1 {
			b.Fatal(err, g)
		}
	}
}

// BenchmarkGroupPageAfterTenThousandQueues reads the first page of a
// group's partitions on a queue made after 10,000 others: what the
// console's queue and group views ask first.
func BenchmarkGroupPageAfterTenThousandQueues(b *testing.B) {
	ctx := context.Background()
	s := tenThousandQueues(b, 1)
	if _, err := s.Seek(ctx, "", combtype.SeekRequest{Group: "fleet", Queue: "wide", Target: combtype.SeekTarget{ToEnd: true}}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		lags, _, _, err := s.GroupPage(ctx, "", "fleet", combtype.Page{Limit: 100})
		if err != nil || len(lags) != 100 {
			b.Fatal(err, len(lags))
		}
	}
}

// tenThousandQueues opens a store of 10,000 one-message queues, then a
// queue "wide" of 1,200 partitions holding perPartition messages each:
// the console's scale test's tenant. The store closes with b.
func tenThousandQueues(b *testing.B, perPartition int) *Store {
	b.Helper()
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(b.TempDir(), "comb.db")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	for i := 0; i < 10000; i += 1000 {
		var items []combtype.PushItem
		for j := i; j < i+1000; j++ {
			items = append(items, combtype.PushItem{Queue: fmt.Sprintf("q%05d", j), TxnID: "t", Payload: []byte(`1`)})
		}
		if _, err := s.Push(ctx, "", items); err != nil {
			b.Fatal(err)
		}
	}
	var items []combtype.PushItem
	for i := range 1200 {
		for k := range perPartition {
			items = append(items, combtype.PushItem{Queue: "wide", Partition: fmt.Sprintf("p%04d", i),
				TxnID: fmt.Sprintf("t%d", k), Payload: []byte(`1`)})
		}
	}
	if _, err := s.Push(ctx, "", items); err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkGroupsPageOfAThousandPairs is the consumer-group listing whose
// page holds 1,000 (group, queue) pairs, each summed for the reply: a
// group on each of 1,000 of the 10,000 queues.
func BenchmarkGroupsPageOfAThousandPairs(b *testing.B) {
	ctx := context.Background()
	s := tenThousandQueues(b, 1)
	for i := range 1000 {
		if _, err := s.Pop(ctx, "", combtype.PopRequest{Queue: fmt.Sprintf("q%05d", i), Group: "g", Batch: 1}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		g, _, err := s.GroupsPage(ctx, "", combtype.Page{Limit: 1000})
		if err != nil || len(g) != 1000 {
			b.Fatal(err, len(g))
		}
	}
}
