package store_test

import (
	"context"
	"slices"
	"testing"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
)

// FirstQueueDepths reads the first queues by name, then tenant, and counts
// those past them: what a scrape bounded in its queues reads.
func TestFirstQueueDepthsReadsTheFirstQueuesByName(t *testing.T) {
	ctx := context.Background()
	st := combtest.MustOpenStore(t, combtest.Options{})
	// Pushed out of name order, two of them in a second tenant.
	for _, tq := range [][2]string{{"", "q3"}, {"", "q1"}, {"t2", "q1"}, {"", "q0"}, {"t2", "q4"}, {"", "q2"}} {
		items := []combtype.PushItem{{Queue: tq[1], Payload: []byte(`{}`)}, {Queue: tq[1], Payload: []byte(`{}`)}}
		if _, err := st.Push(ctx, tq[0], items); err != nil {
			t.Fatal(err)
		}
	}
	names := func(ds []combtype.QueueDepth) (out []string) {
		for _, d := range ds {
			if d.Stored != 2 || d.Depth != 2 {
				t.Errorf("%s/%s: stored %d, depth %d; want 2, 2", d.Tenant, d.Queue, d.Stored, d.Depth)
			}
			out = append(out, d.Tenant+"/"+d.Queue)
		}
		slices.Sort(out)
		return out
	}
	for _, c := range []struct {
		limit, rest int
		want        []string
	}{
		{3, 3, []string{"/q0", "/q1", "t2/q1"}},
		{4, 2, []string{"/q0", "/q1", "/q2", "t2/q1"}},
		{6, 0, []string{"/q0", "/q1", "/q2", "/q3", "t2/q1", "t2/q4"}},
		{100, 0, []string{"/q0", "/q1", "/q2", "/q3", "t2/q1", "t2/q4"}},
		{0, 0, []string{"/q0", "/q1", "/q2", "/q3", "t2/q1", "t2/q4"}},
	} {
		ds, rest, err := st.FirstQueueDepths(ctx, c.limit)
		if got := names(ds); err != nil || rest != c.rest || !slices.Equal(got, c.want) {
			t.Errorf("first %d: %v, %d past them, %v; want %v, %d", c.limit, got, rest, err, c.want, c.rest)
		}
	}
}
