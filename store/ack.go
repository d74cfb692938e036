package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/comb-broker/comb/combtype"
)

type located struct {
	q      *combtype.Queue
	p      *combtype.Partition
	offset int64
}

// Where a transactionId is stored never changes: only retention (log_start
// moving up) and queue deletion (which detaches the queue from its tenant,
// then removes its partitions) take a message away. So an ack is located
// before it is submitted, on a reader in the caller's goroutine, and the
// writer, whose work every caller waits for, only checks that what was
// found is still there (revalidate) and locates inside the transaction
// just the items that were not found or no longer are.

// locate fills every nil entry of locs with the partition (by uuid, within
// tenant) and the offset of its item's message. Entries whose item names
// nothing stay nil. The partitions cost one query for every
// ackPartitionChunk of them recent does not remember (its rows may be
// stale: see recentLeases.parts); items of a batch a recent claim handed out are found in memory (recent,
// nil for none), then those of batches still leased by reading them
// (leasedOffsets), and the rest by one probe of the key index.
func locate(ctx context.Context, db querier, recent *recentLeases, tenant string, items []combtype.AckItem, locs []*located) error {
	type partInfo struct {
		q      *combtype.Queue
		p      *combtype.Partition
		ids    []string
		leases map[leaseRef]int // items naming each
		found  map[string]int64
	}
	parts := map[string]*partInfo{}
	// The partitions recent does not remember are read together: one
	// query each made an ack batch of 20,000 unknown partitions cost
	// 20,000 queries, twice, once of them in the writer (ackAll).
	var unknown []string
	for i := range items {
		id := items[i].PartitionID
		if _, seen := parts[id]; seen || locs[i] != nil {
			continue
		}
		q, p, cached := recent.partition(tenant, id)
		if !cached {
			unknown = append(unknown, id)
			parts[id] = nil
			continue
		}
		parts[id] = nil
		if p != nil {
			parts[id] = &partInfo{q: q, p: p, leases: map[leaseRef]int{}}
		}
	}
	found, err := ackPartitions(ctx, db, tenant, unknown)
	if err != nil {
		return err
	}
	for _, f := range found {
		parts[f.p.UUID] = &partInfo{q: f.q, p: f.p, leases: map[leaseRef]int{}}
		if recent != nil {
			recent.putPartition(tenant, f.q, f.p)
		}
	}
	for i := range items {
		if locs[i] != nil {
			continue
		}
		it := &items[i]
		if pi := parts[it.PartitionID]; pi != nil {
			pi.ids = append(pi.ids, it.TxnID)
			if it.LeaseID != "" {
				pi.leases[leaseRef{cmp.Or(it.Group, combtype.QueueModeGroup), it.LeaseID}]++
			}
		}
	}
	for _, pi := range parts {
		if pi == nil {
			continue
		}
		pi.found = map[string]int64{}
		if len(pi.leases) > 0 && recent != nil {
			want := make(map[string]bool, len(pi.ids))
			for _, id := range pi.ids {
				want[id] = true
			}
			for ref := range pi.leases {
				recent.find(ref.lease, pi.p.UUID, want, pi.found)
			}
		}
		rest := slices.DeleteFunc(pi.ids, func(id string) bool {
			_, ok := pi.found[id]
			return ok
		})
		if len(rest) == 0 {
			continue
		}
		leased, err := leasedOffsets(ctx, db, pi.p.ID, rest, pi.leases)
		if err != nil {
			return err
		}
		maps.Copy(pi.found, leased)
		rest = slices.DeleteFunc(rest, func(id string) bool {
			_, ok := leased[id]
			return ok
		})
		more, err := txnOffsets(ctx, db, pi.p.ID, rest)
		if err != nil {
			return err
		}
		maps.Copy(pi.found, more)
	}
	for i := range items {
		pi := parts[items[i].PartitionID]
		if locs[i] != nil || pi == nil {
			continue
		}
		if off, ok := pi.found[items[i].TxnID]; ok {
			locs[i] = &located{q: pi.q, p: pi.p, offset: off}
		}
	}
	return nil
}

// leaseRef is a lease an ack item names, with the group holding it.
type leaseRef struct{ group, lease string }

// leasedOffsets returns which of ids lie in the batches that leases still
// hold on partition, with their offsets. Most acks under a lease are of the
// whole batch its claim has just read: one scan of those segments finds
// them for less than a probe of the key index per item. A batch the items
// naming its lease cover less than half of is left to the index, which
// reads only the segments of the offsets it finds. A transactionId is
// stored at one offset of a partition's log at a time, so finding it here
// or through the index is the same answer; whether the lease is live is
// for the ack to decide.
func leasedOffsets(ctx context.Context, db querier, partitionID int64, ids []string, leases map[leaseRef]int) (map[string]int64, error) {
	found := map[string]int64{}
	if len(leases) == 0 {
		return found, nil
	}
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	for ref, n := range leases {
		var lease sql.NullString
		var from, to sql.NullInt64
		err := db.QueryRowContext(ctx, `SELECT lease_id, lease_from, lease_to FROM cursors
			WHERE partition_id = ? AND group_name = ?`, partitionID, ref.group).Scan(&lease, &from, &to)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read lease: %w", err)
		}
		if lease.String != ref.lease || !from.Valid || !to.Valid || 2*int64(n) < to.Int64-from.Int64+1 {
			continue
		}
		err = scanTxnIDs(ctx, db, partitionID, from.Int64, to.Int64, func(off int64, txn string) {
			if want[txn] {
				found[txn] = off
			}
		})
		// A batch damaged since its claim is left to the key index, which
		// reads only the segments holding the offsets it finds.
		if err != nil && !errors.Is(err, combtype.ErrCorrupt) {
			return nil, err
		}
	}
	return found, nil
}

// revalidate returns what of pre, found by locate before the ack reached
// the writer, still holds inside the transaction, with the partition and
// queue rows as they are now: an entry whose partition is gone or no
// longer the tenant's (its queue deleted), or whose offset retention has
// removed (below log_start), becomes nil, to be located again. pre itself
// is left as it was, for a retry of the op.
func (w *wtx) revalidate(tenant string, pre []*located) ([]*located, error) {
	type fresh struct {
		q *combtype.Queue
		p *combtype.Partition
	}
	now := map[string]*fresh{}
	out := make([]*located, len(pre))
	for i, loc := range pre {
		if loc == nil {
			continue
		}
		f, seen := now[loc.p.UUID]
		if !seen {
			// The rows by name, as the writer keeps them between commits
			// (rowCache), and the same partition only if they still have
			// its uuid and id: a partition row deleted with its queue
			// leaves its id to the next partition created, and a queue
			// made again under the name has new partitions. Within tenant,
			// as the queue is looked up by tenant and name.
			q, p, err := w.ackRows(tenant, loc.q.Name, loc.p.Name)
			if err != nil {
				return nil, err
			}
			if p != nil && p.UUID == loc.p.UUID && p.ID == loc.p.ID {
				f = &fresh{q: q, p: p}
			}
			now[loc.p.UUID] = f
		}
		if f != nil && loc.offset >= f.p.LogStart {
			out[i] = &located{q: f.q, p: f.p, offset: loc.offset}
		}
	}
	return out, nil
}

// ackRows resolves tenant's queue and its partition by name through the
// writer's rows (rowCache); nil, nil when either is gone.
func (w *wtx) ackRows(tenant, queue, partition string) (*combtype.Queue, *combtype.Partition, error) {
	q, err := w.queue(tenant, queue, false)
	if errors.Is(err, combtype.ErrQueueNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	p, err := w.partition(q, partition, false)
	if errors.Is(err, combtype.ErrPartitionNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return q, p, nil
}

// ackPartition loads the partition of uuid when its queue is tenant's, and
// that queue; nil, nil when there is none.
// ackPartitions reads the partitions uuids names within tenant, with
// their queues; a uuid that names none has no entry.
func ackPartitions(ctx context.Context, db querier, tenant string, uuids []string) ([]queuePart, error) {
	var out []queuePart
	for len(uuids) > 0 {
		chunk := uuids[:min(len(uuids), ackPartitionChunk)]
		uuids = uuids[len(chunk):]
		arg, err := json.Marshal(chunk)
		if err != nil {
			return nil, fmt.Errorf("locate partitions: %w", err)
		}
		rows, err := db.QueryContext(ctx, `SELECT p.id, p.uuid, p.queue_id, p.name, p.last_offset, p.log_start,
			p.last_segment_at, p.created_at, `+qualifiedQueueColumns+`
			FROM json_each(?) j JOIN partitions p ON p.uuid = j.value JOIN queues q ON q.id = p.queue_id
			WHERE q.tenant = ?`, string(arg), tenant)
		if err != nil {
			return nil, fmt.Errorf("locate partitions: %w", err)
		}
		for rows.Next() {
			qp := queuePart{q: &combtype.Queue{}, p: &combtype.Partition{}}
			var qCreated, pCreated int64
			if err := rows.Scan(append(partitionDest(qp.p, &pCreated), queueDest(qp.q, &qCreated)...)...); err != nil {
				rows.Close()
				return nil, fmt.Errorf("locate partitions: %w", err)
			}
			qp.p.CreatedAt, qp.q.CreatedAt = fromMicros(pCreated), fromMicros(qCreated)
			out = append(out, qp)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("locate partitions: %w", err)
		}
	}
	return out, nil
}

// ackPartitionChunk bounds the uuids of one ackPartitions query.
const ackPartitionChunk = 1000

// queuePart is a partition with its queue.
type queuePart struct {
	q *combtype.Queue
	p *combtype.Partition
}

// locateAcks is locate on a reader, for items about to be submitted.
func (s *Store) locateAcks(ctx context.Context, tenant string, items []combtype.AckItem) ([]*located, error) {
	locs := make([]*located, len(items))
	if err := locate(ctx, s.r, &s.leased, tenant, items, locs); err != nil {
		if s.ctx.Err() != nil {
			return nil, combtype.ErrClosed // the readers close after the writer stops
		}
		return nil, fmt.Errorf("locate acks: %w", err)
	}
	if s.afterLocate != nil {
		s.afterLocate()
	}
	return locs, nil
}

// ackMode is the route an ack came by. The ack rule (admit) is the same
// for all of them; what a status does differs: /ack and /ack/batch run the
// retry rule on failed, a transaction and a cycle dead-letter at once and
// create a missing cursor, and a cycle refuses a replay and may end its
// own batch early (release_lease).
type ackMode int

const (
	ackPlain ackMode = iota
	ackInTransaction
	ackInCycle
)

// admit is the ack rule (docs/wire.md, "The ack rule"), the one place that
// decides whether an ack of the message at off, naming lease ("" for
// none), may touch c, the cursor of its (partition, group) (nil when there
// is none). /ack, /ack/batch, /transaction and /streams/v1/cycle all ask
// it. endsBatch says the ack would end the batch before all of it is
// behind the cursor (a failed or retry ack on /ack gives it back).
//
//  1. A leaseId must be the live lease of (partition, group).
//  2. While a lease lives, no ack moves the cursor past its batch, with
//     or without a leaseId: that would consume messages nobody received.
//  3. Only the holder, an ack naming the live lease, may end the batch
//     early. An ack without a leaseId completes messages inside the batch,
//     and the lease ends when the whole batch is behind the cursor.
//  4. Without a live lease, an ack without a leaseId moves the cursor up
//     to its message: the batch it came in has ended.
//  5. The cursor never moves backwards (advance).
//
// It returns whether the ack holds the batch's lease, or the refusal.
func admit(c *cursor, off int64, lease string, endsBatch bool, now int64) (holder bool, refusal error) {
	live := c != nil && c.live(now)
	switch {
	case lease != "" && (!live || c.leaseID.String != lease):
		return false, combtype.ErrInvalidLease
	case live && c.leaseTo.Valid && off > c.leaseTo.Int64:
		return false, combtype.ErrInvalidLease
	case live && lease == "" && endsBatch:
		return false, combtype.ErrInvalidLease
	}
	return lease != "", nil
}

// applyAck applies one located ack to c, the cursor of (loc.p, group)
// loaded by the caller (nil when there is none), after admit has let it
// through. keepLease is a cycle's release_lease false: its holder keeps
// the lease for the rest of the batch. It returns the cursor to save
// (created in a transaction or a cycle when missing). A returned error is
// a storage failure; a refused ack is reported in the result.
func (w *wtx) applyAck(it *combtype.AckItem, loc *located, c *cursor, mode ackMode, keepLease bool) (combtype.AckResult, *cursor, error) {
	res := combtype.AckResult{TxnID: it.TxnID, Queue: loc.q.Name, Partition: loc.p.Name}
	group := cmp.Or(it.Group, combtype.QueueModeGroup)
	now := micros(w.now)
	status := cmp.Or(it.Status, combtype.AckCompleted)
	givesBack := mode == ackPlain && (status == combtype.AckFailed || status == combtype.AckRetry)
	holder, refusal := admit(c, loc.offset, it.LeaseID, givesBack, now)
	if refusal != nil {
		if givesBack && it.LeaseID != "" && c != nil && c.dropped == it.LeaseID {
			res.Success = true // its batch is already given back
			return res, c, nil
		}
		res.Err = refusal
		return res, c, nil
	}
	// A cycle acks past the cursor. One that acks at or behind it is a
	// replay of a committed cycle (a client retry whose reply was lost,
	// under a lease it kept): applying it again would fold the batch twice.
	if mode == ackInCycle && c != nil && loc.offset <= c.committed {
		res.Err = combtype.ErrAlreadyAcked
		return res, c, nil
	}
	if c == nil {
		if mode == ackPlain {
			res.Success = true // no cursor for this group: nothing to move
			return res, nil, nil
		}
		// A group is a subscription wherever it is counted
		// (Options.MaxGroups): one that first appears through an ack is
		// recorded as its first pop naming no mode would record it, as a
		// seek does. Acks naming new groups made cursors past the bound:
		// 400,000 groups from 20 transactions, listings of seconds.
		if err := w.seekSubscribe(loc.q.ID, group); err != nil {
			return res, c, err
		}
		c = &cursor{committed: loc.p.LogStart - 1, created: true}
	}
	c.dirty = true
	inFlight := c.leaseID.Valid && c.leaseFrom.Valid && loc.offset >= c.leaseFrom.Int64 && loc.offset <= c.leaseTo.Int64
	switch status {
	case combtype.AckCompleted, combtype.AckSuccess:
		res.LeaseReleased = c.advance(loc.offset, now)
	case combtype.AckFailed, combtype.AckDLQ:
		switch {
		case mode != ackPlain || status == combtype.AckDLQ:
			errText, retry := cmp.Or(it.Error, "Retries exhausted"), c.retry
			switch mode {
			case ackInTransaction:
				errText, retry = cmp.Or(it.Error, "Unknown error"), 0
			case ackInCycle:
				errText, retry = cmp.Or(it.Error, "Streaming cycle reported failure"), 0
			}
			if err := w.deadLetter(loc, group, errText, retry); err != nil {
				return res, c, err
			}
			res.DLQ = true
			res.LeaseReleased = c.advance(loc.offset, now)
		case loc.offset <= c.committed || !inFlight:
			// Already behind the cursor, or part of a batch whose lease a
			// previous failure dropped: nothing more to do.
		case c.retry < loc.q.Options.RetryLimit:
			c.retry++
			c.dropped = c.leaseID.String
			c.releaseLease()
			res.LeaseReleased = true
		default:
			if err := w.deadLetter(loc, group, cmp.Or(it.Error, "Retries exhausted"), c.retry); err != nil {
				return res, c, err
			}
			res.DLQ = true
			res.LeaseReleased = c.advance(loc.offset, now)
		}
	case combtype.AckRetry:
		if c.leaseID.Valid {
			c.dropped = c.leaseID.String
			c.releaseLease()
			res.LeaseReleased = true
		}
	default:
		return res, c, nil // unknown status: not applied, no error text (as Queen)
	}
	// The holder's cycle ends its batch with the cycle unless it keeps the
	// lease (release_lease false, the gate's partial ack); a failed one
	// always does.
	if mode == ackInCycle && holder && c.leaseID.Valid && (!keepLease || res.DLQ) {
		c.finishBatch()
		res.LeaseReleased = true
	}
	if res.LeaseReleased && c.committed < loc.p.LastOffset {
		// Only the group's own pops can take what its lease held. A lease
		// ended with the whole partition behind the cursor leaves nothing
		// to take, and the next pop of an idle group need not walk the
		// queue for it (idle.go); a push to the partition in this commit
		// is a new segment, which the pops find on their own.
		w.touchGroup(loc.q.Tenant, loc.q.Name, group, loc.p.ID)
	}
	res.Success = true
	return res, c, nil
}

// ackAll applies items in (partition, group, offset) order, loading and
// saving each cursor once, and writes results in request order. pre is
// what locateAcks found before the op was submitted. Items naming no
// stored message get ErrMessageNotFound.
func (w *wtx) ackAll(tenant string, items []combtype.AckItem, pre []*located, results []combtype.AckResult, mode ackMode) error {
	w.dlqCopies, w.dlqCopied = 0, 0
	locs, err := w.revalidate(tenant, pre)
	if err != nil {
		return err
	}
	// A message that was not there when located may have been stored since
	// (a push committed in between), or stored again after retention took
	// it: those items are located here, as they all once were. Not from
	// recent leases: what they hold was tried, and may be what revalidate
	// has just found gone.
	if err := locate(w.ctx, w, nil, tenant, items, locs); err != nil {
		return err
	}
	order := make([]int, 0, len(items))
	for i := range items {
		results[i] = combtype.AckResult{TxnID: items[i].TxnID}
		if locs[i] == nil {
			results[i].Err = combtype.ErrMessageNotFound
			continue
		}
		order = append(order, i)
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(locs[a].p.ID, locs[b].p.ID),
			cmp.Compare(cmp.Or(items[a].Group, combtype.QueueModeGroup), cmp.Or(items[b].Group, combtype.QueueModeGroup)),
			cmp.Compare(locs[a].offset, locs[b].offset))
	})
	for start := 0; start < len(order); {
		first := order[start]
		pid, group := locs[first].p.ID, cmp.Or(items[first].Group, combtype.QueueModeGroup)
		end := start
		for end < len(order) && locs[order[end]].p.ID == pid && cmp.Or(items[order[end]].Group, combtype.QueueModeGroup) == group {
			end++
		}
		c, err := w.loadCursor(pid, group)
		if err != nil {
			return err
		}
		for k, i := range order[start:end] {
			// The same ack again (the same message, status and lease)
			// reports what the first did: applied again, a repeated failed
			// ack found the lease the first had ended, and answered
			// "Invalid or expired lease" where the first dead-lettered
			// the message. The acks of a message are sorted together.
			if j := sameAckBefore(items, locs, order[start:start+k], i); j >= 0 {
				results[i] = results[j]
				results[i].TxnID = items[i].TxnID
				continue
			}
			if results[i], c, err = w.applyAck(&items[i], locs[i], c, mode, false); err != nil {
				return err
			}
			if err := w.deadLetterBound(); err != nil {
				return err
			}
		}
		if c != nil && c.dirty {
			if err := w.saveCursor(pid, group, c); err != nil {
				return err
			}
		}
		start = end
	}
	return nil
}

// sameAckBefore is the item of before, the acks of the same partition and
// group applied before item i in offset order, that acks i's message with
// i's status and lease; -1 if none.
func sameAckBefore(items []combtype.AckItem, locs []*located, before []int, i int) int {
	for k := len(before) - 1; k >= 0 && locs[before[k]].offset == locs[i].offset; k-- {
		j := before[k]
		if items[j].Status == items[i].Status && items[j].LeaseID == items[i].LeaseID {
			return j
		}
	}
	return -1
}

// Ack applies acknowledgements atomically, in (partition, group, offset)
// order, and answers in request order. group, when not "", overrides every
// item's group.
func (s *Store) Ack(ctx context.Context, tenant, group string, items []combtype.AckItem) ([]combtype.AckResult, error) {
	if group != "" {
		for i := range items {
			items[i].Group = group
		}
	}
	pre, err := s.locateAcks(ctx, tenant, items)
	if err != nil {
		return nil, err
	}
	results := make([]combtype.AckResult, len(items))
	err = s.submit(ctx, &writeOp{apply: func(w *wtx) error {
		return w.ackAll(tenant, items, pre, results, ackPlain)
	}})
	if err != nil {
		return nil, err
	}
	return results, nil
}
