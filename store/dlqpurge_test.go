package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
)

// TestAnUnfilteredPurgeIsRefusedUnlessAllIsSet: the guard holds for
// embedders calling the store, not only over HTTP.
func TestAnUnfilteredPurgeIsRefusedUnlessAllIsSet(t *testing.T) {
	s := combtest.MustOpenStore(t, combtest.Options{})
	ctx := context.Background()
	for _, req := range []combtype.PurgeRequest{{}, {Limit: 5}} {
		if _, err := s.PurgeDLQ(ctx, "acme", req); !errors.Is(err, combtype.ErrInvalid) {
			t.Fatalf("PurgeDLQ(%+v) = %v, want ErrInvalid", req, err)
		}
	}
	res, err := s.PurgeDLQ(ctx, "", combtype.PurgeRequest{All: true})
	if err != nil || res.Deleted != 0 || res.Remaining != 0 {
		t.Fatalf("PurgeDLQ(All) of an empty DLQ = %+v, %v", res, err)
	}
	// An explicit empty id list is a filter that matches nothing.
	if res, err := s.PurgeDLQ(ctx, "", combtype.PurgeRequest{IDs: []string{}}); err != nil || res.Deleted != 0 {
		t.Fatalf("PurgeDLQ(IDs: []) = %+v, %v", res, err)
	}
}
