package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
)

// TxOp is one operation of an atomic transaction: an ack or a push.
type TxOp struct {
	Type  string // "ack" or "push"
	Ack   AckItem
	Items []PushItem
}

// TxOpResult is the outcome of one TxOp.
type TxOpResult struct {
	Type   string
	Ack    *AckResult
	Pushes []PushResult
}

// TxError is a transaction refused as a whole; nothing of it was written.
type TxError struct{ Msg string }

func (e *TxError) Error() string { return e.Msg }

// Transaction applies acks and pushes all or nothing, in one commit. A
// pushed transactionId that already exists fails the whole transaction
// (transactions do not deduplicate); failed and dlq acks dead-letter at once.
func (s *Store) Transaction(ctx context.Context, tenant string, ops []TxOp) ([]TxOpResult, error) {
	results := make([]TxOpResult, len(ops))
	size := 0
	var acks []AckItem
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
		var items []PushItem
		for i, op := range ops {
			results[i].Type = op.Type
			switch op.Type {
			case "ack":
			case "push":
				items = append(items, op.Items...)
			default:
				return &TxError{Msg: fmt.Sprintf("Unknown operation type: %s", op.Type)}
			}
		}
		ackResults := make([]AckResult, len(acks))
		if err := w.ackAll(tenant, acks, pre, ackResults, ackInTransaction); err != nil {
			return err
		}
		for j, r := range ackResults {
			if !r.Success {
				return &TxError{Msg: "ACK operation failed: " + cmp.Or(r.Error, "invalid status")}
			}
			results[ackOps[j]].Ack = &ackResults[j]
		}
		pushed := make([]PushResult, len(items))
		if err := w.push(tenant, items, pushed, true); err != nil {
			if errors.Is(err, ErrInvalid) {
				return &TxError{Msg: "PUSH operation failed: " + err.Error()}
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
