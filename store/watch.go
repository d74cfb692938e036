package store

import (
	"encoding/json"
	"sync"
)

// watchers wake parked pops: a channel per watched queue, closed when a
// commit changes that queue and replaced on the next Watch. Only queues
// somebody waits on have an entry, so the map does not grow with the data.
type watchers struct {
	mu  sync.Mutex
	byQ map[string]chan struct{}
	any chan struct{} // closed on every change, for namespace pops
}

func (w *watchers) init() {
	w.byQ = map[string]chan struct{}{}
	w.any = make(chan struct{})
}

func watchKey(tenant, queue string) string { return tenant + "\x00" + queue }

// Watch returns a channel closed at the next committed change to tenant's
// queue (a push, a released lease, a seek). Take it before looking at the
// database, so a change between the look and the wait is not missed.
func (s *Store) Watch(tenant, queue string) <-chan struct{} {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	k := watchKey(tenant, queue)
	ch := s.watch.byQ[k]
	if ch == nil {
		ch = make(chan struct{})
		s.watch.byQ[k] = ch
	}
	return ch
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

func (w *watchers) notify(keys []string) {
	if len(keys) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range keys {
		if ch := w.byQ[k]; ch != nil {
			close(ch)
			delete(w.byQ, k)
		}
	}
	close(w.any)
	w.any = make(chan struct{})
}

// appendJSONString appends s as a JSON string.
func appendJSONString(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			b, _ := json.Marshal(s)
			return append(buf, b...)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}
