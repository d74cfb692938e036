package httpd

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
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

// A body of unknown length comes back whole and in order, whatever the
// sizes its reads return, and one past the limit comes back as the
// limit's error alone.
func TestABodyOfUnknownLengthIsReadWhole(t *testing.T) {
	want := make([]byte, 3<<20+12345)
	for i := range want {
		want[i] = byte(i*7 + i/4096)
	}
	for _, size := range []int{0, 100, 5000, 3 << 20} {
		got, err := readUnknownLength(&oddReader{b: want}, make([]byte, 0, 512), nil)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("read of %d bytes: %d bytes back, err %v", len(want), len(got), err)
		}
		small := want[:size]
		got, err = readUnknownLength(&oddReader{b: small}, make([]byte, 0, 512), nil)
		if err != nil || !bytes.Equal(got, small) {
			t.Fatalf("read of %d bytes: %d bytes back, err %v", size, len(got), err)
		}
	}
	rec := httptest.NewRecorder()
	got, err := readUnknownLength(http.MaxBytesReader(rec, io.NopCloser(&oddReader{b: want}), 1<<20), nil, nil)
	var tooBig *http.MaxBytesError
	if !errors.As(err, &tooBig) || got != nil {
		t.Fatalf("past the limit: %d bytes back, err %v", len(got), err)
	}
}

// The blocks one chunked body was read into go to the next: what the
// first came back as (a copy, joined) is not written over, and a body
// cut at the limit gives its blocks back too.
func TestBlocksOfABodyReadGoToTheNextWithoutSharingItsBytes(t *testing.T) {
	var pool bodyBlocks
	bodies := make([][]byte, 4)
	got := make([][]byte, 4)
	for i := range bodies {
		bodies[i] = bytes.Repeat([]byte{byte('a' + i)}, 3<<20+i*1000)
		if i == 2 {
			// Past the limit: 413 from the error, its blocks kept.
			rec := httptest.NewRecorder()
			_, err := readUnknownLength(http.MaxBytesReader(rec, io.NopCloser(&oddReader{b: bodies[i]}), 2<<20), nil, &pool)
			var tooBig *http.MaxBytesError
			if !errors.As(err, &tooBig) {
				t.Fatalf("body %d past the limit: err %v", i, err)
			}
			continue
		}
		var err error
		if got[i], err = readUnknownLength(&oddReader{b: bodies[i]}, make([]byte, 0, 512), &pool); err != nil {
			t.Fatal(err)
		}
	}
	for i := range bodies {
		if i != 2 && !bytes.Equal(got[i], bodies[i]) {
			t.Errorf("body %d changed after the next bodies were read", i)
		}
	}
}

// oddReader returns its bytes in reads of varying, odd sizes.
type oddReader struct {
	b []byte
	n int
}

func (r *oddReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	r.n++
	k := min(len(p), len(r.b), 1+(r.n*7919)%70000)
	copy(p, r.b[:k])
	r.b = r.b[k:]
	return k, nil
}
