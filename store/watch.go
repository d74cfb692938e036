package store

import (
	"sync"
)

// watchers wake parked pops: a channel per watched queue, closed when a
// commit changes that queue. An entry lives while someone waits on it and
// is dropped by the last to leave or by the change that closes it, so
// pops on queue names that never see a push leave nothing behind.
type watchers struct {
	mu  sync.Mutex
	byQ map[string]*watchEntry
	any chan struct{} // closed on every change, for namespace pops
}

type watchEntry struct {
	ch      chan struct{}
	waiters int
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
			if e.waiters == 0 && s.watch.byQ[k] == e {
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
// write (a lease that expired, say).
func (s *Store) Notify(tenant, queue string) {
	s.watch.notify([]string{watchKey(tenant, queue)})
}

// watching is how many queues have a waiter, for tests and metrics.
func (s *Store) watching() int {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	return len(s.watch.byQ)
}

func (w *watchers) notify(keys []string) {
	if len(keys) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range keys {
		if e := w.byQ[k]; e != nil {
			close(e.ch)
			delete(w.byQ, k)
		}
	}
	close(w.any)
	w.any = make(chan struct{})
}
