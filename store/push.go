package store

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/google/uuid"
)

// Push statuses.
const (
	StatusQueued    = "queued"
	StatusDuplicate = "duplicate"
)

// PushItem is one message to append. Payload is raw JSON.
type PushItem struct {
	Queue       string
	Partition   string // "" means DefaultPartition
	Payload     []byte
	TxnID       string // "" gets a generated id
	TraceID     string
	ProducerSub string
}

// PushResult is the outcome of one PushItem, in request order.
type PushResult struct {
	TxnID       string
	Status      string // StatusQueued or StatusDuplicate
	MessageID   string
	PartitionID string
	TraceID     string
	Queue       string
	Offset      int64
}

// MessageID is the id of the message at offset in partition: a UUID
// (version 8, "custom") that carries both numbers, so no column stores it
// and it can be turned back into a position.
func MessageID(partitionID, offset int64) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[0:8], uint64(partitionID)<<16)
	binary.BigEndian.PutUint64(b[8:16], uint64(offset))
	b[6] = 0x80 | (b[6] & 0x0f)
	b[8] = 0x80 | (b[8] & 0x3f)
	return uuid.UUID(b).String()
}

// Push appends items, fused with every other pending write into one commit.
// It returns after the commit is durable. A transactionId already stored in
// the same partition, or repeated earlier in items, is not stored again and
// answers StatusDuplicate with the original message id.
func (s *Store) Push(ctx context.Context, tenant string, items []PushItem) ([]PushResult, error) {
	if len(items) == 0 {
		return []PushResult{}, nil
	}
	results := make([]PushResult, len(items))
	size := 0
	for i := range items {
		size += len(items[i].Payload) + 64
	}
	err := s.submit(ctx, &writeOp{bytes: size, apply: func(w *wtx) error {
		return w.push(tenant, items, results, false)
	}})
	if err != nil {
		return nil, err
	}
	return results, nil
}

// push resolves, deduplicates and stages items into this commit's segments.
// With strict, a transactionId that already exists is an error instead of a
// duplicate (transactions do not deduplicate).
func (w *wtx) push(tenant string, items []PushItem, results []PushResult, strict bool) error {
	type target struct {
		q  *Queue
		pp *pendingPart
	}
	targets := make([]target, len(items))
	// Resolve every partition first and look up stored keys per partition
	// with one query each, before anything is staged.
	lookups := map[*pendingPart][]string{}
	for i := range items {
		it := &items[i]
		q, err := w.queue(tenant, it.Queue, true)
		if err != nil {
			return err
		}
		pname := it.Partition
		if pname == "" {
			pname = DefaultPartition
		}
		p, err := w.partition(q, pname, true)
		if err != nil {
			return err
		}
		pp := w.pendingFor(q, p)
		targets[i] = target{q, pp}
		if it.TxnID == "" {
			it.TxnID = newUUID()
			continue // a fresh id cannot collide
		}
		lookups[pp] = append(lookups[pp], it.TxnID)
	}
	stored := map[*pendingPart]map[string]int64{}
	for pp, ids := range lookups {
		found, err := w.storedTxids(pp.part.ID, ids)
		if err != nil {
			return err
		}
		stored[pp] = found
	}
	if strict {
		for i := range items {
			pp := targets[i].pp
			if _, ok := stored[pp][items[i].TxnID]; ok {
				return fmt.Errorf("%w: transactionId %q already exists", ErrInvalid, items[i].TxnID)
			}
			if _, ok := pp.txns[items[i].TxnID]; ok {
				return fmt.Errorf("%w: transactionId %q already exists", ErrInvalid, items[i].TxnID)
			}
		}
	}
	// Nothing below fails, so a rolled-back savepoint never leaves frames staged.
	for i := range items {
		it, t := &items[i], targets[i]
		res := &results[i]
		res.TxnID, res.Queue, res.PartitionID, res.TraceID = it.TxnID, t.q.Name, t.pp.part.UUID, it.TraceID
		if off, ok := stored[t.pp][it.TxnID]; ok {
			res.Status, res.Offset = StatusDuplicate, off
		} else if off, ok := t.pp.txns[it.TxnID]; ok {
			res.Status, res.Offset = StatusDuplicate, off
		} else {
			off := t.pp.next
			t.pp.next++
			t.pp.txns[it.TxnID] = off
			t.pp.frames = append(t.pp.frames, Frame{TxnID: it.TxnID, TraceID: it.TraceID, ProducerSub: it.ProducerSub, Payload: it.Payload})
			res.Status, res.Offset = StatusQueued, off
		}
		res.MessageID = MessageID(t.pp.part.ID, res.Offset)
	}
	return nil
}

// storedTxids returns which of ids partition already holds, with offsets.
func (w *wtx) storedTxids(partitionID int64, ids []string) (map[string]int64, error) {
	buf := make([]byte, 0, 40*len(ids))
	buf = append(buf, '[')
	for i, id := range ids {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendJSONString(buf, id)
	}
	buf = append(buf, ']')
	rows, err := w.tx.QueryContext(w.ctx,
		`SELECT t.txn_id, t.offset FROM json_each(?) j JOIN txids t ON t.partition_id = ? AND t.txn_id = j.value`,
		string(buf), partitionID)
	if err != nil {
		return nil, fmt.Errorf("look up dedup keys: %w", err)
	}
	defer rows.Close()
	found := map[string]int64{}
	for rows.Next() {
		var id string
		var off int64
		if err := rows.Scan(&id, &off); err != nil {
			return nil, fmt.Errorf("scan dedup key: %w", err)
		}
		found[id] = off
	}
	return found, rows.Err()
}
