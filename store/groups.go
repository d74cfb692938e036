package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// Groups lists every (group, queue) pair of tenant that has cursors, rows
// or implied by a subscription (implied.go), ordered by group then queue.
func (s *Store) Groups(ctx context.Context, tenant string) ([]combtype.GroupSummary, error) {
	now := micros(s.clock.Now())
	rows, err := s.r.QueryContext(ctx, `SELECT group_name, queue_name, COUNT(*), SUM(lag > 0), `+sumOf("lag")+`,
		COALESCE(MIN(oldest), 0), `+sumOf("total_consumed")+`
		FROM (SELECT gq.g AS group_name, q.name AS queue_name, `+groupLagExpr+` AS lag, `+groupOldestExpr+` AS oldest,
				COALESCE(c.total_consumed, 0) AS total_consumed
			FROM `+groupPositionsIn(tenantQueues("?1"), "")+`)
		GROUP BY group_name, queue_name ORDER BY group_name, queue_name`, tenant)
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	defer rows.Close()
	out := []combtype.GroupSummary{}
	for rows.Next() {
		var g combtype.GroupSummary
		var oldest int64
		if err := rows.Scan(&g.Group, &g.Queue, &g.Cursors, &g.PartitionsWithLag, &g.TotalLag, &oldest, &g.TotalConsumed); err != nil {
			return nil, fmt.Errorf("scan group: %w", err)
		}
		if oldest > 0 {
			g.MaxTimeLag = time.Duration(max(now-oldest, 0)) * time.Microsecond
		}
		out = append(out, g)
	}
	return out, rows.Err()
}

// QueueGroupsPage is GroupsPage over one queue: the (group, queue) pairs
// of the queue named queue, none when there is no such queue.
func (s *Store) QueueGroupsPage(ctx context.Context, tenant, queue string, pg combtype.Page) ([]combtype.GroupSummary, combtype.PageInfo, error) {
	if queue == "" {
		return nil, combtype.PageInfo{Total: -1}, fmt.Errorf("%w: queue is required", combtype.ErrInvalid)
	}
	return s.groupsPage(ctx, tenant, queue, pg)
}

// partitionLagQuery reads every position, rows or implied (implied.go),
// of the groups and queues groupPositionsIn(queues, group) reads; the
// caller adds conditions over its aliases.
func partitionLagQuery(queues, group string) string {
	return `SELECT gq.g AS group_name, q.name, p.name, p.uuid, c.lease_id, c.lease_expires_at, c.last_consumed_at,
	COALESCE(c.total_consumed, 0), ` + groupLagExpr + ` AS lag, ` + groupOldestExpr + ` AS oldest
	FROM ` + groupPositionsIn(queues, group)
}

func (s *Store) queryPartitionLags(ctx context.Context, query string, args ...any) ([]combtype.PartitionLag, error) {
	now := micros(s.clock.Now())
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("read group cursors: %w", err)
	}
	defer rows.Close()
	var out []combtype.PartitionLag
	for rows.Next() {
		var l combtype.PartitionLag
		var c cursor
		var consumed, oldest sql.NullInt64
		if err := rows.Scan(&l.Group, &l.Queue, &l.Partition, &l.PartitionID, &c.leaseID, &c.leaseExpires, &consumed,
			&l.TotalConsumed, &l.OffsetLag, &oldest); err != nil {
			return nil, fmt.Errorf("scan group cursor: %w", err)
		}
		l.LeaseID = c.leaseID.String
		l.LeaseActive = c.live(now)
		if consumed.Valid {
			l.LastConsumedAt = fromMicros(consumed.Int64)
		}
		if oldest.Valid {
			l.OldestUnconsumedAt = fromMicros(oldest.Int64)
			l.TimeLag = time.Duration(max(now-oldest.Int64, 0)) * time.Microsecond
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// Group returns every cursor of one group, ordered by queue then partition
// creation. A group with no cursors has none.
func (s *Store) Group(ctx context.Context, tenant, group string) ([]combtype.PartitionLag, error) {
	return s.queryPartitionLags(ctx, partitionLagQuery(tenantQueues("?1"), "?2")+` ORDER BY q.name, p.id`, tenant, group)
}

// LaggingPartitions returns the cursors whose oldest unconsumed segment is
// older than minLag, oldest first. A backlog that retention evicted has no
// oldest segment and is not listed.
func (s *Store) LaggingPartitions(ctx context.Context, tenant string, minLag time.Duration) ([]combtype.PartitionLag, error) {
	cutoff := addMicros(micros(s.clock.Now()), -minLag.Microseconds())
	return s.queryPartitionLags(ctx, `SELECT * FROM (`+partitionLagQuery(tenantQueues("?1"), "")+`) WHERE oldest < ?2 ORDER BY oldest, 1, 2, 3`,
		tenant, cutoff)
}

// deleteGroupCursors deletes group ?1's cursor rows on every queue of
// tenant ?2, returning each one's queue name. They are found through the
// group's own rows, which are what is deleted: through the tenant's
// partitions, a group with one row beside a queue of a million partitions
// took 0.9 s of the writer.
const deleteGroupCursors = `DELETE FROM cursors WHERE group_name = ?1
	AND (SELECT q.tenant FROM partitions p JOIN queues q ON q.id = p.queue_id WHERE p.id = partition_id) = ?2
	AND ?3 = ''
	RETURNING (SELECT q.name FROM partitions p JOIN queues q ON q.id = p.queue_id WHERE p.id = partition_id)`

// groupDeleteScope is the queues DeleteGroup acts on: tenant ?2's queue
// ?3, or all of them when ?3 is "".
const groupDeleteScope = `(SELECT id FROM queues WHERE tenant = ?2 AND (?3 = '' OR name = ?3))`

// DeleteGroup removes group's cursors on every queue of tenant, or on one
// queue when queue is not "", and with deleteMetadata its subscription
// records too, so the group starts afresh at its next pop. Leases held by
// the group die with its cursors. An unknown group or queue deletes
// nothing. It returns the number of positions removed.
//
// On a queue of more partitions than one op of a seek moves
// (seekqueue.go), the group's positions go in ops of that many
// partitions, as a seek moves them and with what holds a seek to the
// meaning of one op: the group claims nothing on the queue until the
// last op (its pops find nothing, its parked ones wake then), the
// progress is kept in settings and finished at the next open, and the
// request's context does not cut it short once begun. In one op, a
// million cursors held every other write 6-9 s.
func (s *Store) DeleteGroup(ctx context.Context, tenant, group, queue string, deleteMetadata bool) (int64, error) {
	// Not between two ops of a seek (seekqueue.go), whose later ops would
	// write cursors again.
	s.seeks.serial.Lock()
	defer s.seeks.serial.Unlock()
	large, err := s.largeQueuesOfGroup(ctx, tenant, group, queue)
	if err != nil {
		return 0, err
	}
	var n int64
	skip := make([]int64, 0, len(large))
	for _, q := range large {
		if q.Held {
			m, err := s.deleteGroupInChunks(ctx, tenant, group, q, deleteMetadata)
			n += m
			if err != nil {
				return n, err
			}
		}
		// One the group holds nothing on is not read again: the one op
		// below read all its partitions (a second at a million) to find
		// no cursor.
		skip = append(skip, q.ID)
	}
	if queue != "" && len(large) > 0 {
		return n, nil
	}
	if queue == "" {
		m, done, err := s.deleteGroupOnSmallQueues(ctx, tenant, group, deleteMetadata, skip)
		n += m
		if err != nil {
			return n, err
		}
		skip = append(skip, done...)
	}
	m, err := s.deleteGroupAtOnce(ctx, tenant, group, queue, deleteMetadata, skip)
	return n + m, err
}

// deleteGroupOnSmallQueues removes group's positions on tenant's queues
// other than those in skip, when it holds more cursor rows on them than
// one op of a seek moves: in ops of about that many rows, whole queues
// each, one queue at least. It returns the positions removed and the
// queues it went through; none when the group holds fewer, which the one
// op after it removes. In one op, a group on 5,000 queues of 100
// partitions held every other write 4.9-5.8 s. Once begun, the request's
// context does not cut it short.
func (s *Store) deleteGroupOnSmallQueues(ctx context.Context, tenant, group string, deleteMetadata bool, skip []int64) (int64, []int64, error) {
	type held struct {
		id   int64
		name string
		rows int
	}
	rows, err := s.r.QueryContext(ctx, `SELECT q.id, q.name, COUNT(g.pid) FROM queues q JOIN (
			SELECT p.queue_id AS qid, c.partition_id AS pid FROM cursors c INDEXED BY cursors_group
				JOIN partitions p ON p.id = c.partition_id WHERE c.group_name = ?2
			UNION ALL SELECT queue_id, NULL FROM subscriptions WHERE group_name = ?2) g ON g.qid = q.id
		WHERE q.tenant = ?1 AND q.id NOT IN (SELECT value FROM json_each(?3))
		GROUP BY q.id ORDER BY q.id`, tenant, group, jsonInts(skip))
	if err != nil {
		return 0, nil, fmt.Errorf("find the queues of group %q: %w", group, err)
	}
	var all []held
	total := 0
	for rows.Next() {
		var h held
		if err := rows.Scan(&h.id, &h.name, &h.rows); err != nil {
			rows.Close()
			return 0, nil, fmt.Errorf("find the queues of group %q: %w", group, err)
		}
		// A queue costs the op a few statements besides its rows.
		h.rows++
		all, total = append(all, h), total+h.rows
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, nil, fmt.Errorf("find the queues of group %q: %w", group, err)
	}
	limit := s.chunkLimit()
	if total <= limit {
		return 0, nil, nil
	}
	ctx = context.WithoutCancel(ctx)
	var n int64
	var done []int64
	for len(all) > 0 {
		k, size := 1, all[0].rows
		for k < len(all) && size+all[k].rows <= limit {
			size += all[k].rows
			k++
		}
		batch := all[:k]
		var m int64
		err := s.submit(ctx, &writeOp{apply: func(w *wtx) error {
			m = 0
			for _, q := range batch {
				r, err := w.deleteGroupOnQueue(tenant, group, q.name, deleteMetadata)
				if err != nil {
					return err
				}
				m += r
			}
			return nil
		}})
		if err != nil {
			return n, done, err
		}
		n += m
		for _, q := range batch {
			done = append(done, q.id)
		}
		all = all[k:]
	}
	return n, done, nil
}

// deleteGroupAtOnce is DeleteGroup in one op, the queues in skip (done
// in chunks already) left out of its count of implied positions.
func (s *Store) deleteGroupAtOnce(ctx context.Context, tenant, group, queue string, deleteMetadata bool, skip []int64) (int64, error) {
	var n int64
	err := s.submit(ctx, &writeOp{apply: func(w *wtx) error {
		// The count is of the group's positions, rows and implied
		// (implied.go): what the cursor rows were when a subscription
		// seeded one on every partition.
		n = 0
		if queue != "" {
			var err error
			n, err = w.deleteGroupOnQueue(tenant, group, queue, deleteMetadata)
			return err
		}
		var implied int64
		if err := w.QueryRowContext(w.ctx, `SELECT COUNT(*) FROM `+groupPositionsIn(groupDeleteScope, "?1")+`
			AND c.committed IS NULL AND gq.qid NOT IN (SELECT value FROM json_each(?4))`,
			group, tenant, queue, jsonInts(skip)).Scan(&implied); err != nil {
			return fmt.Errorf("count implied cursors: %w", err)
		}
		rows, err := w.QueryContext(w.ctx, deleteGroupCursors, group, tenant, queue)
		if err != nil {
			return fmt.Errorf("delete cursors: %w", err)
		}
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				rows.Close()
				return fmt.Errorf("scan deleted cursor: %w", err)
			}
			n++
			// A parked pop of this group looks again and re-subscribes.
			w.touch(tenant, name)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("delete cursors: %w", err)
		}
		return w.finishGroupDelete(tenant, group, queue, deleteMetadata, &n, implied)
	}})
	return n, err
}

// deleteGroupOnQueue is DeleteGroup of group on tenant's one queue, in the
// op of w, returning the positions removed.
func (w *wtx) deleteGroupOnQueue(tenant, group, queue string, deleteMetadata bool) (n int64, err error) {
	// One queue, found through its partitions: its name is known,
	// and no row needs to say it. Each deleted row's lookup of its
	// queue had been a third of the delete at 100,000 rows.
	res, err := w.ExecContext(w.ctx, `DELETE FROM cursors WHERE group_name = ?1
		AND partition_id IN (SELECT id FROM partitions WHERE queue_id IN `+groupDeleteScope+`)`,
		group, tenant, queue)
	if err != nil {
		return 0, fmt.Errorf("delete cursors: %w", err)
	}
	if n, err = res.RowsAffected(); err != nil {
		return 0, fmt.Errorf("delete cursors: %w", err)
	}
	if n > 0 {
		// A parked pop of this group looks again and re-subscribes.
		w.touch(tenant, queue)
	}
	// The implied positions are the queue's partitions without a
	// row, where the group has a subscription: counted, not
	// looked up partition by partition.
	var implied int64
	if err := w.QueryRowContext(w.ctx, `SELECT CASE WHEN EXISTS (SELECT 1 FROM subscriptions
			WHERE group_name = ?1 AND queue_id IN `+groupDeleteScope+`)
		THEN (SELECT COUNT(*) FROM partitions WHERE queue_id IN `+groupDeleteScope+`) - ?4 ELSE 0 END`,
		group, tenant, queue, n).Scan(&implied); err != nil {
		return 0, fmt.Errorf("count implied cursors: %w", err)
	}
	err = w.finishGroupDelete(tenant, group, queue, deleteMetadata, &n, implied)
	return n, err
}

// largeQueue is a queue a group delete takes in chunks when the group
// holds a subscription or a cursor row on it (Held).
type largeQueue struct {
	ID         int64
	UUID, Name string
	Held       bool
}

// largeQueuesOfGroup lists tenant's queues (only the one named queue,
// when not "") of more partitions than one op of a seek moves, and
// whether group has a subscription or a cursor row on each. Read outside
// the writer: a queue that grows past the size meanwhile is deleted from
// in one op, as any was before.
func (s *Store) largeQueuesOfGroup(ctx context.Context, tenant, group, queue string) ([]largeQueue, error) {
	limit := s.chunkLimit()
	rows, err := s.r.QueryContext(ctx, `SELECT q.id, q.uuid, q.name,
			EXISTS (SELECT 1 FROM subscriptions WHERE queue_id = q.id AND group_name = ?3)
				OR EXISTS (SELECT 1 FROM cursors c INDEXED BY cursors_group WHERE c.group_name = ?3
					AND c.partition_id BETWEEN (SELECT MIN(id) FROM partitions WHERE queue_id = q.id)
						AND (SELECT MAX(id) FROM partitions WHERE queue_id = q.id)
					AND (SELECT queue_id FROM partitions WHERE id = c.partition_id) = q.id)
		FROM queues q
		WHERE q.tenant = ?1 AND (?2 = '' OR q.name = ?2)
			AND (SELECT COUNT(*) FROM (SELECT 1 FROM partitions WHERE queue_id = q.id LIMIT ?4)) = ?4
		ORDER BY q.id`, tenant, queue, group, limit+1)
	if err != nil {
		return nil, fmt.Errorf("find the large queues of group %q: %w", group, err)
	}
	defer rows.Close()
	var out []largeQueue
	for rows.Next() {
		var q largeQueue
		if err := rows.Scan(&q.ID, &q.UUID, &q.Name, &q.Held); err != nil {
			return nil, fmt.Errorf("find the large queues of group %q: %w", group, err)
		}
		out = append(out, q)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("find the large queues of group %q: %w", group, err)
	}
	return out, nil
}

// deleteGroupInChunks removes group's positions on the large queue q, a
// chunk of partitions an op (DeleteGroup), and returns how many.
func (s *Store) deleteGroupInChunks(ctx context.Context, tenant, group string, q largeQueue, deleteMetadata bool) (int64, error) {
	p := &pendingSeek{Tenant: tenant, Queue: q.Name, UUID: q.UUID, ID: q.ID, Group: group,
		Delete: true, DeleteMetadata: deleteMetadata}
	var first seekStep
	err := s.submit(ctx, &writeOp{isolated: true, apply: func(w *wtx) error {
		first = seekStep{}
		p.After = 0
		if err := w.QueryRowContext(w.ctx, `SELECT COALESCE(MAX(id), 0) FROM partitions WHERE queue_id = ?`,
			q.ID).Scan(&p.Max); err != nil {
			return fmt.Errorf("read partitions of queue %q: %w", q.Name, err)
		}
		// An unfinished seek or delete of the group on the queue is
		// superseded, as by a delete in one op.
		if err := w.dropPendingSeeks(tenant, q.Name, group); err != nil {
			return err
		}
		var err error
		first, err = w.seekChunk(p, -1, true)
		return err
	}})
	if err != nil {
		s.seeks.set(p, false)
		return 0, err
	}
	if first.done {
		return first.removed, nil
	}
	*p = first.next
	// Begun: the rest runs to its end whatever becomes of the request.
	n, err := s.finishSeek(context.WithoutCancel(ctx), p, seekList{})
	return first.removed + n, err
}

// groupDeleteChunk removes p.Group's positions on the next chunk of p's
// partitions: its cursor rows there and, while it has a subscription to
// the queue, the positions that implies (counted, not stored). The op
// that finds the last chunk ends the delete as one op would
// (finishGroupDelete) and wakes the queue's parked pops.
func (w *wtx) groupDeleteChunk(p *pendingSeek, persist bool) (seekStep, error) {
	out := seekStep{next: *p}
	n := w.s.chunkSize()
	var hi sql.NullInt64
	var parts int64
	if err := w.QueryRowContext(w.ctx, `SELECT MAX(id), COUNT(*) FROM (SELECT id FROM partitions
		WHERE queue_id = ?1 AND id > ?2 AND id <= ?3 ORDER BY id LIMIT ?4)`, p.ID, p.After, p.Max, n).Scan(&hi, &parts); err != nil {
		return out, fmt.Errorf("read partitions of queue %q: %w", p.Queue, err)
	}
	if parts > 0 {
		res, err := w.ExecContext(w.ctx, `DELETE FROM cursors WHERE group_name = ?1 AND partition_id IN
			(SELECT id FROM partitions WHERE queue_id = ?2 AND id > ?3 AND id <= ?4)`, p.Group, p.ID, p.After, hi.Int64)
		if err != nil {
			return out, fmt.Errorf("delete cursors: %w", err)
		}
		rows, err := res.RowsAffected()
		if err != nil {
			return out, fmt.Errorf("delete cursors: %w", err)
		}
		var subscribed bool
		if err := w.QueryRowContext(w.ctx, `SELECT EXISTS (SELECT 1 FROM subscriptions WHERE queue_id = ? AND group_name = ?)`,
			p.ID, p.Group).Scan(&subscribed); err != nil {
			return out, fmt.Errorf("read subscription: %w", err)
		}
		out.removed = rows
		if subscribed {
			out.removed = parts
		}
		out.next.After = hi.Int64
	}
	if out.done = parts < int64(n); !out.done {
		if !persist {
			return out, nil
		}
		return out, w.recordSeek(&out.next)
	}
	// Its own record goes with the group's pending seeks.
	var none int64
	if err := w.finishGroupDelete(p.Tenant, p.Group, p.Queue, p.DeleteMetadata, &none, 0); err != nil {
		return out, err
	}
	w.s.seeks.set(p, false)
	w.touch(p.Tenant, p.Queue)
	return out, nil
}

// finishGroupDelete does what a group delete does after its cursor rows
// are gone: counts the implied positions with them, drops the group's
// pending seeks and, with deleteMetadata, its subscriptions.
func (w *wtx) finishGroupDelete(tenant, group, queue string, deleteMetadata bool, n *int64, implied int64) error {
	*n += implied
	if err := w.dropPendingSeeks(tenant, queue, group); err != nil {
		return err
	}
	if deleteMetadata {
		w.s.subs.forget()
		w.groupsLeft()
		if _, err := w.ExecContext(w.ctx, `DELETE FROM subscriptions WHERE group_name = ?1 AND queue_id IN `+groupDeleteScope,
			group, tenant, queue); err != nil {
			return fmt.Errorf("delete subscriptions: %w", err)
		}
	}
	return nil
}
