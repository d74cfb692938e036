package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// BenchmarkBesideAWideQueue reads the figures of a queue of one partition
// whose group "side" holds a lease, beside a queue of wide partitions with
// a cursor row of group "fleet" on each: the lagging page (the wide queue
// is summed in the background, the small one read live), the side group's
// page, the metrics' depths, and deleting a group of the small queue from
// every queue. None of them is about the wide queue's cursors, so none may
// grow with them; each read every cursor row or every partition of the
// file (the pairs found outside their UNION, the group page's walk started
// at the first partition, the delete listed every partition).
func BenchmarkBesideAWideQueue(b *testing.B) {
	for _, wide := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("partitions=%d", wide), func(b *testing.B) {
			ctx := context.Background()
			s := besideWide(b, wide)
			b.Run("lagging", func(b *testing.B) {
				for range b.N {
					l, _, err := s.LaggingPage(ctx, "", 0, combtype.Page{Limit: 100})
					if err != nil || len(l) == 0 {
						b.Fatal(err, len(l))
					}
				}
			})
			b.Run("group", func(b *testing.B) {
				for range b.N {
					l, _, _, err := s.GroupPage(ctx, "", "side", combtype.Page{Limit: 100})
					if err != nil || len(l) != 1 {
						b.Fatal(err, len(l))
					}
				}
			})
			b.Run("delete", func(b *testing.B) {
				// A group made on the small queue (one pop), then deleted
				// from every queue.
				for range b.N {
					if _, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "small", Group: "gone", Batch: 1}); err != nil {
						b.Fatal(err)
					}
					if n, err := s.DeleteGroup(ctx, "", "gone", "", true); err != nil || n != 1 {
						b.Fatal(err, n)
					}
				}
			})
			b.Run("depths", func(b *testing.B) {
				for range b.N {
					d, err := s.QueueDepths(ctx)
					if err != nil || len(d) != 2 {
						b.Fatal(err, len(d))
					}
				}
			})
		})
	}
}

func besideWide(b *testing.B, wide int) *Store {
	b.Helper()
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(b.TempDir(), "comb.db"), LiveTotalsPartitions: 500})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	for i := 0; i < wide; i += 10000 {
		var items []combtype.PushItem
		for j := i; j < min(i+10000, wide); j++ {
			items = append(items, combtype.PushItem{Queue: "wide", Partition: fmt.Sprintf("p%07d", j), Payload: []byte(`1`)})
		}
		if _, err := s.Push(ctx, "", items); err != nil {
			b.Fatal(err)
		}
	}
	end := int64(0)
	if _, err := s.Seek(ctx, "", combtype.SeekRequest{Group: "fleet", Queue: "wide", Target: combtype.SeekTarget{Offset: &end}}); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "small", Payload: []byte(`1`)}, {Queue: "small", Payload: []byte(`2`)}}); err != nil {
		b.Fatal(err)
	}
	if res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "small", Group: "side", Batch: 1}); err != nil || res == nil || len(res.Messages) != 1 {
		b.Fatal(err, res)
	}
	// The wide queue's sums, made in the background once a read asks.
	if _, _, err := s.LaggingPage(ctx, "", 0, combtype.Page{Limit: 100}); err != nil {
		b.Fatal(err)
	}
	for {
		_, info, err := s.LaggingPage(ctx, "", 0, combtype.Page{Limit: 100})
		if err != nil {
			b.Fatal(err)
		}
		if info.Unsummed == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.ResetTimer()
	return s
}
