package store

// Handed claims. One push to a queue wakes every pop parked on it, and
// each then queued its own claim: 10,000 goroutines woke at once, each to
// hand the writer a claim and wait again for its commit, while the
// writer, which had the claims to make, waited for them to arrive and
// shared the processors with them. A pop parked with Park is instead
// taken by the commit that changes its queue: the writer makes its claim
// itself, as the woken pop would have made it (the same claimOp, fused in
// the same waves), in the commits right after, and the pop wakes once,
// with its messages and lease in hand, to write its reply.

import (
	"errors"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// ParkedPop is a pop parked on one queue by Park.
type ParkedPop struct {
	s    *Store
	key  string
	req  popReq
	done chan error // the claim's outcome, or errLookAgain; sent once

	// until is when the pop stops waiting of itself, on the store's
	// clock: a claim that finds nothing due sooner parks it again.
	until time.Time

	// Guarded by the store's watchers' lock.
	state   int
	entry   *watchEntry
	idx     int
	leaving bool // Leave found it taken: answer it, do not park it again

	// Set by the writer when it takes the claim, read after done.
	claim *claimOp
	known bool   // the group was known to be subscribed
	gen   uint64 // the subscribed set's generation before the claim
}

const (
	parkWaiting = iota + 1
	parkTaken
	parkLeft
)

// errLookAgain answers a parked pop whose queue changed where no claim
// was made for it: it looks again itself.
var errLookAgain = errors.New("look again")

// Park parks a pop of one queue (r.Queue set) for wait, or until the
// next commit that changes the queue, which then claims for it; a claim
// that finds nothing due before wait has passed parks it again, without
// waking it. Not for an autoAck pop:
// its claim consumes, and a caller that left meanwhile would lose what it
// was handed. changed is the channel
// Watch returned before the pop last looked: nil is returned, and nothing
// parked, if it is closed already (the queue changed since the look).
// The pop waits on Done; to stop waiting it calls Leave, and if that
// reports the claim already taken, it must still wait on Done for the
// claim's outcome and dispose of what it was handed. Park keeps a copy of
// *r; r is a pointer so that the caller's frame, which stays on the stack
// while the pop waits, holds no copy of its own for the call.
func (s *Store) Park(tenant string, r *combtype.PopRequest, changed <-chan struct{}, wait time.Duration) *ParkedPop {
	p := &ParkedPop{s: s, key: watchKey(tenant, r.Queue), req: s.popRequest(tenant, *r), done: make(chan error, 1),
		until: s.clock.Now().Add(wait)}
	p.req.handed = true
	if !s.watch.park(p, changed) {
		return nil
	}
	return p
}

// Done receives once: the outcome of the claim the writer made for the
// pop, to pass to Result.
func (p *ParkedPop) Done() <-chan error { return p.done }

// Leave stops the wait, unless the writer has taken the claim (false):
// then its outcome still comes on Done.
func (p *ParkedPop) Leave() bool { return p.s.watch.leave(p) }

// Result is what the pop got, from what Done received: claimed is false
// when no claim was made (the pop looks again); res is then nil. A claim
// that found nothing due gives a result without messages, with the time
// to look again, as PopWoken does.
func (p *ParkedPop) Result(err error) (res *combtype.PopResult, claimed bool, _ error) {
	if errors.Is(err, errLookAgain) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	c := p.claim
	if c.found && !p.known {
		p.s.subs.add(subKey{p.req.Tenant, p.req.Queue, p.req.Group}, p.gen)
	}
	if c.res != nil {
		return c.res, true, nil
	}
	return &combtype.PopResult{Group: p.req.Group, WakeAt: c.wake}, true, nil
}

// handedOp is the write of p's claim, made as PopWoken makes it; the
// writer answers p on its done.
func (s *Store) handedOp(p *ParkedPop) *writeOp {
	k := subKey{p.req.Tenant, p.req.Queue, p.req.Group}
	p.gen = s.subs.generation()
	p.known = s.subs.has(k)
	p.claim = &claimOp{tenant: p.req.Tenant, queue: p.req.Queue, req: &p.req}
	return &writeOp{isolated: true, smallUndo: true, lazy: p.known && !p.req.AutoAck,
		apply: p.claim.apply, claim: p.claim, parked: p, done: p.done}
}

// reparked reports whether op, the write of a handed claim that committed
// without error, found nothing due before its pop stops waiting and so
// parked it again: the pop is then not answered. A change to the queue
// since the pop last looked was what the claim looked at, and the next
// change takes the pop again, as if it had woken, looked and parked.
func (s *Store) reparked(op *writeOp) bool {
	p, c := op.parked, op.claim
	if p == nil || c.res != nil || (!c.wake.IsZero() && c.wake.Before(p.until)) {
		return false
	}
	if c.found && !p.known {
		s.subs.add(subKey{p.req.Tenant, p.req.Queue, p.req.Group}, p.gen)
		p.known = true
	}
	return s.watch.repark(p)
}

// nextHanded is the write of the oldest claim the writer was handed and
// has not made yet, nil if none. Only the writer calls it.
func (s *Store) nextHanded() *writeOp {
	if len(s.handed) == 0 {
		return nil
	}
	p := s.handed[0]
	s.handed[0] = nil
	s.handed = s.handed[1:]
	if len(s.handed) == 0 {
		s.handed = nil
	}
	return s.handedOp(p)
}
