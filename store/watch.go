package store

import (
	"strings"
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
	log changeLog     // the queues the last changes changed, for them too
}

type watchEntry struct {
	ch      chan struct{}
	waiters int
	// parked is the pops parked with Park, by group, in no order; each
	// knows its index. nparked counts them.
	parked  map[string][]*ParkedPop
	nparked int
}

// watchChange is a committed change to the queue of key; to what only
// group can take from it (an ack that ended its lease), if group is set.
type watchChange struct{ key, group string }

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
			if e.waiters == 0 && e.nparked == 0 && s.watch.byQ[k] == e {
				delete(s.watch.byQ, k)
			}
		})
	}
}

// changeLogSize is how many changed queues the watchers remember, in
// commit order, for pops of a namespace or task (WatchChanges); a pop
// whose last look is further back looks at every queue again.
const changeLogSize = 4096

// maxChangedQueues bounds the queues a pop of a namespace or task looks
// at alone after a wake; past it, it looks at every queue again.
const maxChangedQueues = 256

// changeLog is the queues changed by the last changeLogSize changes:
// the change numbered n (from 1) is keys[n % changeLogSize].
type changeLog struct {
	seq  int64
	keys [changeLogSize]string
}

// WatchChanges is Watch for a pop of a namespace or task, which may take
// from any of tenant's queues: a channel closed at the next committed
// change to any queue, and seq, the number of the last change so far.
// With since, the seq of the caller's previous call, it also returns the
// names of tenant's queues changed since then, in no order, unless all:
// since is negative, too far back, or more than maxChangedQueues changed.
// A pop woken by a commit then looks at those queues alone: one that
// looked at every queue of its namespace on every change anywhere made
// 100 parked namespace pops over 2,000 queues read 200,000 queues for
// each push.
func (s *Store) WatchChanges(tenant string, since int64) (changed <-chan struct{}, seq int64, queues []string, all bool) {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	l := &s.watch.log
	changed, seq = s.watch.any, l.seq
	if since < 0 || since > seq || seq-since > changeLogSize {
		return changed, seq, nil, true
	}
	prefix := watchKey(tenant, "")
	seen := map[string]bool{}
	queues = []string{}
	for n := since + 1; n <= seq; n++ {
		q, ok := strings.CutPrefix(l.keys[n%changeLogSize], prefix)
		if !ok || seen[q] {
			continue
		}
		if len(queues) == maxChangedQueues {
			return changed, seq, nil, true
		}
		seen[q] = true
		queues = append(queues, q)
	}
	return changed, seq, queues, false
}

// Notify wakes whoever waits on tenant's queue, for changes made outside a
// write (a lease that expired, say). Pops parked with Park are told to
// look again: no writer is at hand to claim for them.
func (s *Store) Notify(tenant, queue string) {
	for _, p := range s.watch.notify([]watchChange{{key: watchKey(tenant, queue)}}) {
		p.done <- errLookAgain
	}
}

// watching is how many queues have a waiter, for tests and metrics.
func (s *Store) watching() int {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	return len(s.watch.byQ)
}

// notify closes the channels of the queues changed and takes the pops
// parked on them, which the caller must answer, each exactly once. A
// change only a group can take from takes only that group's parked pops;
// it still closes the channel, which only those who wait without Park
// (or have yet to park) wait on, as every change did.
func (w *watchers) notify(changes []watchChange) []*ParkedPop {
	if len(changes) == 0 {
		return nil
	}
	var taken []*ParkedPop
	w.mu.Lock()
	defer w.mu.Unlock()
	take := func(ps []*ParkedPop) {
		for _, p := range ps {
			p.state, p.entry = parkTaken, nil
		}
		taken = append(taken, ps...)
	}
	for _, c := range changes {
		e := w.byQ[c.key]
		if e == nil {
			continue
		}
		if c.group != "" {
			if ps := e.parked[c.group]; len(ps) > 0 {
				take(ps)
				delete(e.parked, c.group)
				e.nparked -= len(ps)
			}
		} else {
			for _, ps := range e.parked {
				take(ps)
			}
			e.parked, e.nparked = nil, 0
		}
		close(e.ch)
		if e.nparked == 0 {
			delete(w.byQ, c.key)
		} else {
			// Pops of other groups stay parked on it, under a new channel.
			e.ch = make(chan struct{})
		}
	}
	for _, c := range changes {
		w.log.seq++
		w.log.keys[w.log.seq%changeLogSize] = c.key
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
	e.add(p)
	return true
}

func (e *watchEntry) add(p *ParkedPop) {
	if e.parked == nil {
		e.parked = map[string][]*ParkedPop{}
	}
	g := p.req.Group
	p.entry, p.idx, p.state = e, len(e.parked[g]), parkWaiting
	e.parked[g] = append(e.parked[g], p)
	e.nparked++
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
	e, g := p.entry, p.req.Group
	ps := e.parked[g]
	last := ps[len(ps)-1]
	ps[p.idx], last.idx = last, p.idx
	ps[len(ps)-1] = nil
	if ps = ps[:len(ps)-1]; len(ps) == 0 {
		delete(e.parked, g)
	} else {
		e.parked[g] = ps
	}
	e.nparked--
	p.state, p.entry = parkLeft, nil
	if e.nparked == 0 && e.waiters == 0 && w.byQ[p.key] == e {
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
	e.add(p)
	return true
}

// parkedOn is how many pops are parked on tenant's queue, for tests.
func (s *Store) parkedOn(tenant, queue string) int {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	if e := s.watch.byQ[watchKey(tenant, queue)]; e != nil {
		return e.nparked
	}
	return 0
}
