package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/comb-broker/comb/combtype"
)

// Transaction applies acks and pushes all or nothing, in one commit. A
// pushed transactionId that already exists fails the whole transaction
// (transactions do not deduplicate); failed and dlq acks dead-letter at once.
func (s *Store) Transaction(ctx context.Context, tenant string, ops []combtype.TxOp) ([]combtype.TxOpResult, error) {
	results := make([]combtype.TxOpResult, len(ops))
	size := 0
	var acks []combtype.AckItem
	var ackOps []int
	for i, op := range ops {
		size += itemsBytes(op.Items)
		if op.Type == "ack" {
			acks = append(acks, op.Ack)
			ackOps = append(ackOps, i)
		}
	}
	// The acks are located before the op is submitted (see locate). A push
	// of this transaction is stored only at the commit, after its acks
	// applied, so none of them can name one.
	pre, err := s.locateAcks(ctx, tenant, acks)
	if err != nil {
		return nil, err
	}
	err = s.submit(ctx, &writeOp{isolated: true, bytes: size, apply: func(w *wtx) error {
		// Acks first: they can fail; pushes are staged last, in one call that
		// checks every key before it stages anything.
		var items []combtype.PushItem
		for i, op := range ops {
			results[i].Type = op.Type
			switch op.Type {
			case "ack":
			case "push":
				items = append(items, op.Items...)
			default:
				return &combtype.TxError{Op: op.Type, Err: fmt.Errorf("%w: unknown operation type %q", combtype.ErrInvalid, op.Type)}
			}
		}
		ackResults := make([]combtype.AckResult, len(acks))
		if err := w.ackAll(tenant, acks, pre, ackResults, ackInTransaction); err != nil {
			return err
		}
		for j, r := range ackResults {
			if !r.Success {
				return &combtype.TxError{Op: "ack", Err: r.Err}
			}
			results[ackOps[j]].Ack = &ackResults[j]
		}
		pushed := make([]combtype.PushResult, len(items))
		if err := w.push(tenant, items, pushed, true); err != nil {
			if errors.Is(err, combtype.ErrInvalid) {
				return &combtype.TxError{Op: "push", Err: err}
			}
			return err
		}
		for i, op := range ops {
			if op.Type == "push" {
				results[i].Pushes, pushed = pushed[:len(op.Items)], pushed[len(op.Items):]
			}
		}
		return nil
	}})
	if err != nil {
		return nil, err
	}
	return results, nil
}
