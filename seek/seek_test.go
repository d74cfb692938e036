package seek_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/seek"
	"github.com/comb-broker/comb/store"
)

var t0 = time.Date(2026, 7, 30, 10, 0, 0, 0, time.UTC)

func state(logStart, last int64, committed *int64, landing *store.SegmentRef) *store.SeekState {
	st := &store.SeekState{
		Partition: store.Partition{Name: "p", LogStart: logStart, LastOffset: last, LastSegmentAt: t0.Add(time.Hour).UnixMicro()},
		Committed: logStart - 1,
		Landing:   landing,
	}
	if committed != nil {
		st.HasCursor, st.Committed = true, *committed
	}
	return st
}

func ptr[T any](v T) *T { return &v }

func withCaptured(st *store.SeekState, c int64) *store.SeekState {
	st.Captured = &c
	return st
}

func TestPlace(t *testing.T) {
	at := ptr(t0)
	cases := []struct {
		name   string
		target seek.Target
		st     *store.SeekState
		want   store.Placement
	}{
		{"to end", seek.Target{ToEnd: true}, state(0, 41, ptr[int64](3), nil), store.Placement{Committed: 41}},
		{"to end of an empty partition", seek.Target{ToEnd: true}, state(0, -1, nil, nil), store.Placement{Committed: -1}},
		{"time lands just below its segment", seek.Target{Time: at}, state(0, 41, ptr[int64](41),
			&store.SegmentRef{BaseOffset: 20, FrameCount: 10}), store.Placement{Committed: 19, OvershootBound: 9}},
		{"time with nothing that recent is a future-only cursor", seek.Target{Time: at}, state(0, 41, ptr[int64](3), nil),
			store.Placement{Committed: 41}},
		{"time on the first segment of an unretained log is not clamped", seek.Target{Time: at}, state(0, 41, nil,
			&store.SegmentRef{BaseOffset: 0, FrameCount: 1}), store.Placement{Committed: -1}},
		{"time resolving to the oldest retained segment is clamped", seek.Target{Time: at}, state(30, 41, ptr[int64](41),
			&store.SegmentRef{BaseOffset: 30, FrameCount: 5}), store.Placement{Committed: 29, OvershootBound: 4, Clamped: true, FramesEvicted: 30}},
		{"time above the oldest retained segment is not clamped", seek.Target{Time: at}, state(30, 41, ptr[int64](41),
			&store.SegmentRef{BaseOffset: 35, FrameCount: 5}), store.Placement{Committed: 34, OvershootBound: 4}},
		{"time on a fully evicted partition newer than its data", seek.Target{Time: ptr(t0.Add(2 * time.Hour))},
			state(42, 41, ptr[int64](10), nil), store.Placement{Committed: 41}},
		{"time on a fully evicted partition older than its data", seek.Target{Time: at},
			state(42, 41, ptr[int64](10), nil), store.Placement{Committed: 41, Clamped: true, FramesEvicted: 42}},
		{"offset", seek.Target{Offset: ptr[int64](7)}, state(0, 41, ptr[int64](41), nil), store.Placement{Committed: 7}},
		{"offset at the floor", seek.Target{Offset: ptr[int64](29)}, state(30, 41, nil, nil), store.Placement{Committed: 29}},
		{"snapshot restores the captured value", seek.Target{Snapshot: "s"}, withCaptured(state(0, 41, ptr[int64](41), nil), 12),
			store.Placement{Committed: 12}},
		{"snapshot below the watermark is clamped exactly", seek.Target{Snapshot: "s"}, withCaptured(state(30, 41, ptr[int64](41), nil), 12),
			store.Placement{Committed: 29, Clamped: true, FramesEvicted: 17}},
		{"partition created after the snapshot replays whole", seek.Target{Snapshot: "s"}, state(30, 41, ptr[int64](41), nil),
			store.Placement{Committed: 29}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := seek.Place(c.target, c.st)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("Place = %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestPlaceRefusesAnOffsetOutsideTheRetainedRange(t *testing.T) {
	for _, off := range []int64{28, 42, -5} {
		_, err := seek.Place(seek.Target{Offset: &off}, state(30, 41, nil, nil))
		if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), "from 29 (replay everything retained) to 41 (skip to end)") {
			t.Errorf("offset %d: err = %v", off, err)
		}
	}
}

func TestValidate(t *testing.T) {
	now := time.Now()
	var zero int64
	cases := []struct {
		target seek.Target
		want   error
	}{
		{seek.Target{}, seek.ErrNoTarget},
		{seek.Target{ToEnd: true}, nil},
		{seek.Target{Time: &now}, nil},
		{seek.Target{Offset: &zero}, nil},
		{seek.Target{ToEnd: true, Time: &now}, seek.ErrManyTargets},
		{seek.Target{Time: &now, Offset: &zero}, seek.ErrManyTargets},
		{seek.Target{Snapshot: "s"}, nil},
		{seek.Target{Snapshot: "s", ToEnd: true}, seek.ErrManyTargets},
	}
	for _, c := range cases {
		if err := c.target.Validate(); !errors.Is(err, c.want) {
			t.Errorf("Validate(%+v) = %v, want %v", c.target, err, c.want)
		}
	}
	if seek.ErrNoTarget.Error() != "Must specify toEnd=true or a timestamp" {
		t.Errorf("ErrNoTarget text changed: %q", seek.ErrNoTarget)
	}
}
