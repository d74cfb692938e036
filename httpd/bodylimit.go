package httpd

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

// Request bodies are the one thing a client can make the server hold in
// memory at will. Three bounds keep that in hand, for every route alike:
//
//   - a body declaring a Content-Length over MaxBodyBytes is refused (413)
//     before a byte of it is read, and a chunked one is cut at the limit;
//   - the bytes of bodies held at once (read, and not yet answered) are
//     bounded by MaxBodyBytesInFlight: a body that finds no room waits up
//     to BodyWait, then is refused with 503 and Retry-After, unread. It
//     bounds memory, and it keeps large pushes from queueing up in the
//     writer ahead of everyone else's small ones. The first bodyStep
//     bytes of every body are outside the bound, so small requests (the
//     usual push, ack or pop) are never held up by large ones. A body of
//     unknown length (chunked) takes its room as it arrives, so bodies
//     that each hold part of the room could all wait for more, and none
//     give any back: the one that began taking room first never waits,
//     so one of them always goes on, and the room it frees lets the
//     next;
//   - a body must keep arriving: after a grace period it must average
//     MinBodyRate bytes a second, or the read fails (408) and the
//     connection closes, so a body trickled a byte at a time does not hold
//     a connection, or its share of the bound, for minutes.

// Defaults of the body bounds.
const (
	// DefaultMaxBodyBytesInFlight bounds the body bytes of all requests
	// being read at once.
	DefaultMaxBodyBytesInFlight = 16 << 20
	// DefaultMinBodyRate is the least average rate, in bytes a second, at
	// which a body must arrive once BodyGrace has passed: a byte a second
	// is cut after the grace. Whatever its rate, a body is cut after
	// maxBodyTime.
	DefaultMinBodyRate = 1 << 10
	// maxBodyTime bounds the reading of one body, as the server's
	// ReadTimeout did before bodies were paced here.
	maxBodyTime = 5 * time.Minute
	// DefaultBodyGrace is how long a body may take before the rate counts.
	DefaultBodyGrace = 10 * time.Second
	// DefaultBodyWait is how long a body waits for room under
	// MaxBodyBytesInFlight before it is refused.
	DefaultBodyWait = 15 * time.Second
	// bodyStep is how much room a body of unknown length takes at a time,
	// and what any body reads before it needs room.
	bodyStep = 64 << 10
)

// Errors of the body bounds.
var (
	// errBodiesBusy is a body refused for want of room under
	// MaxBodyBytesInFlight; it may be sent again shortly.
	errBodiesBusy = errors.New("too many request body bytes in flight, retry shortly")
	// errBodyTooSlow is a body that stopped arriving at MinBodyRate.
	errBodyTooSlow = errors.New("request body arrived too slowly")
)

// bodyGate counts the body bytes being held, and lets a request wait for
// room. Any one request may take the whole room, so a single body up to
// MaxBodyBytes is never refused for its own size; and of the bodies that
// take room step by step, the first to begin (the lowest ticket) may
// take room past the bound, so that they cannot all wait on each other.
type bodyGate struct {
	max   int64
	wait  time.Duration
	mu    sync.Mutex
	inUse int64
	freed chan struct{} // closed and replaced whenever room is given back
	next  uint64        // the last ticket handed out
	// stepping holds the tickets of the bodies taking room step by
	// step, until they are done; order holds tickets in the order they
	// were handed out, from the oldest that may still be live.
	stepping map[uint64]struct{}
	order    []uint64
	// squeeze, if set, runs when a request begins to wait for room and
	// every squeezeEvery while it waits: what may make room sooner than
	// its holders would give it back (roomWrites.squeeze).
	squeeze      func()
	squeezeEvery time.Duration
}

func newBodyGate(max int64, wait time.Duration) *bodyGate {
	return &bodyGate{max: max, wait: wait, freed: make(chan struct{}), stepping: make(map[uint64]struct{})}
}

// acquire takes n bytes of room, waiting up to g.wait (or until ctx ends).
// ticket is 0 for a body taking its room at once; a body taking it step
// by step passes the same ticket every time, set by its first call, and
// ends it with done.
func (g *bodyGate) acquire(ctx context.Context, n int64, ticket *uint64) error {
	return g.grow(ctx, 0, n, ticket)
}

// grow is acquire for a holder of have bytes of room already, which it
// keeps while it waits: it may take room past the bound when it is the
// only holder, as any one body may take the whole room.
func (g *bodyGate) grow(ctx context.Context, have, n int64, ticket *uint64) error {
	var timer *time.Timer
	var squeezing <-chan time.Time
	for {
		g.mu.Lock()
		if ticket != nil && *ticket == 0 {
			g.next++
			*ticket = g.next
			g.stepping[*ticket] = struct{}{}
			g.order = append(g.order, *ticket)
		}
		if g.inUse == have || g.inUse+n <= g.max || (ticket != nil && g.first(*ticket)) {
			g.inUse += n
			g.mu.Unlock()
			if timer != nil {
				timer.Stop()
			}
			return nil
		}
		freed := g.freed
		g.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(g.wait)
			defer timer.Stop()
			if g.squeeze != nil {
				g.squeeze()
				tick := time.NewTicker(g.squeezeEvery)
				defer tick.Stop()
				squeezing = tick.C
			}
		}
		select {
		case <-freed:
		case <-squeezing:
			g.squeeze()
		case <-timer.C:
			return errBodiesBusy
		case <-ctx.Done():
			return errBodiesBusy
		}
	}
}

// takeHalf takes half the room that is free, up to n, without waiting,
// and returns how much it took: of many takers at once, the first take
// what they ask for while room is plenty, and the later ones less and
// less, but none nothing while a byte is free.
func (g *bodyGate) takeHalf(n int64) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	t := max(min(n, (g.max-g.inUse)/2), 0)
	g.inUse += t
	return t
}

// first reports whether ticket is the oldest of the bodies stepping.
// Every waiter asks again each time room comes back, and thousands of
// chunked bodies may wait at once, so the answer costs no walk over them:
// release keeps the oldest live ticket at the front of order.
func (g *bodyGate) first(ticket uint64) bool {
	return len(g.order) > 0 && g.order[0] == ticket
}

// release gives n bytes of room back, and ends ticket (if not 0).
func (g *bodyGate) release(n int64, ticket uint64) {
	if n == 0 && ticket == 0 {
		return
	}
	g.mu.Lock()
	g.inUse -= n
	delete(g.stepping, ticket)
	for len(g.order) > 0 {
		if _, live := g.stepping[g.order[0]]; live {
			break
		}
		g.order = g.order[1:]
	}
	if len(g.order) == 0 {
		g.order = nil // the array of tickets long done goes too
	}
	close(g.freed)
	g.freed = make(chan struct{})
	g.mu.Unlock()
}

// boundedBody is a request body read under the bounds above. Its room is
// given back when the handler has returned (done), since what the body
// decoded into is held until then.
type boundedBody struct {
	rc      io.ReadCloser
	w       http.ResponseWriter
	ctx     context.Context
	gate    *bodyGate
	ctl     *http.ResponseController
	held    int64  // bytes it may read: room taken from gate, plus free
	free    int64  // the part of held not taken from gate
	whole   bool   // the declared length is held: no read can go past it
	ticket  uint64 // its place among the bodies taking room step by step
	read    int64
	start   time.Time
	grace   time.Duration
	minRate int64
	limited bool // a read deadline is set and must be lifted at the end
	err     error
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if !b.whole {
		// Room is taken a step at a time, as the body arrives; a read
		// never goes past the room held.
		if b.read >= b.held {
			if err := b.gate.acquire(b.ctx, bodyStep, &b.ticket); err != nil {
				b.err = err
				shut(b.w, b.ctl)
				return 0, err
			}
			b.held += bodyStep
		}
		p = p[:min(int64(len(p)), b.held-b.read)]
	}
	// The deadline moves on with every byte that arrives: a body keeping
	// to the rate never meets it.
	deadline := b.start.Add(min(b.grace+time.Duration(b.read*int64(time.Second)/b.minRate), maxBodyTime))
	if b.ctl.SetReadDeadline(deadline) == nil {
		b.limited = true
	}
	n, err := b.rc.Read(p)
	b.read += int64(n)
	if err != nil && !errors.Is(err, io.EOF) && (errors.Is(err, os.ErrDeadlineExceeded) || time.Now().After(deadline)) {
		// The deadline stays: net/http would otherwise wait for the rest
		// of the body, at the trickle's pace, before sending the answer.
		b.err = errBodyTooSlow
		b.limited = false
		shut(b.w, nil)
		return n, b.err
	}
	if err != nil {
		b.lift()
		b.err = err
	}
	return n, err
}

// shut makes the answer to a request whose body is left unread the last
// on its connection, and, with ctl, stops net/http from reading the rest
// of the body before it sends that answer (it does, for a short rest, to
// keep the connection) at whatever pace the client sends it.
func shut(w http.ResponseWriter, ctl *http.ResponseController) {
	w.Header().Set("Connection", "close")
	if ctl != nil {
		ctl.SetReadDeadline(time.Now())
	}
}

// lift takes the body's read deadline away once the body has ended, so
// that it never cuts the connection while the handler works or a reply
// long-polls.
func (b *boundedBody) lift() {
	if b.limited {
		b.ctl.SetReadDeadline(time.Time{})
		b.limited = false
	}
}

func (b *boundedBody) Close() error { return b.rc.Close() }

func (b *boundedBody) done() {
	b.lift()
	b.gate.release(b.held-b.free, b.ticket)
	b.held, b.free, b.ticket = 0, 0, 0
}

// smallBodyBytes bounds the bodies of the routes that carry no messages
// or stream state (configure, seeks, snapshots, re-drives, traces,
// forwarders, registrations, ...): each decodes its body whole, into
// several times its size, and none needs more than a few kilobytes; a
// re-drive of a million ids (40 MB) took the server to 205 MB before it
// was refused, and a trace of 63 MB to 300 MB.
const smallBodyBytes = 1 << 20

// bodyLimit is the most body r may carry: Config.MaxBodyBytes for the
// routes that carry messages or stream state, smallBodyBytes (or less)
// for the rest.
func (s *Handler) bodyLimit(r *http.Request) int64 {
	switch r.URL.Path {
	case "/api/v1/push", "/api/v1/ack", "/api/v1/ack/batch", "/api/v1/transaction", "/streams/v1/cycle":
		return s.cfg.MaxBodyBytes
	}
	return min(s.cfg.MaxBodyBytes, smallBodyBytes)
}

// bindBody refuses a declared body over the limit, takes room for a
// declared one and wraps the body in a boundedBody. It answers the
// request itself and returns false when the body is refused. done gives
// the room back; call it once the handler has returned.
func (s *Handler) bindBody(w http.ResponseWriter, r *http.Request) (done func(), ok bool) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return func() {}, true
	}
	ctl := http.NewResponseController(w)
	if limit := s.bodyLimit(r); r.ContentLength > limit {
		shut(w, ctl) // answered unread
		s.fail(w, r, &http.MaxBytesError{Limit: limit})
		return nil, false
	}
	b := &boundedBody{rc: r.Body, w: w, ctx: r.Context(), gate: s.bodies, ctl: ctl,
		start: time.Now(), grace: s.cfg.BodyGrace, minRate: s.cfg.MinBodyRate}
	b.held, b.free = bodyStep, bodyStep // free: see above
	b.whole = r.ContentLength > 0 && r.ContentLength <= bodyStep
	if r.ContentLength > bodyStep {
		// Known up front: taken at once (+1 for the read that sees EOF), so
		// the body is read into one buffer of its size.
		if err := s.bodies.acquire(r.Context(), r.ContentLength+1, nil); err != nil {
			shut(w, ctl)
			s.fail(w, r, err)
			return nil, false
		}
		b.held, b.free, b.whole = r.ContentLength+1, 0, true
		b.start = time.Now() // the wait for room is not the sender's
	}
	r.Body = b
	return b.done, true
}

// isBodyBound reports whether err is one of the body bounds (too large,
// no room, too slow), which errorStatus answers with their own statuses.
func isBodyBound(err error) bool {
	var tooBig *http.MaxBytesError
	return errors.As(err, &tooBig) || errors.Is(err, errBodiesBusy) || errors.Is(err, errBodyTooSlow)
}
