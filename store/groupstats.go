package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// Consumer-group figures of large queues. A (group, queue) pair's lag sums
// every cursor of the group on the queue, the lagging listing sorts every
// cursor by the age of its oldest unconsumed segment, and the metrics'
// depth looks at every partition: each is linear in the queue's
// partitions (6 s for the groups listing at 1M). As with the totals
// (totals.go), a queue up to the live limit is read on every request, and
// one above it is answered from a sum the same refresher makes again and
// again, the reply saying how old it is (statsAge).
//
// One pass over the queue's partitions and their cursors (partition order,
// through partitions_queue_id and the cursors' primary key) makes every
// figure at once: per group its cursor count, lag and oldest unconsumed
// segment, the queue's stored messages and depth, and the oldest
// lagKeep pending cursors for the first pages of the lagging listing.

// lagKeep is how many of a large queue's pending cursors, oldest first,
// the background sum keeps: two pages of the largest size. A lagging page
// reaching beyond them reads the queue's cursors live.
const lagKeep = 2*combtype.MaxPageLimit + 1

// groupSum is one group's figures on a queue; oldest is the created_at of
// its oldest unconsumed segment (0 when none), kept rather than an age so
// the age is told at the time of the read.
type groupSum struct {
	combtype.GroupSummary
	oldest int64
}

// lagRow is a pending cursor as the lagging listing shows it.
type lagRow struct {
	combtype.PartitionLag
	oldest int64
}

// lagLess is the lagging listing's order: oldest first, then group, queue
// and partition name (LaggingPage's ORDER BY oldest, 1, 2, 3).
func lagLess(a, b *lagRow) int {
	return cmp.Or(cmp.Compare(a.oldest, b.oldest), cmp.Compare(a.Group, b.Group), cmp.Compare(a.Queue, b.Queue),
		cmp.Compare(a.Partition, b.Partition))
}

// queueGroupStats is what one pass over a queue finds.
type queueGroupStats struct {
	groups  []groupSum // by group name
	lagging []lagRow   // the oldest lagKeep pending cursors, in lagLess order
	// lagAll is true when lagging holds every pending cursor.
	lagAll        bool
	stored, depth int64
}

type groupsEntry struct {
	tenant  string
	q       combtype.Queue
	stats   *queueGroupStats // nil until the first sum
	at      time.Time        // store clock when summed
	askedAt time.Time        // wall time of the last read
}

// sumQueueGroups makes q's figures in one pass, also telling the rows it
// read. Byte columns are scanned as RawBytes and copied only for the rows
// kept, so a million cursors do not make two million strings.
func sumQueueGroups(ctx context.Context, db querier, q *combtype.Queue, now int64) (*queueGroupStats, int64, error) {
	// A group's positions are its rows and the cursors its subscription
	// implies (implied.go): every partition is paired with every group of
	// the queue (a subscription or a row), and a pair with neither gives
	// a NULL group; a partition no group has met gives one such row, so
	// its stored messages are counted all the same.
	rows, err := db.QueryContext(ctx, `SELECT p.id, p.name, p.uuid, `+storedExpr+`,
		CASE WHEN c.committed IS NOT NULL OR s.group_name IS NOT NULL THEN gq.g END, c.lease_id,
		c.lease_expires_at, c.last_consumed_at, COALESCE(c.total_consumed, 0),
		CASE WHEN c.committed IS NOT NULL OR s.group_name IS NOT NULL THEN `+groupLagExpr+` ELSE 0 END,
		CASE WHEN c.committed IS NOT NULL OR s.group_name IS NOT NULL THEN `+groupOldestExpr+` END
		FROM partitions p INDEXED BY partitions_queue_id
		LEFT JOIN (SELECT group_name AS g FROM subscriptions WHERE queue_id = ?1
			UNION SELECT DISTINCT x.group_name FROM partitions xp JOIN cursors x ON x.partition_id = xp.id
				WHERE xp.queue_id = ?1) gq
		LEFT JOIN cursors c ON c.partition_id = p.id AND c.group_name = gq.g
		LEFT JOIN subscriptions s ON s.queue_id = p.queue_id AND s.group_name = gq.g
		WHERE p.queue_id = ?1 ORDER BY p.id`, q.ID)
	if err != nil {
		return nil, 0, fmt.Errorf("sum groups of queue %q: %w", q.Name, err)
	}
	defer rows.Close()
	st := &queueGroupStats{}
	byGroup := map[string]*groupSum{}
	var heap []lagRow // a max-heap in lagLess order, at most lagKeep rows
	pending := 0
	// The partition being read: its depth is the queue-mode cursor's lag,
	// else the largest lag of its cursors, else all it stores.
	cur, curStored, curQM, curMax := int64(-1), int64(0), int64(-1), int64(-1)
	flush := func() {
		if cur < 0 {
			return
		}
		switch {
		case curQM >= 0:
			st.depth += curQM
		case curMax >= 0:
			st.depth += curMax
		default:
			st.depth += curStored
		}
	}
	var (
		pid, stored, consumed, lag int64
		pname, puuid, group, lease sql.RawBytes
		leaseExp, lastAt, oldest   sql.NullInt64
	)
	var n int64
	for rows.Next() {
		n++
		if err := rows.Scan(&pid, &pname, &puuid, &stored, &group, &lease, &leaseExp, &lastAt, &consumed, &lag,
			&oldest); err != nil {
			return nil, 0, fmt.Errorf("scan groups of queue %q: %w", q.Name, err)
		}
		if pid != cur {
			flush()
			cur, curStored, curQM, curMax = pid, stored, -1, -1
			st.stored += stored
		}
		if group == nil { // no position of a group on this partition
			continue
		}
		curMax = max(curMax, lag)
		if string(group) == combtype.QueueModeGroup {
			curQM = lag
		}
		g := byGroup[string(group)]
		if g == nil {
			g = &groupSum{GroupSummary: combtype.GroupSummary{Group: string(group), Queue: q.Name}}
			byGroup[g.Group] = g
		}
		g.Cursors++
		g.TotalLag += lag
		g.TotalConsumed += consumed
		if lag > 0 {
			g.PartitionsWithLag++
		}
		if !oldest.Valid {
			continue
		}
		if g.oldest == 0 || oldest.Int64 < g.oldest {
			g.oldest = oldest.Int64
		}
		pending++
		if len(heap) == lagKeep && oldest.Int64 > heap[0].oldest {
			continue // the common case, told without making strings
		}
		r := lagRow{oldest: oldest.Int64}
		r.Group, r.Queue, r.Partition = g.Group, q.Name, string(pname)
		if len(heap) == lagKeep && lagLess(&r, &heap[0]) >= 0 {
			continue
		}
		r.PartitionID, r.LeaseID = string(puuid), string(lease)
		r.LeaseActive = lease != nil && leaseExp.Valid && leaseExp.Int64 > now
		if lastAt.Valid {
			r.LastConsumedAt = fromMicros(lastAt.Int64)
		}
		r.TotalConsumed, r.OffsetLag = consumed, lag
		r.OldestUnconsumedAt = fromMicros(oldest.Int64)
		if len(heap) == lagKeep {
			heap[0] = r
			siftDown(heap, 0)
		} else {
			heap = append(heap, r)
			siftUp(heap, len(heap)-1)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("sum groups of queue %q: %w", q.Name, err)
	}
	flush()
	for _, g := range byGroup {
		st.groups = append(st.groups, *g)
	}
	slices.SortFunc(st.groups, func(a, b groupSum) int { return cmp.Compare(a.Group, b.Group) })
	slices.SortFunc(heap, func(a, b lagRow) int { return lagLess(&a, &b) })
	st.lagging, st.lagAll = heap, pending == len(heap)
	return st, n, nil
}

// siftUp and siftDown keep h a max-heap in lagLess order.
func siftUp(h []lagRow, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if lagLess(&h[p], &h[i]) >= 0 {
			return
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func siftDown(h []lagRow, i int) {
	for {
		l, big := 2*i+1, i
		if l < len(h) && lagLess(&h[l], &h[big]) > 0 {
			big = l
		}
		if r := l + 1; r < len(h) && lagLess(&h[r], &h[big]) > 0 {
			big = r
		}
		if big == i {
			return
		}
		h[i], h[big] = h[big], h[i]
		i = big
	}
}

// groupSnapshot is a large queue's figures as a read uses them.
type groupSnapshot struct {
	q     combtype.Queue
	stats *queueGroupStats
	age   time.Duration
}

// largeGroupStats returns the figures of those of queues that are above
// the live limit, by queue id. A large queue is never summed here: one
// read for the first time is left to the refresher, and its snapshot has
// nil stats until the refresher has summed it (minutes at a million
// cursors, which no request waits for).
func (s *Store) largeGroupStats(ctx context.Context, queues []*combtype.Queue) (map[int64]*groupSnapshot, error) {
	now := s.clock.Now()
	out := map[int64]*groupSnapshot{}
	var unknown []*combtype.Queue
	s.tot.mu.Lock()
	for _, q := range queues {
		e := s.tot.groups[q.ID]
		if e != nil && e.q.UUID != q.UUID {
			delete(s.tot.groups, q.ID) // a queue deleted, its id taken again
			e = nil
		}
		if e == nil {
			unknown = append(unknown, q)
			continue
		}
		e.askedAt = time.Now()
		if e.stats != nil {
			out[q.ID] = &groupSnapshot{q: *q, stats: e.stats, age: max(now.Sub(e.at), 0)}
		} else {
			out[q.ID] = &groupSnapshot{q: *q}
		}
	}
	s.tot.mu.Unlock()
	if len(unknown) == 0 {
		return out, nil
	}
	large, err := s.largeQueues(ctx, unknown)
	if err != nil {
		return nil, err
	}
	for _, q := range unknown {
		if large[q.ID] {
			s.rememberGroups(q, nil, now)
			out[q.ID] = &groupSnapshot{q: *q}
		}
	}
	return out, nil
}

// rememberGroups keeps st as the figures of the large queue q (st nil:
// to be summed by the refresher) and makes sure the refresher runs.
func (s *Store) rememberGroups(q *combtype.Queue, st *queueGroupStats, at time.Time) {
	s.tot.mu.Lock()
	defer s.tot.mu.Unlock()
	if s.tot.groups == nil {
		s.tot.groups = map[int64]*groupsEntry{}
	}
	if e := s.tot.groups[q.ID]; e != nil && e.q.UUID == q.UUID && st == nil {
		return // another read registered it, or summed it, first
	}
	s.tot.groups[q.ID] = &groupsEntry{tenant: q.Tenant, q: *q, stats: st, at: at, askedAt: time.Now()}
	s.runRefresher()
}

// refreshGroups sums again the figures of every large queue a read asked
// for in the last totalsForget, and forgets the others and the deleted
// queues.
func (s *Store) refreshGroups(ctx context.Context) error {
	s.tot.mu.Lock()
	maps.DeleteFunc(s.tot.groups, func(_ int64, e *groupsEntry) bool { return time.Since(e.askedAt) > totalsForget })
	todo := slices.Collect(maps.Values(s.tot.groups))
	s.tot.mu.Unlock()
	for _, e := range todo {
		now := s.clock.Now()
		q, err := getQueue(ctx, s.r, e.tenant, e.q.Name)
		if err != nil || q.UUID != e.q.UUID {
			s.tot.mu.Lock()
			if cur := s.tot.groups[e.q.ID]; cur != nil && cur.q.UUID == e.q.UUID {
				delete(s.tot.groups, e.q.ID)
			}
			s.tot.mu.Unlock()
			if err != nil && !errors.Is(err, combtype.ErrQueueNotFound) {
				return err
			}
			continue
		}
		st, n, err := sumQueueGroups(ctx, s.r, q, micros(now))
		if err != nil {
			return err
		}
		s.stats.ReadSummedRows.Add(n)
		s.tot.mu.Lock()
		if cur := s.tot.groups[q.ID]; cur != nil && cur.q.UUID == q.UUID {
			cur.q, cur.stats, cur.at = *q, st, now
		}
		s.tot.mu.Unlock()
	}
	return nil
}

// queueGroupNames lists the groups with a position on queue queueID, a
// large queue whose figures are not summed yet, without reading its
// partitions: its subscriptions, and the groups with cursor rows on it.
// The latter are found by skipping through cursors_group from one group
// name to the next, each group's rows looked at only within the queue's
// range of partition ids, and only until one is on the queue: one
// index seek per group where queues do not interleave, however many
// partitions and cursors there are. (The two ends of the range are two
// subqueries: MIN and MAX in one SELECT read the whole index range.)
func queueGroupNames(ctx context.Context, db querier, queueID int64) ([]string, error) {
	rows, err := db.QueryContext(ctx, `WITH RECURSIVE
		r(lo, hi) AS (SELECT (SELECT MIN(id) FROM partitions WHERE queue_id = ?1),
			(SELECT MAX(id) FROM partitions WHERE queue_id = ?1)),
		g(name) AS (SELECT (SELECT MIN(group_name) FROM cursors)
			UNION ALL SELECT (SELECT MIN(group_name) FROM cursors WHERE group_name > g.name) FROM g
			WHERE g.name IS NOT NULL)
		SELECT group_name FROM subscriptions WHERE queue_id = ?1
		UNION SELECT g.name FROM g, r WHERE g.name IS NOT NULL AND EXISTS (SELECT 1
			FROM cursors c INDEXED BY cursors_group CROSS JOIN partitions p ON p.id = c.partition_id
			WHERE c.group_name = g.name AND c.partition_id BETWEEN r.lo AND r.hi AND p.queue_id = ?1)`, queueID)
	if err != nil {
		return nil, fmt.Errorf("list groups of queue %d: %w", queueID, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var g string
		if err := rows.Scan(&g); err != nil {
			return nil, fmt.Errorf("scan group of queue %d: %w", queueID, err)
		}
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list groups of queue %d: %w", queueID, err)
	}
	return out, nil
}
