package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/seek"
)

// Subscriptions: a group's durable record of where it starts on a queue,
// and the seeding of its cursors from it.

// seed is the committed value of group's new cursor on p, from start:
// seek.Seed decides, the store looks up the landing segment a start from
// a time needs.
func (w *wtx) seed(p *combtype.Partition, start seek.Start) (int64, error) {
	st := seekStateOf(p)
	if start.Time != nil {
		l, err := landing(w.ctx, w, p, micros(*start.Time))
		if err != nil {
			return 0, err
		}
		st.Landing = l.seg()
	}
	return seek.Seed(start, &st), nil
}

// seedCursor creates group's cursor on partitionID at committed, unless
// one exists; it reports whether it did.
func (w *wtx) seedCursor(partitionID int64, group string, committed int64) (bool, error) {
	res, err := w.ExecContext(w.ctx, `INSERT INTO cursors (partition_id, group_name, committed, created_at)
		VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`, partitionID, group, committed, micros(w.now))
	if err != nil {
		return false, fmt.Errorf("seed cursor: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("seed cursor: %w", err)
	}
	return n > 0, nil
}

// subscribe writes the group's durable subscription record for q if it has
// none, seeding a cursor on every existing partition. A subscription from
// a time seeds each partition by its own landing search; when it wrote one
// and every cursor it seeded is new, it returns them, as scanCandidates
// would read them (fresh is nil otherwise, also when the queue has no
// partition, and always for the other modes, whose seeding is one
// statement): the claim that follows needs no scan to know them.
func (w *wtx) subscribe(q *combtype.Queue, group string, sub seek.Subscription) (fresh []candidate, err error) {
	now := micros(w.now)
	mode := sub.Mode
	if group == combtype.QueueModeGroup {
		mode = seek.ModeAll // queue mode never skips a backlog
	}
	var from sql.NullInt64
	var start seek.Start // where the partitions that exist now start
	switch mode {
	case seek.ModeNew:
		// Partitions met later are seeded from the registration time, so
		// their messages, all pushed after it, are delivered.
		from = sql.NullInt64{Int64: now, Valid: true}
		start.End = true
	case seek.ModeTimestamp:
		if sub.From == nil {
			return nil, fmt.Errorf("%w: timestamp subscription without a time", combtype.ErrInvalid)
		}
		from = sql.NullInt64{Int64: micros(*sub.From), Valid: true}
		start.Time = sub.From
	default:
		mode = seek.ModeAll
	}
	// Partitions created after the registration hold only messages pushed
	// after it: they are taken from their start. Which partitions those
	// are is told by id (the highest now, read by the insert itself), not
	// by comparing wall-clock times, which a clock stepping back would get
	// wrong. One statement both looks and writes: a wave of woken pops,
	// each a new group, pays one statement for it instead of two, and an
	// insert that ignores the conflict needs no statement journal.
	res, err := w.ExecContext(w.ctx, `INSERT INTO subscriptions (queue_id, group_name, mode, from_time, created_at, after_partition)
		VALUES (?1, ?2, ?3, ?4, ?5, CASE WHEN ?6 THEN (SELECT COALESCE(MAX(id), 0) FROM partitions) END)
		ON CONFLICT (queue_id, group_name) DO NOTHING`, q.ID, group, mode, from, now, from.Valid && from.Int64 <= now)
	if err != nil {
		return nil, fmt.Errorf("insert subscription: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return nil, fmt.Errorf("insert subscription: %w", err)
	} else if n == 0 {
		return nil, nil // the group has one already
	}
	if start.Time == nil {
		// From the start or from the end, every cursor is a column of its
		// partition: one set-based statement seeds them all. A statement
		// per partition held the writer, and so every other write, for
		// seconds on a queue of a million partitions (20 µs a partition).
		// A cursor left from before (a subscription deleted without its
		// cursors) is whatever it is: the claim that follows scans them.
		if _, err := w.ExecContext(w.ctx, `INSERT INTO cursors (partition_id, group_name, committed, created_at)
			SELECT id, ?1, CASE WHEN ?2 THEN last_offset ELSE log_start - 1 END, ?3 FROM partitions WHERE queue_id = ?4
			ON CONFLICT DO NOTHING`, group, start.End, now, q.ID); err != nil {
			return nil, fmt.Errorf("seed cursors: %w", err)
		}
		return nil, nil
	}
	// A partition with no segment at or after the time starts at its end,
	// as a seek to that time puts it: those too are seeded in one
	// statement, all of them when the time is in the future.
	t := micros(*start.Time)
	if _, err := w.ExecContext(w.ctx, `INSERT INTO cursors (partition_id, group_name, committed, created_at)
		SELECT id, ?1, last_offset, ?2 FROM partitions WHERE queue_id = ?3 AND last_segment_at < ?4
		ON CONFLICT DO NOTHING`, group, now, q.ID, t); err != nil {
		return nil, fmt.Errorf("seed cursors: %w", err)
	}
	parts, err := w.queuePartitions(q.ID)
	if err != nil {
		return nil, err
	}
	allNew := true
	for _, p := range parts {
		if p.LastSegmentAt < t {
			allNew, fresh = false, nil // seeded above
			continue
		}
		seed, err := w.seed(p, start)
		if err != nil {
			return nil, err
		}
		created, err := w.seedCursor(p.ID, group, seed)
		if err != nil {
			return nil, err
		}
		// A cursor left from before (a subscription deleted without its
		// cursors) is whatever it is: the claim reads it.
		allNew = allNew && created
		if allNew {
			c := candidate{part: *p, hasCursor: true}
			c.partitionID, c.group, c.committed = p.ID, group, seed
			fresh = append(fresh, c)
		}
	}
	if !allNew {
		return nil, nil
	}
	return fresh, nil
}

// dueOf is what scanCandidates would return for cursors all just seeded
// (no lease, nothing claimed): those of fresh with something pending (of
// partition only, if named), in name order after the name given, wrapping
// around, at most limit (all for limit < 0) unless a partition is named.
func dueOf(fresh []candidate, partition string, limit int, after string) []candidate {
	var later, wrapped []candidate
	for _, c := range fresh {
		if (partition != "" && c.part.Name != partition) || c.part.LastOffset < c.next() {
			continue
		}
		if after == "" || c.part.Name > after {
			later = append(later, c)
		} else {
			wrapped = append(wrapped, c)
		}
	}
	byName := func(a, b candidate) int { return strings.Compare(a.part.Name, b.part.Name) }
	slices.SortFunc(later, byName)
	slices.SortFunc(wrapped, byName)
	due := append(later, wrapped...)
	if partition == "" && limit >= 0 && len(due) > limit { // a named partition is one at most
		due = due[:limit]
	}
	return due
}

// queuePartitions lists the partitions of queue queueID by id, as they are
// in this transaction. The list is read once per commit and kept in
// w.queueParts: a wave of woken pops, each a new group subscribing to the
// same queue, is fused into one commit, and reading the list again for
// every one of them was a third of each claim. Partition rows change in
// the middle of a commit only by a push creating one (w.partition forgets
// the queue's list) or by what marks the transaction stale (rowsChanged
// forgets them all); the last offsets move only at flush, after every op.
// Callers must not change the partitions returned.
func (w *wtx) queuePartitions(queueID int64) ([]*combtype.Partition, error) {
	if parts, ok := w.queueParts[queueID]; ok {
		return parts, nil
	}
	parts, err := queryPartitions(w.ctx, w, `SELECT `+partitionColumns+` FROM partitions WHERE queue_id = ? ORDER BY id`, queueID)
	if err != nil {
		return nil, err
	}
	w.queueParts[queueID] = parts
	return parts, nil
}

func (w *wtx) seedMissingFrom(q *combtype.Queue, group string) error {
	var from, after sql.NullInt64
	if err := w.QueryRowContext(w.ctx, `SELECT from_time, after_partition FROM subscriptions WHERE queue_id = ? AND group_name = ?`,
		q.ID, group).Scan(&from, &after); err != nil {
		return fmt.Errorf("read subscription: %w", err)
	}
	parts, err := queryPartitions(w.ctx, w, `SELECT `+partitionColumns+` FROM partitions p WHERE p.queue_id = ?
		AND NOT EXISTS (SELECT 1 FROM cursors c WHERE c.partition_id = p.id AND c.group_name = ?) ORDER BY id`, q.ID, group)
	if err != nil {
		return fmt.Errorf("find new partitions: %w", err)
	}
	for _, p := range parts {
		// A partition created after the registration holds only messages
		// pushed after it, and starts from its oldest; one that existed
		// then starts from the stored time, if any.
		var start seek.Start
		if from.Valid && (!after.Valid || p.ID <= after.Int64) {
			t := fromMicros(from.Int64)
			start.Time = &t
		}
		seed, err := w.seed(p, start)
		if err != nil {
			return err
		}
		if _, err := w.seedCursor(p.ID, group, seed); err != nil {
			return err
		}
	}
	return nil
}

// UpdateSubscription rewrites the stored subscription of group on every
// queue of tenant it has one for, to start from t: partitions the group meets
// later are seeded from t. No cursor moves. It returns the number of records
// updated and wakes parked pops of those queues.
func (s *Store) UpdateSubscription(ctx context.Context, tenant, group string, t time.Time) (int64, error) {
	var n int64
	err := s.submit(ctx, &writeOp{apply: func(w *wtx) error {
		rows, err := w.QueryContext(w.ctx, `UPDATE subscriptions SET mode = ?1, from_time = ?2, after_partition = NULL
			WHERE group_name = ?3 AND queue_id IN (SELECT id FROM queues WHERE tenant = ?4)
			RETURNING (SELECT name FROM queues WHERE id = queue_id)`, seek.ModeTimestamp, micros(t), group, tenant)
		if err != nil {
			return fmt.Errorf("update subscriptions: %w", err)
		}
		defer rows.Close()
		n = 0
		for rows.Next() {
			var queue string
			if err := rows.Scan(&queue); err != nil {
				return fmt.Errorf("scan subscription: %w", err)
			}
			n++
			// Pops always look at cursor rows, so there is no empty-scan
			// state to clear; waking parked pops is what is left of it.
			w.touch(tenant, queue)
		}
		return rows.Err()
	}})
	return n, err
}
