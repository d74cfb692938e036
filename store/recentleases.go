package store

import "sync"
import "github.com/comb-broker/comb/combtype"

// recentLeases remembers, for the last leases claims handed out, the
// transactionId at each offset they delivered. An ack of a batch names its
// lease and the transactionIds the pop answered, so it is located from
// memory instead of by decoding the batch's segments again (leasedOffsets)
// or probing the key index. What it holds are facts about the log that do
// not change: an offset is never written twice, and a partition is named
// by its uuid. Whether the message is still stored is for revalidate to
// check, and whether the lease is live for the ack to decide, as for any
// other way of locating it.
type recentLeases struct {
	mu   sync.Mutex
	byID map[string][]leasedFrame
	ring []string // lease ids in the order they were put, oldest replaced first
	next int
	// parts holds the partition and queue rows acks were located in, by
	// tenant and partition uuid, so that an ack of a batch does not read
	// them again on its way to the writer. They may be stale: locate uses
	// them only to find offsets, and revalidate reads the rows as they
	// are inside the transaction and drops an entry whose partition is
	// gone or is another row now, to be located again there.
	parts map[partRef]partRows
}

type partRef struct{ tenant, uuid string }

type partRows struct {
	q *combtype.Queue
	p *combtype.Partition
}

// maxRecentParts bounds parts; past it the map starts over.
const maxRecentParts = 4096

type leasedFrame struct {
	partition string // uuid
	txn       string
	offset    int64
}

// recentLeaseCap bounds what is remembered: a batch of 100 costs a few KB
// (the strings are the ones the pop answered with).
const recentLeaseCap = 256

func (r *recentLeases) put(lease string, msgs []combtype.Message) {
	frames := make([]leasedFrame, len(msgs))
	for i := range msgs {
		frames[i] = leasedFrame{partition: msgs[i].PartitionID, txn: msgs[i].TxnID, offset: msgs[i].Offset}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byID == nil {
		r.byID = make(map[string][]leasedFrame, recentLeaseCap)
		r.ring = make([]string, recentLeaseCap)
	}
	if old := r.ring[r.next]; old != "" {
		delete(r.byID, old)
	}
	r.ring[r.next] = lease
	r.next = (r.next + 1) % len(r.ring)
	r.byID[lease] = frames
}

// find adds to found the offset of every id in want that lease delivered
// on partition (by uuid).
func (r *recentLeases) find(lease, partition string, want map[string]bool, found map[string]int64) {
	r.mu.Lock()
	frames := r.byID[lease]
	r.mu.Unlock()
	for _, f := range frames {
		if f.partition == partition && want[f.txn] {
			found[f.txn] = f.offset
		}
	}
}

// partition returns the rows remembered for tenant's partition uuid.
func (r *recentLeases) partition(tenant, uuid string) (*combtype.Queue, *combtype.Partition, bool) {
	if r == nil {
		return nil, nil, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rows, ok := r.parts[partRef{tenant, uuid}]
	return rows.q, rows.p, ok
}

// putPartition remembers q and p, which the caller no longer changes, as
// tenant's partition p.UUID.
func (r *recentLeases) putPartition(tenant string, q *combtype.Queue, p *combtype.Partition) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.parts == nil || len(r.parts) >= maxRecentParts {
		r.parts = make(map[partRef]partRows)
	}
	r.parts[partRef{tenant, p.UUID}] = partRows{q, p}
}
