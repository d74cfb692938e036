package store

import (
	"fmt"

	"github.com/comb-broker/comb/combtype"
)

// A client can subscribe consumer groups without end: every pop that names
// a new group on a queue records a subscription (subscriptions.go), and a
// seek that names one creates it too. Every listing of groups, a queue's
// detail and the status read each of them, and a queue's background sum
// (groupstats.go) holds one figure per group in memory: at a million
// groups on one queue a listing page took seconds and the server half a
// gigabyte. Options.MaxGroups bounds the subscriptions, every queue's and
// tenant's together, as JetStream's max_consumers bounds an account's
// consumers.
//
// The count is kept as queuelimit.go keeps the count of queues: counted
// once, at the first new subscription after the store opens (or after a
// delete of subscriptions, which forgets it), then carried from commit to
// commit. A subscription of a queue being deleted is not counted.

// groupMark is the count as an op began, for undoing the op (groupUndo).
type groupMark struct {
	count    txCount
	reserved int64
}

func (w *wtx) groupMark() groupMark { return groupMark{w.ngroups, w.groupsReserved} }

// groupUndo sets the count back to what it was before an op rolled back.
// A count the op took itself (the count was not known as it began) is
// kept, less what the op reserved: a pop refused at the bound rolls back,
// and counting the subscriptions again for each such pop would make a
// client sending them cost the writer a count each.
func (w *wtx) groupUndo(m groupMark) {
	if m.count.known || !w.ngroups.known {
		w.ngroups = m.count
		return
	}
	w.ngroups.n -= w.groupsReserved - m.reserved
}

// groupsLeft forgets the count: the transaction deleted subscriptions (a
// group or a queue deleted), and the next new one counts them again.
func (w *wtx) groupsLeft() { w.ngroups.known = false }

// reserveGroups checks that n more subscriptions fit the bound, and counts
// them. It writes nothing: a caller that finds its rows already written
// has its op rolled back by the error.
func (w *wtx) reserveGroups(n int64) error {
	c := &w.s.groups
	if c.max == 0 || n == 0 {
		return nil
	}
	if !w.ngroups.known {
		lo, hi := detachedTenantPrefix, detachedTenantPrefix+"\xff"
		if err := w.QueryRowContext(w.ctx, `SELECT count(*) FROM subscriptions
			WHERE queue_id IN (SELECT id FROM queues WHERE NOT (tenant >= ? AND tenant < ?))`,
			lo, hi).Scan(&w.ngroups.n); err != nil {
			return fmt.Errorf("count group subscriptions: %w", err)
		}
		w.ngroups.known = true
		// The rows the caller wrote are in the count already.
		w.ngroups.n -= n
	}
	if w.ngroups.n+n > c.max {
		return fmt.Errorf("%w: the database holds %d consumer group subscriptions, the most it may is %d",
			combtype.ErrGroupLimit, w.ngroups.n, c.max)
	}
	w.ngroups.n += n
	w.groupsReserved += n
	return nil
}
