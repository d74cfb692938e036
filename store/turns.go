package store

import "sync"

// maxTurns bounds the round-robin memory; past it, it starts over, which
// only costs fairness for a moment.
const maxTurns = 1 << 16

// turns remembers, per (queue, group), the partition a pop served last, so
// the next pop starts its walk after it: partitions take turns instead of
// the first ones in name order starving the rest.
type turns struct {
	mu   sync.Mutex
	last map[turnKey]string
	// full holds the (queue, group)s whose last pop took a full batch:
	// their next pop most likely finds something due too (see Pop).
	full map[turnKey]bool
}

type turnKey struct {
	queue int64
	group string
}

// next is the name a pop of (queue, group) starts after.
func (t *turns) next(queue int64, group string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last[turnKey{queue, group}]
}

// served records the partition a pop of (queue, group) claimed last.
func (t *turns) served(queue int64, group, partition string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.last == nil || len(t.last) >= maxTurns {
		t.last = map[turnKey]string{}
	}
	t.last[turnKey{queue, group}] = partition
}

// filled records whether the last pop of (queue, group) took as many
// messages as it asked for.
func (t *turns) filled(queue int64, group string, full bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := turnKey{queue, group}
	if !full {
		delete(t.full, k)
		return
	}
	if t.full == nil || len(t.full) >= maxTurns {
		t.full = map[turnKey]bool{}
	}
	t.full[k] = true
}

// wasFull reports whether the last pop of (queue, group) took a full batch.
func (t *turns) wasFull(queue int64, group string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.full[turnKey{queue, group}]
}
