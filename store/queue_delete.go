package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"

	"github.com/comb-broker/comb/combtype"
)

// Deleting a queue: a first op detaches it, bounded ops then empty it.

// Batch sizes of DeleteQueue: each writer op removes at most this many
// segments, or dedup keys (the frames of those segments; one segment with
// more still goes, alone), so pushes fused with it wait for one bounded
// delete rather than for the whole queue.
const (
	DefaultDeleteSegmentBatch = 500
	DefaultDeleteKeyBatch     = 5000
	deletePartitionBatch      = 500
)

// detachedTenantPrefix marks a queue that DeleteQueue has detached and is
// still emptying. No request can carry this tenant, so every tenant-scoped
// query (all of them) already ignores such a queue.
const detachedTenantPrefix = "\x00deleted\x00"

// DeleteQueue removes tenant's queue and everything it holds: partitions,
// segments, dedup keys, cursors and leases, subscriptions, tombstones,
// traces, snapshots and its DLQ rows. It reports whether the queue existed.
// Pushes parked by push maintenance are not touched: they were accepted as
// pushes to that name and recreate the queue when they drain.
//
// A big queue is not deleted in one transaction, which would stall every
// push for as long as it takes. The first op detaches the queue: it moves
// the queue row and its snapshots to a tenant no request can name, drops
// its subscriptions and hides its DLQ rows (which are keyed by the name),
// so from that commit on the name is free, a new push creates a new, empty
// queue, and parked pops of the old one wake. Bounded ops then delete the
// snapshots' cursors and the hidden DLQ rows, empty the detached queue
// from the front, moving log_start as retention does, each partition's
// cursors and tombstones with it, and a last op removes its rows. A
// detached queue left by a crash is emptied by ResumeDeletes, which the
// broker runs when it opens.
func (s *Store) DeleteQueue(ctx context.Context, tenant, name string) (existed bool, err error) {
	return s.deleteQueue(ctx, tenant, name, DefaultDeleteSegmentBatch, DefaultDeleteKeyBatch)
}

func (s *Store) deleteQueue(ctx context.Context, tenant, name string, segBatch, keyBatch int) (bool, error) {
	existed, err := s.detachQueue(ctx, tenant, name)
	if err != nil {
		return false, err
	}
	// The queue is gone for every client once detached; emptying it goes
	// on if the caller leaves, and stops only when the store closes.
	if err := s.purgeDetached(context.WithoutCancel(ctx), segBatch, keyBatch); err != nil {
		return existed, err
	}
	return existed, nil
}

// ResumeDeletes finishes the queue deletes a crash interrupted: it empties
// and removes every detached queue, one bounded op at a time, and returns
// when none is left, ctx ends or the store closes.
func (s *Store) ResumeDeletes(ctx context.Context) error {
	// Nearly always there is nothing to finish, and then nothing is
	// written: each purge's step that finds nothing is still a write, and
	// a write just after the start takes the lock from under a sqlite3
	// shell opened beside the server (it has no busy timeout: "database is
	// locked").
	var pending bool
	if err := s.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM queues WHERE tenant >= ?1 AND tenant < ?2)
		OR EXISTS (SELECT 1 FROM snapshots WHERE `+detachedSnapshot+`)
		OR EXISTS (SELECT 1 FROM dlq_detached) OR EXISTS (SELECT 1 FROM stream_state_detached)`,
		detachedTenantPrefix, detachedTenantPrefix+"\xff").Scan(&pending); err != nil {
		return fmt.Errorf("find interrupted deletes: %w", err)
	}
	if !pending {
		return nil
	}
	return s.purgeDetached(ctx, DefaultDeleteSegmentBatch, DefaultDeleteKeyBatch)
}

// detachQueue is DeleteQueue's first op; it reports whether the queue existed.
func (s *Store) detachQueue(ctx context.Context, tenant, name string) (bool, error) {
	var detached bool
	err := s.submit(ctx, &writeOp{isolated: true, apply: func(w *wtx) error {
		detached = false
		q, err := w.queue(tenant, name, false)
		if errors.Is(err, combtype.ErrQueueNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		delete(w.queues, queueKey{tenant, name})
		w.rowsChanged()
		w.queueLeft()
		if _, err := w.ExecContext(w.ctx, `UPDATE queues SET tenant = ?, name = ? WHERE id = ?`,
			detachedTenantPrefix+q.UUID, q.UUID, q.ID); err != nil {
			return fmt.Errorf("detach queue: %w", err)
		}
		if err := w.dropQueueState(q.ID); err != nil {
			return err
		}
		if err := w.dropStreamsOf(tenant, name); err != nil {
			return err
		}
		// Its dead letters are keyed by the name a recreated queue takes at
		// once: hidden from every read from this commit on, they are
		// purged with the queue (purgeDeadLetterStep). The table's highest
		// id is as good a bound as the queue's own, and one lookup.
		if _, err := w.ExecContext(w.ctx, `INSERT INTO dlq_detached (tenant, queue_name, through_id)
			SELECT ?1, ?2, (SELECT max(id) FROM dlq) WHERE EXISTS (SELECT 1 FROM dlq WHERE tenant = ?1 AND queue_name = ?2)
			ON CONFLICT (tenant, queue_name) DO UPDATE SET through_id = max(through_id, excluded.through_id)`, tenant, name); err != nil {
			return fmt.Errorf("detach dead letters: %w", err)
		}
		// Snapshots name the queue by uuid, so a recreated queue could never
		// use them; they would only wait for their expiry. Detached, they
		// are purged with the queue (DeleteSnapshot).
		if _, err := w.ExecContext(w.ctx, detachSnapshots+`queue_uuid = ?2`, detachedTenantPrefix, q.UUID); err != nil {
			return fmt.Errorf("delete snapshots: %w", err)
		}
		w.touch(tenant, name)
		detached = true
		return nil
	}})
	return detached, err
}

// A step of the purge of a deleted queue's dead letters or of its
// streams' state, and a write of a DLQ purge, deletes at most
// purgeRowBatch rows, and stops past purgeRowBytes of payload (a dead
// letter is a copy of its message, a state value what a cycle sent, each
// up to the body bound).
const (
	purgeRowBatch = 2000
	purgeRowBytes = 16 << 20
)

// purgeDeadLetters deletes the dead letters DeleteQueue hid, one bounded
// op at a time.
func (s *Store) purgeDeadLetters(ctx context.Context, batch, batchBytes int) error {
	return s.inSteps(ctx, "purge deleted dead letters", func(w *wtx) (bool, error) { return w.purgeDeadLetterStep(batch, batchBytes) })
}

// purgeDeadLetterStep deletes at most batch hidden dead letters of one
// deleted queue name, and its dlq_detached row with the last of them;
// done is true when none is left.
func (w *wtx) purgeDeadLetterStep(batch, batchBytes int) (done bool, err error) {
	var tenant, name string
	var through int64
	err = w.QueryRowContext(w.ctx, `SELECT tenant, queue_name, through_id FROM dlq_detached LIMIT 1`).Scan(&tenant, &name, &through)
	if errors.Is(err, sql.ErrNoRows) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("find deleted dead letters: %w", err)
	}
	// The queue's rows come in the order of its index, failure time;
	// ids above through_id are a recreated queue's.
	rows, err := w.QueryContext(w.ctx, `SELECT id, length(payload) FROM dlq
		WHERE tenant = ? AND queue_name = ? AND id <= ? LIMIT ?`, tenant, name, through, batch)
	if err != nil {
		return false, fmt.Errorf("find deleted dead letters: %w", err)
	}
	var ids []int64
	found, size := 0, 0
	for rows.Next() {
		var id int64
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			rows.Close()
			return false, fmt.Errorf("find deleted dead letters: %w", err)
		}
		found++
		if size += n; len(ids) > 0 && size > batchBytes {
			break
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("find deleted dead letters: %w", err)
	}
	if len(ids) > 0 {
		if _, err := w.ExecContext(w.ctx, `DELETE FROM dlq WHERE id IN (SELECT value FROM json_each(?))`, jsonInts(ids)); err != nil {
			return false, fmt.Errorf("delete dead letters: %w", err)
		}
	}
	if found < batch && len(ids) == found {
		if _, err := w.ExecContext(w.ctx, `DELETE FROM dlq_detached WHERE tenant = ? AND queue_name = ?`, tenant, name); err != nil {
			return false, fmt.Errorf("delete dead letters: %w", err)
		}
	}
	return false, nil
}

// partitionRows are the rows that name a partition of a deleted queue
// besides its segments and dedup keys: its traces (with the names they
// were filed under), its groups' cursors and its tombstones. Each
// statement deletes at most ?2 rows of the partition ?1 (its uuid where
// byUUID, else its id) in key order. The names go first, those of the
// traces the next statement takes; they are not counted, a trace has few.
var partitionRows = []struct {
	what              string
	del               string
	byUUID, uncounted bool
}{
	{what: "trace names", byUUID: true, uncounted: true, del: `DELETE FROM trace_names WHERE trace_id IN
		(SELECT id FROM traces WHERE partition_uuid = ?1 ORDER BY partition_uuid, txn_id, id LIMIT ?2)`},
	{what: "traces", byUUID: true, del: `DELETE FROM traces WHERE id IN
		(SELECT id FROM traces WHERE partition_uuid = ?1 ORDER BY partition_uuid, txn_id, id LIMIT ?2)`},
	{what: "cursors", del: `DELETE FROM cursors WHERE partition_id = ?1 AND group_name IN
		(SELECT group_name FROM cursors WHERE partition_id = ?1 ORDER BY group_name LIMIT ?2)`},
	{what: "tombstones", del: `DELETE FROM tombstones WHERE partition_id = ?1 AND offset IN
		(SELECT offset FROM tombstones WHERE partition_id = ?1 ORDER BY offset LIMIT ?2)`},
}

// dropPartitionRows deletes partition p's partitionRows, spending budget
// (above 0) a row each; emptied is false when the budget ran out first.
// All of them in one statement each held the writer for as long as they
// took: a queue of 100 partitions read by 10,000 groups (a million
// cursors) with 300,000 traces held every push 5 s.
func (w *wtx) dropPartitionRows(p *combtype.Partition, budget *int64) (emptied bool, err error) {
	for _, r := range partitionRows {
		var key any = p.ID
		if r.byUUID {
			key = p.UUID
		}
		limit := *budget
		res, err := w.ExecContext(w.ctx, r.del, key, limit)
		if err != nil {
			return false, fmt.Errorf("delete %s: %w", r.what, err)
		}
		if r.uncounted {
			continue
		}
		n, err := res.RowsAffected()
		if err != nil {
			return false, fmt.Errorf("delete %s: %w", r.what, err)
		}
		if *budget -= n; n == limit {
			return false, nil // maybe more: the next step sees the partition again
		}
	}
	return true, nil
}

// dropQueueState deletes the subscriptions of queue id. Its cursors and
// tombstones stay, unseen (every read of them goes through a tenant's
// queues or a partition a tenant's queue holds), until the purge drops
// them with their partition: dropped here, in the detach, they held the
// writer for as long as the queue has partitions times groups (two
// million cursors: 9.6 s in which no push anywhere was answered).
func (w *wtx) dropQueueState(queueID int64) error {
	w.s.subs.forget()
	w.groupsLeft()
	if _, err := w.ExecContext(w.ctx, `DELETE FROM subscriptions WHERE queue_id = ?`, queueID); err != nil {
		return fmt.Errorf("drop queue state: %w", err)
	}
	return nil
}

// purgeDetached empties and removes every detached snapshot and queue,
// one bounded op at a time.
func (s *Store) purgeDetached(ctx context.Context, segBatch, keyBatch int) error {
	if err := s.purgeSnapshots(ctx, keyBatch); err != nil {
		return err
	}
	if err := s.purgeDeadLetters(ctx, purgeRowBatch, purgeRowBytes); err != nil {
		return err
	}
	if err := s.purgeStreams(ctx, purgeRowBatch, purgeRowBytes); err != nil {
		return err
	}
	return s.inSteps(ctx, "purge deleted queue", func(w *wtx) (bool, error) { return w.purgeStep(segBatch, keyBatch) })
}

// inSteps submits step as one write op after another until it reports
// that it is done: the shape of every purge that must not hold the
// writer for all it deletes.
func (s *Store) inSteps(ctx context.Context, what string, step func(w *wtx) (done bool, err error)) error {
	for {
		var done bool
		err := s.submit(ctx, &writeOp{apply: func(w *wtx) error {
			var err error
			done, err = step(w)
			return err
		}})
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if done {
			return nil
		}
	}
}

// purgeStep does one bounded piece of emptying the detached queues; done
// is true when none is left.
func (w *wtx) purgeStep(segBatch, keyBatch int) (done bool, err error) {
	var queueID int64
	err = w.QueryRowContext(w.ctx, `SELECT id FROM queues WHERE tenant >= ? AND tenant < ? ORDER BY id LIMIT 1`,
		detachedTenantPrefix, detachedTenantPrefix+"\xff").Scan(&queueID)
	if errors.Is(err, sql.ErrNoRows) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("find deleted queue: %w", err)
	}
	// A pop that resolved the queue before it was detached may have
	// subscribed it since; drop that again. Cursors and tombstones, the
	// detach's and any such pop's, go with their partition, below:
	// dropping them here for the whole queue, and reading every partition
	// of it, made each step cost the partitions left, and a delete of a
	// million partitions ran for hours (2,000 steps of a million rows
	// each).
	w.s.subs.forget()
	w.groupsLeft()
	if _, err := w.ExecContext(w.ctx, `DELETE FROM subscriptions WHERE queue_id = ?`, queueID); err != nil {
		return false, fmt.Errorf("drop queue state: %w", err)
	}
	// One more than a step empties: seeing it tells the step it is not
	// the last.
	parts, err := queryPartitions(w.ctx, w.tx, `SELECT `+partitionColumns+` FROM partitions WHERE queue_id = ? ORDER BY id LIMIT ?`,
		queueID, deletePartitionBatch+1)
	if err != nil {
		return false, err
	}
	// Each step spends both budgets: a segment's keys go in the same
	// commit as the segment. Partitions cost a few statements each even
	// when empty.
	segBudget, keyBudget, partBudget := segBatch, int64(keyBatch), deletePartitionBatch
	for _, p := range parts {
		if partBudget--; partBudget < 0 {
			return false, nil
		}
		// First what names the partition, its messages' traces included:
		// the eviction below deletes the traces of what it evicts with it,
		// however many a message has.
		emptied, err := w.dropPartitionRows(p, &keyBudget)
		if err != nil {
			return false, err
		}
		if !emptied {
			return false, nil
		}
		// Segments from the front, evicted as retention evicts them: their
		// dedup keys are found by the transactionIds they hold, one key
		// seek each, so a step costs what it deletes and a purge stays
		// linear (the index leads with the key, so a partition's keys are
		// not a range of it). log_start moves with the segments, so the
		// partition stays a valid log at every commit. As in retention, a
		// segment with more frames than the key budget still goes, alone.
		segs, err := w.firstSegments(p.ID, segBudget)
		if err != nil {
			return false, err
		}
		take, more := takePrefix(segs, EvictLimits{Segments: segBudget, Bytes: math.MaxInt64, Frames: keyBudget},
			func(segMeta) bool { return true })
		res, err := w.evict(p, take)
		if err != nil {
			return false, err
		}
		segBudget -= res.Segments
		keyBudget -= res.Frames
		if more || res.More || keyBudget <= 0 || segBudget <= 0 {
			// Budget spent: this partition may hold more; the next step
			// sees it again.
			return false, nil
		}
		w.rowsChanged()
		if _, err := w.ExecContext(w.ctx, `DELETE FROM partitions WHERE id = ?`, p.ID); err != nil {
			return false, fmt.Errorf("delete partition: %w", err)
		}
	}
	w.rowsChanged()
	if _, err := w.ExecContext(w.ctx, `DELETE FROM queues WHERE id = ?`, queueID); err != nil {
		return false, fmt.Errorf("delete queue: %w", err)
	}
	return false, nil
}
