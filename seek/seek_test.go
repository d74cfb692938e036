package seek_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/seek"
)

var t0 = time.Date(2026, 7, 30, 10, 0, 0, 0, time.UTC)

func state(logStart, last int64, committed *int64, landing *seek.Segment) *seek.State {
	st := &seek.State{
		Name: "p", LogStart: logStart, LastOffset: last, LastSegmentAt: t0.Add(time.Hour).UnixMicro(),
		Committed: logStart - 1,
		Landing:   landing,
	}
	if committed != nil {
		st.HasCursor, st.Committed = true, *committed
	}
	return st
}

func ptr[T any](v T) *T { return &v }

func withCaptured(st *seek.State, c int64) *seek.State {
	st.Captured = &c
	return st
}

func TestPlace(t *testing.T) {
	at := ptr(t0)
	cases := []struct {
		name   string
		target seek.Target
		st     *seek.State
		want   seek.Placement
	}{
		{"to end", seek.Target{ToEnd: true}, state(0, 41, ptr[int64](3), nil), seek.Placement{Committed: 41}},
		{"to end of an empty partition", seek.Target{ToEnd: true}, state(0, -1, nil, nil), seek.Placement{Committed: -1}},
		{"time lands just below its segment", seek.Target{Time: at}, state(0, 41, ptr[int64](41),
			&seek.Segment{BaseOffset: 20, FrameCount: 10}), seek.Placement{Committed: 19, OvershootBound: 9}},
		{"time with nothing that recent is a future-only cursor", seek.Target{Time: at}, state(0, 41, ptr[int64](3), nil),
			seek.Placement{Committed: 41}},
		{"time on the first segment of an unretained log is not clamped", seek.Target{Time: at}, state(0, 41, nil,
			&seek.Segment{BaseOffset: 0, FrameCount: 1}), seek.Placement{Committed: -1}},
		{"time resolving to the oldest retained segment is clamped", seek.Target{Time: at}, state(30, 41, ptr[int64](41),
			&seek.Segment{BaseOffset: 30, FrameCount: 5}), seek.Placement{Committed: 29, OvershootBound: 4, Clamped: true, FramesEvicted: 30}},
		{"time above the oldest retained segment is not clamped", seek.Target{Time: at}, state(30, 41, ptr[int64](41),
			&seek.Segment{BaseOffset: 35, FrameCount: 5}), seek.Placement{Committed: 34, OvershootBound: 4}},
		{"time on a fully evicted partition newer than its data", seek.Target{Time: ptr(t0.Add(2 * time.Hour))},
			state(42, 41, ptr[int64](10), nil), seek.Placement{Committed: 41}},
		{"time on a fully evicted partition older than its data", seek.Target{Time: at},
			state(42, 41, ptr[int64](10), nil), seek.Placement{Committed: 41, Clamped: true, FramesEvicted: 42}},
		{"offset", seek.Target{Offset: ptr[int64](7)}, state(0, 41, ptr[int64](41), nil), seek.Placement{Committed: 7}},
		{"offset at the floor", seek.Target{Offset: ptr[int64](29)}, state(30, 41, nil, nil), seek.Placement{Committed: 29}},
		{"snapshot restores the captured value", seek.Target{Snapshot: "s"}, withCaptured(state(0, 41, ptr[int64](41), nil), 12),
			seek.Placement{Committed: 12}},
		{"snapshot below the watermark is clamped exactly", seek.Target{Snapshot: "s"}, withCaptured(state(30, 41, ptr[int64](41), nil), 12),
			seek.Placement{Committed: 29, Clamped: true, FramesEvicted: 17}},
		{"partition created after the snapshot replays whole", seek.Target{Snapshot: "s"}, state(30, 41, ptr[int64](41), nil),
			seek.Placement{Committed: 29}},
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
		if !errors.Is(err, seek.ErrOffsetOutOfRange) || !strings.Contains(err.Error(), "from 29 (replay everything retained) to 41 (skip to end)") {
			t.Errorf("offset %d: err = %v", off, err)
		}
	}
}

// TestSeedIsPlace pins that a group's first cursors start where a seek
// would put them: from a time by Place's time rule, at the end by ToEnd,
// and otherwise at the floor.
func TestSeedIsPlace(t *testing.T) {
	at := ptr(t0)
	states := []*seek.State{
		state(0, 41, nil, &seek.Segment{BaseOffset: 20, FrameCount: 10}),
		state(0, 41, nil, nil),
		state(30, 41, nil, &seek.Segment{BaseOffset: 30, FrameCount: 5}),
		state(42, 41, nil, nil),
		state(0, -1, nil, nil),
	}
	for i, st := range states {
		for _, c := range []struct {
			start  seek.Start
			target seek.Target
		}{
			{seek.Start{Time: at}, seek.Target{Time: at}},
			{seek.Start{End: true}, seek.Target{ToEnd: true}},
		} {
			pl, err := seek.Place(c.target, st)
			if err != nil {
				t.Fatal(err)
			}
			if got := seek.Seed(c.start, st); got != pl.Committed {
				t.Errorf("state %d, start %+v: Seed = %d, Place = %d", i, c.start, got, pl.Committed)
			}
		}
		if got := seek.Seed(seek.Start{}, st); got != st.Floor() {
			t.Errorf("state %d: Seed from the start = %d, want the floor %d", i, got, st.Floor())
		}
	}
}

func TestParseSubscription(t *testing.T) {
	cases := []struct {
		mode, from, def string
		want            string
	}{
		{"", "", "all", seek.ModeAll},
		{"", "", "new", seek.ModeNew},
		{"new-only", "", "all", seek.ModeNew},
		{"NEW", "", "all", seek.ModeNew},
		{"all", "now", "all", seek.ModeNew},
		{"all", "2026-07-30T10:00:00Z", "all", seek.ModeTimestamp},
		{"all", "yesterday-ish", "all", seek.ModeNew},
		{"whatever", "", "new", seek.ModeAll},
	}
	for _, c := range cases {
		got := seek.ParseSubscription(c.mode, c.from, c.def)
		if got.Mode != c.want || (got.Mode == seek.ModeTimestamp) != (got.From != nil) {
			t.Errorf("ParseSubscription(%q, %q, %q) = %+v, want mode %s", c.mode, c.from, c.def, got, c.want)
		}
	}
}

// TestImpliedIsWhatSeedWroteThen: a missing cursor reads where Seed put
// it at registration. The partition then (last offset head, a landing or
// none) grew since: later segments, some committed at or after the time,
// and retention that may have passed the position.
func TestImpliedIsWhatSeedWroteThen(t *testing.T) {
	at := ptr(t0)
	cases := []struct {
		name        string
		then, now   *seek.State
		start       seek.Start
		want        int64
		headAtStart int64
	}{
		{"all, retention since", state(0, 41, nil, nil), state(10, 60, nil, nil), seek.Start{}, 9, 41},
		{"new, grown since", state(0, 41, nil, nil), state(0, 60, nil, nil), seek.Start{End: true}, 41, 41},
		{"new, retention passed the head", state(0, 41, nil, nil), state(50, 60, nil, nil), seek.Start{End: true}, 49, 41},
		{"new, empty then", state(0, -1, nil, nil), state(0, 9, nil, nil), seek.Start{End: true}, -1, -1},
		{"time, landing then", state(0, 41, nil, &seek.Segment{BaseOffset: 20, FrameCount: 10}),
			state(0, 60, nil, &seek.Segment{BaseOffset: 20, FrameCount: 10}), seek.Start{Time: at}, 19, 41},
		{"time, no landing then, one since", state(0, 41, nil, nil),
			state(0, 60, nil, &seek.Segment{BaseOffset: 42, FrameCount: 10}), seek.Start{Time: at}, 41, 41},
		{"time, no landing then, a later one since", state(0, 41, nil, nil),
			state(0, 60, nil, &seek.Segment{BaseOffset: 52, FrameCount: 8}), seek.Start{Time: at}, 41, 41},
		{"time, no landing yet", state(0, 41, nil, nil), state(0, 60, nil, nil), seek.Start{Time: at}, 41, 41},
	}
	for _, c := range cases {
		if seeded := seek.Seed(c.start, c.then); max(seeded, c.now.Floor()) != c.want {
			t.Fatalf("%s: the case is wrong: Seed then = %d", c.name, seeded)
		}
		if got := seek.Implied(c.start, c.headAtStart, c.now); got != c.want {
			t.Errorf("%s: Implied = %d, want %d", c.name, got, c.want)
		}
	}
}
