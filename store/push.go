package store

import (
	"context"
	"fmt"
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

// Push appends items, fused with every other pending write into one commit.
// It returns after the commit is durable. A transactionId already stored in
// the same partition, or repeated earlier in items, is not stored again and
// answers StatusDuplicate with the original message id.
func (s *Store) Push(ctx context.Context, tenant string, items []PushItem) ([]PushResult, error) {
	if len(items) == 0 {
		return []PushResult{}, nil
	}
	results := make([]PushResult, len(items))
	err := s.submit(ctx, &writeOp{bytes: itemsBytes(items), apply: func(w *wtx) error {
		return w.push(tenant, items, results, false)
	}})
	if err != nil {
		return nil, err
	}
	return results, nil
}

// push resolves the queue and partition of every item and stages it for
// the flush, which deduplicates the whole commit at once. With strict, a
// transactionId that already exists (stored, or staged in this commit) is
// an error instead of a duplicate, since transactions do not deduplicate;
// strict checks happen before anything is staged, so a rolled-back
// savepoint never leaves items behind.
func (w *wtx) push(tenant string, items []PushItem, results []PushResult, strict bool) error {
	pps := make([]*pendingPart, len(items))
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
		pps[i] = w.pendingFor(q, p)
		if strict && it.TxnID != "" {
			lookups[pps[i]] = append(lookups[pps[i]], it.TxnID)
		}
	}
	for pp, ids := range lookups {
		stored, err := w.storedTxids(pp.part.ID, ids)
		if err != nil {
			return err
		}
		// An id named twice in this call is a repeat as well.
		repeated := make(map[string]bool, len(ids))
		for _, id := range ids {
			if _, ok := stored[id]; ok || pp.ids[id] || repeated[id] {
				return fmt.Errorf("%w: transactionId %q already exists", ErrInvalid, id)
			}
			repeated[id] = true
		}
	}
	for i := range items {
		it, pp := &items[i], pps[i]
		generated := it.TxnID == ""
		if generated {
			it.TxnID = newUUID()
		} else {
			pp.ids[it.TxnID] = true
		}
		res := &results[i]
		res.TxnID, res.Queue, res.PartitionID, res.TraceID = it.TxnID, pp.queue.Name, pp.part.UUID, it.TraceID
		pp.staged = append(pp.staged, staged{item: it, res: res, generated: generated})
	}
	return nil
}

// itemsBytes is roughly what items weigh in a commit, for the writer's
// bound on the bytes one commit fuses.
func itemsBytes(items []PushItem) int {
	size := 0
	for i := range items {
		size += len(items[i].Payload) + 64
	}
	return size
}

// storedTxids returns which of ids partition already holds, with offsets.
func (w *wtx) storedTxids(partitionID int64, ids []string) (map[string]int64, error) {
	return txnOffsets(w.ctx, w, partitionID, ids)
}
