package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/comb-broker/comb/combtype"
)

// Operator settings and the push buffer of maintenance mode. The broker
// owns the maintenance flags; the store keeps them, and the parked pushes,
// durable.

// Setting returns the stored value of key and whether it is set.
func (s *Store) Setting(ctx context.Context, key string) (string, bool, error) {
	var v string
	err := s.r.QueryRowContext(ctx, `SELECT value FROM settings WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read setting %s: %w", key, err)
	}
	return v, true, nil
}

// SetSetting stores key = value; it returns once the change is durable.
func (s *Store) SetSetting(ctx context.Context, key, value string) error {
	return s.submit(ctx, &writeOp{apply: func(w *wtx) error {
		return w.setSetting(key, value)
	}})
}

func (w *wtx) setSetting(key, value string) error {
	if _, err := w.ExecContext(w.ctx, `INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
		key, value, micros(w.now)); err != nil {
		return fmt.Errorf("write setting %s: %w", key, err)
	}
	return nil
}

// BufferPush parks items in the push buffer instead of the log: they are
// durable when it returns, invisible to pops, and answered
// StatusBuffered. An item without a transactionId gets one now, so the
// caller can report it and the drain can deduplicate by it. Payloads of
// encrypted queues are sealed in the buffer as in the log.
func (s *Store) BufferPush(ctx context.Context, tenant string, items []combtype.PushItem) ([]combtype.PushResult, error) {
	if len(items) == 0 {
		return []combtype.PushResult{}, nil
	}
	results := make([]combtype.PushResult, len(items))
	err := s.submit(ctx, &writeOp{isolated: true, bytes: itemsBytes(items), apply: func(w *wtx) error {
		queues := map[string]*combtype.Queue{}
		for i := range items {
			it := &items[i]
			q, seen := queues[it.Queue]
			if !seen {
				// A new queue is made now, counted against MaxQueues, so
				// that a push past the bound is refused as it would be
				// were maintenance off, not acknowledged and then refused
				// by the drain.
				var err error
				if q, err = w.queue(tenant, it.Queue, true); err != nil {
					return err
				}
				queues[it.Queue] = q
			}
			txn := cmp.Or(it.TxnID, newUUID())
			if _, err := w.ExecContext(w.ctx, `INSERT INTO push_buffer (tenant, queue_name, partition_name, txn_id,
				trace_id, producer_sub, payload, created_at) VALUES (?, ?, ?, ?, NULLIF(?, ''), NULLIF(?, ''), ?, ?)`,
				tenant, it.Queue, cmp.Or(it.Partition, combtype.DefaultPartition), txn, it.TraceID, it.ProducerSub,
				w.s.sealPayload(q, it.Payload), micros(w.now)); err != nil {
				return fmt.Errorf("buffer push: %w", err)
			}
			results[i] = combtype.PushResult{TxnID: txn, Status: combtype.StatusBuffered, Queue: it.Queue, TraceID: it.TraceID, Offset: -1}
		}
		return nil
	}})
	if err != nil {
		return nil, err
	}
	return results, nil
}

// BufferedPushes is the number of pushes waiting in the buffer.
func (s *Store) BufferedPushes(ctx context.Context) (int64, error) {
	var n int64
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM push_buffer`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count buffered pushes: %w", err)
	}
	return n, nil
}

// DrainPushBuffer appends up to limit buffered pushes to the log, oldest
// first, in one writer op that also deletes them: a crash leaves each one
// either still buffered or appended, never both. Items are deduplicated by
// transactionId like any push. When the op leaves the buffer empty it
// also stores whenEmpty, so "buffer drained" and, say, "maintenance off"
// become durable together. It returns how many rows it took and how many
// are left.
func (s *Store) DrainPushBuffer(ctx context.Context, limit int, whenEmpty map[string]string) (drained int, left int64, err error) {
	limit = max(limit, 1)
	err = s.submit(ctx, &writeOp{isolated: true, apply: func(w *wtx) error {
		drained, left = 0, 0
		// One op drains one tenant's run of rows, so it makes exactly one
		// push call: a push that fails stages nothing.
		var tenant string
		var items []combtype.PushItem
		var lastID int64
		rows, err := w.QueryContext(w.ctx, `SELECT id, tenant, queue_name, partition_name, txn_id,
			COALESCE(trace_id, ''), COALESCE(producer_sub, ''), payload FROM push_buffer ORDER BY id LIMIT ?`, limit)
		if err != nil {
			return fmt.Errorf("read push buffer: %w", err)
		}
		for rows.Next() {
			var id int64
			var t string
			var it combtype.PushItem
			if err := rows.Scan(&id, &t, &it.Queue, &it.Partition, &it.TxnID, &it.TraceID, &it.ProducerSub, &it.Payload); err != nil {
				rows.Close()
				return fmt.Errorf("scan push buffer: %w", err)
			}
			if len(items) > 0 && t != tenant {
				break
			}
			if it.Payload, err = w.s.DecryptPayload(it.Payload); err != nil {
				rows.Close()
				return fmt.Errorf("buffered push %d: %w", id, err)
			}
			tenant, lastID = t, id
			items = append(items, it)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read push buffer: %w", err)
		}
		drained = len(items)
		// Everything that can fail comes before the pushes are staged: a
		// failed op must not leave staged frames behind its rollback.
		if drained > 0 {
			if _, err := w.ExecContext(w.ctx, `DELETE FROM push_buffer WHERE id <= ?`, lastID); err != nil {
				return fmt.Errorf("delete drained pushes: %w", err)
			}
		}
		if err := w.QueryRowContext(w.ctx, `SELECT COUNT(*) FROM push_buffer`).Scan(&left); err != nil {
			return fmt.Errorf("count buffered pushes: %w", err)
		}
		if left == 0 {
			for k, v := range whenEmpty {
				if err := w.setSetting(k, v); err != nil {
					return err
				}
			}
		}
		if drained == 0 {
			return nil
		}
		// Every row was acknowledged ("buffered"): one whose queue was
		// deleted, and its room under MaxQueues taken, while it waited
		// still lands, and its queue is made again past the bound.
		w.pastQueueBound = true
		defer func() { w.pastQueueBound = false }()
		return w.push(tenant, items, make([]combtype.PushResult, len(items)), false)
	}})
	return drained, left, err
}
