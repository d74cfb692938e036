package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/comb-broker/comb/combtype"
)

// Push appends items, fused with every other pending write into one commit.
// It returns after the commit is durable. A transactionId already stored in
// the same partition, or repeated earlier in items, is not stored again and
// answers StatusDuplicate with the original message id.
func (s *Store) Push(ctx context.Context, tenant string, items []combtype.PushItem) ([]combtype.PushResult, error) {
	if len(items) == 0 {
		return []combtype.PushResult{}, nil
	}
	results := make([]combtype.PushResult, len(items))
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
func (w *wtx) push(tenant string, items []combtype.PushItem, results []combtype.PushResult, strict bool) error {
	if err := w.resolvePartitions(tenant, items); err != nil {
		return err
	}
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
			pname = combtype.DefaultPartition
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
				return fmt.Errorf("%w: transactionId %q already exists", combtype.ErrInvalid, id)
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
func itemsBytes(items []combtype.PushItem) int {
	size := 0
	for i := range items {
		size += len(items[i].Payload) + 64
	}
	return size
}

// storedTxids returns which of ids partition already holds, with offsets.
// Only ids whose key is not above the partition's key ceiling can be
// stored, so only those are looked up: with time-ordered ids (UUIDv7, what
// the SDKs generate) a new push's keys are nearly all above it.
func (w *wtx) storedTxids(partitionID int64, ids []string) (map[string]int64, error) {
	ceil, err := w.keyCeiling(partitionID)
	if err != nil {
		return nil, err
	}
	recent := w.s.recent.of(partitionID)
	var maybe []string
	for _, id := range ids {
		if key := txnKey(id); key <= ceil && (recent == nil || recent.maybe(key)) {
			maybe = append(maybe, id)
		}
	}
	return txnOffsets(w.ctx, w, partitionID, maybe)
}

// recentKeys keeps, for the partitions pushed to last, the dedup keys this
// writer stored lately, so that a key below the ceiling is looked up only
// when it may really be stored. A key's low 15 bits are a hash, so with many
// producers the keys of one millisecond land on both sides of the ceiling:
// at batch 1 most partitions of a commit had one below it, and looked up
// keys that were not there. Only the writer goroutine touches it.
type recentKeys map[int64]*keyWindow

// keyWindow holds what a partition's stored keys can be: each is either at
// most floor or in keys. Like the ceiling it only errs high: keys of a
// commit that rolled back, or deleted since, cost a lookup but never hide a
// duplicate.
type keyWindow struct {
	floor int64
	keys  []int64
}

// Bounds on what recentKeys holds: this many partitions, this many keys
// each (a millisecond or more of a busy partition's pushes). A partition
// beyond them is looked up against its ceiling alone, as without windows.
const (
	recentKeysPartitions = 4096
	recentKeysPerWindow  = 32
)

func (r recentKeys) of(partitionID int64) *keyWindow { return r[partitionID] }

// maybe reports whether key may be stored.
func (k *keyWindow) maybe(key int64) bool {
	return key <= k.floor || slices.Contains(k.keys, key)
}

// stored records keys being written to partition, whose ceiling (every key
// stored before them is at most it) is ceil.
func (r *recentKeys) stored(partitionID, ceil int64, keys []int64) {
	if *r == nil {
		*r = recentKeys{}
	}
	k := (*r)[partitionID]
	if k == nil {
		if len(*r) >= recentKeysPartitions {
			for id := range *r {
				delete(*r, id)
				break
			}
		}
		k = &keyWindow{floor: ceil, keys: make([]int64, 0, recentKeysPerWindow)}
		(*r)[partitionID] = k
	}
	for _, key := range keys {
		if key <= k.floor {
			continue
		}
		if len(k.keys) == recentKeysPerWindow {
			// The lowest key leaves the window and raises the floor.
			i := 0
			for j, v := range k.keys {
				if v < k.keys[i] {
					i = j
				}
			}
			k.floor = max(k.floor, k.keys[i])
			k.keys[i] = k.keys[len(k.keys)-1]
			k.keys = k.keys[:len(k.keys)-1]
			if key <= k.floor {
				continue
			}
		}
		k.keys = append(k.keys, key)
	}
}

// keyCeilings holds, per partition, a number no stored dedup key of that
// partition exceeds. It is only ever an upper bound: deletes (retention,
// queue deletes) and commits that roll back leave it higher than the true
// maximum, which costs a lookup but never misses a duplicate. A partition
// id reused after a delete starts empty, so the old bound still holds.
// Only the writer goroutine touches it.
type keyCeilings map[int64]int64

func (c *keyCeilings) raise(partitionID, key int64) {
	if *c == nil {
		*c = keyCeilings{}
	}
	if cur, ok := (*c)[partitionID]; !ok || key > cur {
		// A partition not yet loaded keeps no entry: its bound comes from
		// the index the first time a lookup needs it.
		if ok {
			(*c)[partitionID] = key
		}
	}
}

// keyCeiling returns the key ceiling of partition, read the first time
// from the partition row's max_txn_key, which flush raises with every key
// it stores. The dedup index leads with the key, so it cannot give one
// partition's highest key by a seek; a bound shared by all partitions
// would let one id that is not a UUID, whose hashed key lies anywhere
// below 2^63, send every partition's pushes to the index.
func (w *wtx) keyCeiling(partitionID int64) (int64, error) {
	if ceil, ok := w.s.keyCeil[partitionID]; ok {
		return ceil, nil
	}
	var ceil sql.NullInt64
	if err := w.QueryRowContext(w.ctx, `SELECT max_txn_key FROM partitions WHERE id = +?`, partitionID).Scan(&ceil); err != nil &&
		!errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("highest dedup key: %w", err)
	}
	if w.s.keyCeil == nil {
		w.s.keyCeil = keyCeilings{}
	}
	w.s.keyCeil[partitionID] = ceil.Int64
	if !ceil.Valid {
		w.s.keyCeil[partitionID] = math.MinInt64
	}
	return w.s.keyCeil[partitionID], nil
}
