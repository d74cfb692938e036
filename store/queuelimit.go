package store

import (
	"fmt"
	"strconv"

	"github.com/comb-broker/comb/combtype"
)

// A client can create queues without end: one push of 100 items to 100
// new names makes 100 queues, and every queue costs memory for as long
// as the server runs (the tenant summaries, about 700 bytes each) and
// time in every listing. Options.MaxQueues bounds them, as JetStream's
// max_streams bounds an account's streams.
//
// The count is kept, not counted at each insert: a count(*) of 100,000
// rows on every new queue would make creating them quadratic, and a
// client sending writes the bound refuses would make the writer count
// each time. It is counted once, at the first insert after the store
// opens; from then on the store keeps it as of its last commit, and a
// transaction starts from it and adds its own inserts and detaches. A
// savepoint rolled back restores the count it began with; a transaction
// that fails leaves the store's count as it was, which its rollback makes
// true again.

// boundCount is the store's count of what a bound limits: queues, every
// tenant's, detached ones (queues being deleted) not counted; or group
// subscriptions (grouplimit.go).
type boundCount struct {
	max   int64 // 0: no bound, nothing counted
	n     int64 // as of the last commit, when known
	known bool
}

// txCount is a transaction's view of boundCount.
type txCount struct {
	n     int64
	known bool
}

func (c *boundCount) begin() txCount { return txCount{n: c.n, known: c.known} }

// commit keeps the count the transaction ended with.
func (c *boundCount) commit(t txCount) { c.n, c.known = t.n, t.known }

// queueLeft counts out a queue the transaction detached (a delete): its
// room is free at once, before the queue is emptied.
func (w *wtx) queueLeft() {
	if w.nqueues.known {
		w.nqueues.n--
	}
}

// reserveQueue checks that one more queue fits the bound, and counts it.
func (w *wtx) reserveQueue() error {
	c := &w.s.queues
	if c.max == 0 {
		return nil
	}
	if !w.nqueues.known {
		lo, hi := detachedTenantPrefix, detachedTenantPrefix+"\xff"
		if err := w.QueryRowContext(w.ctx, `SELECT count(*) FROM queues WHERE NOT (tenant >= ? AND tenant < ?)`,
			lo, hi).Scan(&w.nqueues.n); err != nil {
			return fmt.Errorf("count queues: %w", err)
		}
		w.nqueues.known = true
	}
	if w.nqueues.n >= c.max && !w.pastQueueBound {
		return fmt.Errorf("%w: the database holds %d queues, the most it may", combtype.ErrQueueLimit, w.nqueues.n)
	}
	w.nqueues.n++
	return nil
}

// countUpTo counts the rows query returns, up to bound: the checks of the
// bounds on forwarders, snapshots and streaming queries need no more, and
// a file made by hand, or under a larger bound, may hold many more.
func (w *wtx) countUpTo(query string, bound int, args ...any) (int, error) {
	var n int
	err := w.QueryRowContext(w.ctx, `SELECT count(*) FROM (`+query+` LIMIT `+strconv.Itoa(bound)+`)`, args...).Scan(&n)
	return n, err
}
