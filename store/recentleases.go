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
	// order holds the lease ids in the order they were put, oldest first
	// from head; frames counts what byID holds.
	order  []string
	head   int
	frames int
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

// maxRecentFrames bounds what is remembered by messages, not by leases:
// a wake of 10,000 parked pops hands out 10,000 leases of one message each,
// whose acks come back within the second, and a claim of a full batch
// (combtype.MaxPopBatch) is one lease of 10,000. Bounded by leases (256
// were kept), the acks of such a wake missed all but the last 256 and
// each read its lease's cursor and segments again (leasedOffsets): a
// third of the server's CPU in the wake of 10,000 consumers that ack and
// pop again. A frame costs about 40 bytes besides its transactionId,
// which the pop's answer allocated: under 4 MB for the ids of the
// longest (docs/limits.md) at the bound.
const maxRecentFrames = 1 << 15

func (r *recentLeases) put(lease string, msgs []combtype.Message) {
	if len(msgs) == 0 || len(msgs) > maxRecentFrames {
		return // nothing to find, or more than is kept: located by reading
	}
	frames := make([]leasedFrame, len(msgs))
	for i := range msgs {
		frames[i] = leasedFrame{partition: msgs[i].PartitionID, txn: msgs[i].TxnID, offset: msgs[i].Offset}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byID == nil {
		r.byID = map[string][]leasedFrame{}
	}
	if old, ok := r.byID[lease]; ok {
		r.frames -= len(old) // a lease id is not handed out twice; kept whole if it were
	}
	r.byID[lease] = frames
	r.frames += len(frames)
	r.order = append(r.order, lease)
	for r.frames > maxRecentFrames {
		old := r.order[r.head]
		r.order[r.head] = ""
		r.head++
		if f, ok := r.byID[old]; ok {
			r.frames -= len(f)
			delete(r.byID, old)
		}
	}
	// The queue's slice is moved down once its dropped head is most of it,
	// so that it holds about as many ids as are remembered.
	if r.head > 1024 && r.head > len(r.order)/2 {
		r.order = append(r.order[:0:0], r.order[r.head:]...)
		r.head = 0
	}
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
