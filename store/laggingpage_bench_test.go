package store

import (
	"context"
	"fmt"
	"testing"

	"github.com/comb-broker/comb/combtype"
)

// BenchmarkLaggingPageTenThousandQueues reads the first page of lagging
// cursors of a tenant of 10,000 queues, one of them 1,200 partitions wide
// with a group behind on half of them: what the console's groups view
// asks beside the groups listing.
func BenchmarkLaggingPageTenThousandQueues(b *testing.B) {
	ctx := context.Background()
	s := tenThousandQueues(b, 2)
	off := int64(0)
	if _, err := s.Seek(ctx, "", combtype.SeekRequest{Group: "fleet", Queue: "wide", Target: combtype.SeekTarget{Offset: &off}}); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 1200; i += 2 {
		if _, err := s.Seek(ctx, "", combtype.SeekRequest{Group: "fleet", Queue: "wide", Partition: fmt.Sprintf("p%04d", i),
			Target: combtype.SeekTarget{ToEnd: true}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		l, _, err := s.LaggingPage(ctx, "", 0, combtype.Page{Limit: 1000})
		if err != nil || len(l) != 600 {
			b.Fatal(err, len(l))
		}
	}
}
