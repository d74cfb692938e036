package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/store"
)

// BenchmarkPopAfterHugePush measures single-message pops from a backlog
// written by one push of 20000 messages ("huge") and by 200 pushes of 100
// ("normal"); the ratio of the two, from the same run, is what a huge push
// costs each later pop.
func BenchmarkPopAfterHugePush(b *testing.B) {
	const total = 20000
	for _, c := range []struct {
		name string
		per  int
	}{{"normal", 100}, {"huge", total}} {
		b.Run(c.name, func(b *testing.B) {
			// synchronous=NORMAL: the figure is what a pop costs, not what
			// the disk's flush costs, which would drown it.
			ctx := context.Background()
			st, err := store.Open(ctx, store.Options{Path: filepath.Join(b.TempDir(), "comb.db"), Synchronous: "NORMAL"})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			left := 0
			fill := func() {
				items := make([]combtype.PushItem, 0, c.per)
				for i := 0; i < total; i++ {
					items = append(items, combtype.PushItem{Queue: "bench", Partition: "p", Payload: payload100})
					if len(items) == c.per {
						if _, err := st.Push(ctx, "", items); err != nil {
							b.Fatal(err)
						}
						items = items[:0]
					}
				}
				left = total
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if left == 0 {
					b.StopTimer()
					fill()
					b.StartTimer()
				}
				res, err := st.Pop(ctx, "", combtype.PopRequest{Queue: "bench", Batch: 1, AutoAck: true})
				if err != nil || len(res.Messages) != 1 {
					b.Fatalf("pop: %d messages, %v", len(res.Messages), err)
				}
				left--
			}
		})
	}
}
