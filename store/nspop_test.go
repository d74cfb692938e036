package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/comb-broker/comb/combtype"
)

// A namespace pop reads its queues a page at a time (popQueuePageSize),
// in the order it took them whole before: highest priority first, then
// by id, across pages, so a queue past the first pages is found, and one
// of higher priority is taken first wherever its id falls.
func TestANamespacePopReadsItsQueuesAPageAtATimeInPriorityOrder(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "c.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n := 2*popQueuePageSize + 10
	for i := range n {
		opts := combtype.DefaultQueueOptions()
		if i == n-5 {
			opts.Priority = 7 // the last but five by id, first by priority
		}
		if _, _, err := s.Configure(ctx, "", combtype.ConfigureRequest{Queue: fmt.Sprintf("q%04d", i), Namespace: "ns", Options: opts}); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{fmt.Sprintf("q%04d", n-1), fmt.Sprintf("q%04d", n-5), "other"} {
		if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: q, Payload: []byte(`"` + q + `"`)}}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for range 3 {
		res, err := s.Pop(ctx, "", combtype.PopRequest{Namespace: "ns", Batch: 10, AutoAck: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Messages) > 0 {
			got = append(got, res.Messages[0].Queue)
		}
	}
	want := fmt.Sprintf("[q%04d q%04d]", n-5, n-1)
	if fmt.Sprint(got) != want {
		t.Errorf("namespace pops took %v, want %s: the priority-7 queue, then the last, and nothing of another namespace", got, want)
	}
}
