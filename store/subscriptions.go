package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/seek"
)

// Subscriptions: a group's durable record of where it starts on a queue.
// Its cursors are not written when it subscribes: a missing cursor is read
// as the record implies (implied.go), and written by the group's first
// claim, ack or seek on the partition (materializeCursor).

// materializeCursor writes the cursor c was read as, its subscription's
// implied position, unless a row exists; c then has one.
func (w *wtx) materializeCursor(c *candidate) error {
	if _, err := w.ExecContext(w.ctx, `INSERT INTO cursors (partition_id, group_name, committed, created_at)
		VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`, c.part.ID, c.group, c.committed, micros(w.now)); err != nil {
		return fmt.Errorf("write cursor: %w", err)
	}
	c.hasCursor = true
	return nil
}

// subscribe writes the group's durable subscription record for q if it has
// none. It writes no cursor: one statement, whatever the number of
// partitions. A group registered here (start_seq set) reads a missing
// cursor on a partition that existed then as seek.Implied says: from the
// oldest retained (all), from the partition's head at registration (new),
// from a time but never past that head (timestamp). Partitions created
// later follow mode, from_time and after_partition, as UpdateSubscription
// leaves them.
func (w *wtx) subscribe(q *combtype.Queue, group string, sub seek.Subscription) error {
	now := micros(w.now)
	mode := sub.Mode
	if group == combtype.QueueModeGroup {
		mode = seek.ModeAll // queue mode never skips a backlog
	}
	var from sql.NullInt64
	switch mode {
	case seek.ModeNew:
		from = sql.NullInt64{Int64: now, Valid: true}
	case seek.ModeTimestamp:
		if sub.From == nil {
			return fmt.Errorf("%w: timestamp subscription without a time", combtype.ErrInvalid)
		}
		from = sql.NullInt64{Int64: micros(*sub.From), Valid: true}
	default:
		mode = seek.ModeAll
	}
	// Partitions created after the registration hold only messages pushed
	// after it: they are taken from their start. Which partitions those
	// are is told by id (the highest now, read by the insert itself), not
	// by comparing wall-clock times, which a clock stepping back would get
	// wrong; and where a partition that existed stood is told by the
	// segment sequence (w.s.segSeq: every segment committed so far has an
	// id at most it, every later one above; this commit's pushes are
	// flushed after every op, so they come after the registration too).
	// One statement both looks and writes: a wave of woken pops, each a
	// new group, pays one statement for it instead of two, and an insert
	// that ignores the conflict needs no statement journal.
	res, err := w.ExecContext(w.ctx, `INSERT INTO subscriptions (queue_id, group_name, mode, from_time, created_at,
			after_partition, start_mode, start_from, start_seq, start_partition)
		VALUES (?1, ?2, ?3, ?4, ?5, CASE WHEN ?6 THEN (SELECT COALESCE(MAX(id), 0) FROM partitions) END,
			?3, ?4, ?7, (SELECT COALESCE(MAX(id), 0) FROM partitions))
		ON CONFLICT (queue_id, group_name) DO NOTHING`, q.ID, group, mode, from, now, from.Valid && from.Int64 <= now,
		w.s.segSeq)
	if err != nil {
		return fmt.Errorf("insert subscription: %w", err)
	}
	if err := w.countSubscriptions(res); err != nil {
		return err
	}
	w.s.groupJoined(q.ID)
	return nil
}

// seekSubscribe records a subscription for group on queueID if it has
// none, as its first pop naming no mode would: a seek may be a group's
// first act on a queue (placed before it consumes), and a group is a
// subscription wherever it is counted (Options.MaxGroups, grouplimit.go).
// A group with one is unchanged: the seek moves its cursors only.
func (w *wtx) seekSubscribe(queueID int64, group string) error {
	return w.subscribe(&combtype.Queue{ID: queueID}, group, seek.Subscription{Mode: w.s.defaultSub})
}

// countSubscriptions reserves, under Options.MaxGroups, the subscriptions
// an insert that ignores conflicts wrote (grouplimit.go). Past the bound
// the error rolls the op, and its insert, back.
func (w *wtx) countSubscriptions(res sql.Result) error {
	if w.s.groups.max == 0 {
		return nil
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("count new subscriptions: %w", err)
	}
	return w.reserveGroups(n)
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
