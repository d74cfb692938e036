package store

import (
	"sync"
)

// watchers wake parked pops: a channel per watched queue, closed when a
// commit changes that queue. An entry lives while someone waits on it and
// is dropped by the last to leave or by the change that closes it, so
// pops on queue names that never see a push leave nothing behind. A pop
// parked with Park is not woken by the channel: the commit that changes
// its queue takes it, and the writer claims for it (handed.go).
type watchers struct {
	mu  sync.Mutex
	byQ map[string]*watchEntry
	any chan struct{} // closed on every change, for namespace pops
}

type watchEntry struct {
	ch      chan struct{}
	waiters int
	parked  []*ParkedPop // in no order; each knows its index
}

func (w *watchers) init() {
	w.byQ = map[string]*watchEntry{}
	w.any = make(chan struct{})
}

func watchKey(tenant, queue string) string { return tenant + "\x00" + queue }

// Watch returns a channel closed at the next committed change to tenant's
// queue (a push, a released lease, a seek), and a release to call when the
// caller stops waiting. Take it before looking at the database, so a
// change between the look and the wait is not missed.
func (s *Store) Watch(tenant, queue string) (<-chan struct{}, func()) {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	k := watchKey(tenant, queue)
	e := s.watch.byQ[k]
	if e == nil {
		e = &watchEntry{ch: make(chan struct{})}
		s.watch.byQ[k] = e
	}
	e.waiters++
	var once sync.Once
	return e.ch, func() {
		once.Do(func() {
			s.watch.mu.Lock()
			defer s.watch.mu.Unlock()
			e.waiters--
			if e.waiters == 0 && len(e.parked) == 0 && s.watch.byQ[k] == e {
				delete(s.watch.byQ, k)
			}
		})
	}
}

// WatchAny returns a channel closed at the next committed change to any queue.
func (s *Store) WatchAny() <-chan struct{} {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	return s.watch.any
}

// Notify wakes whoever waits on tenant's queue, for changes made outside a
// write (a lease that expired, say). Pops parked with Park are told to
// look again: no writer is at hand to claim for them.
func (s *Store) Notify(tenant, queue string) {
	for _, p := range s.watch.notify([]string{watchKey(tenant, queue)}) {
		p.done <- errLookAgain
	}
}

// watching is how many queues have a waiter, for tests and metrics.
func (s *Store) watching() int {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	return len(s.watch.byQ)
}

// notify closes the channels of keys and takes the pops parked on them,
// which the caller must answer, each exactly once.
func (w *watchers) notify(keys []string) []*ParkedPop {
	if len(keys) == 0 {
		return nil
	}
	var taken []*ParkedPop
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range keys {
		if e := w.byQ[k]; e != nil {
			for _, p := range e.parked {
				p.state = parkTaken
			}
			taken = append(taken, e.parked...)
			e.parked = nil
			close(e.ch)
			delete(w.byQ, k)
		}
	}
	close(w.any)
	w.any = make(chan struct{})
	return taken
}

// park registers p on the entry whose channel is changed, unless changed
// is closed already (the entry was notified): false then.
func (w *watchers) park(p *ParkedPop, changed <-chan struct{}) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.byQ[p.key]
	if e == nil || e.ch != changed {
		return false
	}
	p.entry, p.idx, p.state = e, len(e.parked), parkWaiting
	e.parked = append(e.parked, p)
	return true
}

// leave takes p off its entry if the writer has not taken it yet; if it
// has, p is marked leaving, so that the writer answers it instead of
// parking it again.
func (w *watchers) leave(p *ParkedPop) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if p.state != parkWaiting {
		p.leaving = true
		return false
	}
	e := p.entry
	last := e.parked[len(e.parked)-1]
	e.parked[p.idx], last.idx = last, p.idx
	e.parked[len(e.parked)-1] = nil
	e.parked = e.parked[:len(e.parked)-1]
	p.state, p.entry = parkLeft, nil
	if len(e.parked) == 0 && e.waiters == 0 && w.byQ[p.key] == e {
		delete(w.byQ, p.key)
	}
	return true
}

// repark parks p again, taken by a commit whose claim found nothing for
// it, unless it is leaving (false). The writer calls it as that commit
// ends, before the commit's own changes are notified, so no change after
// the claim can pass it by.
func (w *watchers) repark(p *ParkedPop) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if p.leaving {
		return false
	}
	e := w.byQ[p.key]
	if e == nil {
		e = &watchEntry{ch: make(chan struct{})}
		w.byQ[p.key] = e
	}
	p.entry, p.idx, p.state = e, len(e.parked), parkWaiting
	e.parked = append(e.parked, p)
	return true
}

// parkedOn is how many pops are parked on tenant's queue, for tests.
func (s *Store) parkedOn(tenant, queue string) int {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	if e := s.watch.byQ[watchKey(tenant, queue)]; e != nil {
		return len(e.parked)
	}
	return 0
}
