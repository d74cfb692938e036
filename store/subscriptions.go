package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Subscriptions: a group's durable record of where it starts on a queue,
// and the seeding of its cursors from it.

// Subscription modes as stored.
const (
	ModeAll       = "all"
	ModeNew       = "new"
	ModeTimestamp = "timestamp"
)

// SubscriptionStart is where a group starts on first contact with a queue.
type SubscriptionStart struct {
	Mode string     // ModeAll, ModeNew or ModeTimestamp
	From *time.Time // ModeTimestamp only
}

// seedFrom is the committed value of a new cursor on p: just below the
// oldest retained offset, or, from a time (from valid), just below the
// first segment committed at or after it (the partition's last offset if
// none is).
//
// From a time, this is the rule of a seek to that time, seek.Place in
// seek/seek.go: a group subscribing from a time starts where a seek to the
// time would put it. TestATimestampSubscriptionStartsWhereATimeSeekLands
// (store/seek_test.go) checks that the two agree.
func (w *wtx) seedFrom(p *Partition, from sql.NullInt64) (int64, error) {
	if !from.Valid {
		return p.LogStart - 1, nil
	}
	l, err := landing(w.ctx, w, p, from.Int64)
	if err != nil {
		return 0, err
	}
	seed := p.LastOffset
	if l != nil {
		seed = l.BaseOffset - 1
	}
	return max(p.LogStart-1, seed), nil
}

// seedCursor creates group's cursor on partitionID at committed, unless
// one exists.
func (w *wtx) seedCursor(partitionID int64, group string, committed int64) error {
	if _, err := w.ExecContext(w.ctx, `INSERT INTO cursors (partition_id, group_name, committed, created_at)
		VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`, partitionID, group, committed, micros(w.now)); err != nil {
		return fmt.Errorf("seed cursor: %w", err)
	}
	return nil
}

// subscribe writes the group's durable subscription record for q if it has
// none, seeding a cursor on every existing partition.
func (w *wtx) subscribe(q *Queue, group string, start SubscriptionStart) error {
	var exists bool
	if err := w.QueryRowContext(w.ctx, `SELECT EXISTS (SELECT 1 FROM subscriptions WHERE queue_id = ? AND group_name = ?)`,
		q.ID, group).Scan(&exists); err != nil {
		return fmt.Errorf("look up subscription: %w", err)
	}
	if exists {
		return nil
	}
	now := micros(w.now)
	mode := start.Mode
	if group == QueueModeGroup {
		mode = ModeAll // queue mode never skips a backlog
	}
	var from sql.NullInt64
	switch mode {
	case ModeNew:
		// Partitions met later are seeded from the registration time, so
		// their messages, all pushed after it, are delivered.
		from = sql.NullInt64{Int64: now, Valid: true}
	case ModeTimestamp:
		if start.From == nil {
			return fmt.Errorf("%w: timestamp subscription without a time", ErrInvalid)
		}
		from = sql.NullInt64{Int64: micros(*start.From), Valid: true}
	default:
		mode = ModeAll
	}
	// Partitions created after the registration hold only messages pushed
	// after it: they are taken from their start. Which partitions those
	// are is told by id, not by comparing wall-clock times, which a clock
	// stepping back would get wrong.
	var after sql.NullInt64
	if from.Valid && from.Int64 <= now {
		if err := w.QueryRowContext(w.ctx, `SELECT COALESCE(MAX(id), 0) FROM partitions`).Scan(&after.Int64); err != nil {
			return fmt.Errorf("read registration point: %w", err)
		}
		after.Valid = true
	}
	if _, err := w.ExecContext(w.ctx, `INSERT INTO subscriptions (queue_id, group_name, mode, from_time, created_at, after_partition)
		VALUES (?, ?, ?, ?, ?, ?)`, q.ID, group, mode, from, now, after); err != nil {
		return fmt.Errorf("insert subscription: %w", err)
	}
	parts, err := w.queuePartitions(q.ID)
	if err != nil {
		return err
	}
	for _, p := range parts {
		// A group subscribing to new messages starts after the last one.
		seed := p.LastOffset
		if mode != ModeNew {
			if seed, err = w.seedFrom(p, from); err != nil {
				return err
			}
		}
		if err := w.seedCursor(p.ID, group, seed); err != nil {
			return err
		}
	}
	return nil
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
func (w *wtx) queuePartitions(queueID int64) ([]*Partition, error) {
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

func (w *wtx) seedMissingFrom(q *Queue, group string) error {
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
		seed := p.LogStart - 1 // created after the registration
		if !after.Valid || p.ID <= after.Int64 {
			if seed, err = w.seedFrom(p, from); err != nil {
				return err
			}
		}
		if err := w.seedCursor(p.ID, group, seed); err != nil {
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
			RETURNING (SELECT name FROM queues WHERE id = queue_id)`, ModeTimestamp, micros(t), group, tenant)
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
