package httpd

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Of the bodies taking room step by step, the oldest live one may take
// room past the bound; the others wait for room, and the next oldest
// takes the first one's place once it is done, whichever order the
// bodies end in.
func TestTheOldestSteppingBodyNeverWaitsForRoom(t *testing.T) {
	ctx := context.Background()
	g := newBodyGate(100, 20*time.Millisecond)
	var a, b, c uint64
	for _, step := range []struct {
		name   string
		ticket *uint64
		n      int64
		busy   bool
	}{
		{"a takes room", &a, 60, false},
		{"b takes the rest", &b, 40, false},
		{"c finds none", &c, 10, true},
		{"b, not the oldest, waits", &b, 10, true},
		{"a, the oldest, goes past the bound", &a, 50, false},
	} {
		if err := g.acquire(ctx, step.n, step.ticket); errors.Is(err, errBodiesBusy) != step.busy {
			t.Fatalf("%s: %v", step.name, err)
		}
	}
	// b ends first: a is still the oldest, and c is not.
	g.release(40, b)
	if !g.first(a) || g.first(c) {
		t.Fatalf("b done: first(a) %v, first(c) %v; want a alone", g.first(a), g.first(c))
	}
	g.release(110, a)
	if !g.first(c) {
		t.Fatal("a and b done: c is not the oldest")
	}
	if err := g.acquire(ctx, 500, &c); err != nil {
		t.Fatalf("c, now the oldest, past the bound: %v", err)
	}
	// A body that takes its room at once has no ticket and never jumps
	// the bound.
	if err := g.acquire(ctx, 10, nil); !errors.Is(err, errBodiesBusy) {
		t.Fatalf("a declared body while c holds more than the room: %v", err)
	}
	g.release(500, c)
	if g.inUse != 0 || len(g.stepping) != 0 || len(g.order) != 0 {
		t.Fatalf("all done: %d bytes in use, %d tickets live, %d in order", g.inUse, len(g.stepping), len(g.order))
	}
}
