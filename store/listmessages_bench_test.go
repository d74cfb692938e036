package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/comb-broker/comb/combtype"
)

// BenchmarkListMessagesTenThousandGroups reads a page of a queue of 10
// partitions read by 10,000 groups, each of which has claimed one of them:
// the listing counts the groups past each message it shows. "all" groups
// start at the oldest message, so the 9,000 without a row on a partition
// are at its floor; "new" groups start at the head when they subscribed,
// which is worked out group by group.
func BenchmarkListMessagesTenThousandGroups(b *testing.B) {
	for _, mode := range []string{"all", "new"} {
		b.Run(mode, func(b *testing.B) {
			ctx := context.Background()
			s, err := Open(ctx, Options{Path: filepath.Join(b.TempDir(), "comb.db")})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			var items []combtype.PushItem
			for p := range 10 {
				for i := range 10 {
					items = append(items, combtype.PushItem{Queue: "q", Partition: fmt.Sprintf("p%d", p),
						TxnID: fmt.Sprintf("t%d-%d", p, i), Payload: []byte(`1`)})
				}
			}
			if _, err := s.Push(ctx, "", items); err != nil {
				b.Fatal(err)
			}
			for g := range 10000 {
				if _, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: fmt.Sprintf("g%05d", g), Batch: 1,
					SubscriptionMode: mode}); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for range b.N {
				msgs, mi, err := s.ListMessages(ctx, "", combtype.MessageFilter{Queue: "q", Limit: 100})
				if err != nil || len(msgs) != 100 || mi.BusGroups != 10000 || msgs[0].TotalGroups != 10000 {
					b.Fatal(err, len(msgs), mi)
				}
			}
		})
	}
}
