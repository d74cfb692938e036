package store

import (
	"fmt"
	"math"
	"strconv"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/store/segment"
)

// Push fusion: pushes staged by every op of one commit become, at flush,
// one bounded run of segments per partition, their dedup rows and the
// partitions' new last offsets, all inside the writer's transaction.

type pendingPart struct {
	part   *combtype.Partition
	queue  *combtype.Queue
	staged []staged        // in arrival order; deduplicated at flush
	ids    map[string]bool // client transactionIds staged, for strict checks
	frames []segment.Frame // built at flush
	next   int64           // next offset to hand out, set at flush
}

// staged is one pushed item waiting for the flush, which decides whether it
// is new or a duplicate and writes its result.
type staged struct {
	item *combtype.PushItem
	res  *combtype.PushResult
	// generated ids are fresh UUIDs and cannot collide with a stored key.
	generated bool
}

// stagedMark is how many pushes each partition had staged when an
// isolated op began.
type stagedMark map[*pendingPart]int

func (w *wtx) stagedMark() stagedMark {
	m := make(stagedMark, len(w.pending))
	for _, p := range w.pending {
		m[p] = len(p.staged)
	}
	return m
}

// forgetResolved undoes what a rolled-back savepoint left in memory: the
// lookups it may have created, and the pushes it staged, so that an op
// that failed after staging writes none of them.
func (w *wtx) forgetResolved(mark stagedMark) {
	clear(w.queues)
	clear(w.partitions)
	w.rowsChanged()
	kept := w.pending[:0]
	for _, p := range w.pending {
		n, ok := mark[p]
		if !ok || n == 0 {
			delete(w.byPart, p.part.ID)
			continue
		}
		if n < len(p.staged) {
			clear(p.staged[n:])
			p.staged = p.staged[:n]
			clear(p.ids)
			for _, st := range p.staged {
				if !st.generated {
					p.ids[st.item.TxnID] = true
				}
			}
		}
		kept = append(kept, p)
	}
	w.pending = kept
}

// pendingFor returns the accumulator of partition p, loading its next offset.
func (w *wtx) pendingFor(q *combtype.Queue, p *combtype.Partition) *pendingPart {
	if pp := w.byPart[p.ID]; pp != nil {
		return pp
	}
	pp := &pendingPart{part: p, queue: q, next: p.LastOffset + 1, ids: map[string]bool{}}
	w.byPart[p.ID] = pp
	w.pending = append(w.pending, pp)
	return pp
}

// flush decides every staged push (new or duplicate, with one key lookup
// per partition for the whole commit), then writes one segment per
// partition, the dedup rows and the new last offsets. created_at is stamped
// here, inside the transaction, and never decreases within a partition.
func (w *wtx) flush() error {
	var advances []any // per written partition: id, last offset, created_at, max key, last segment
	for _, pp := range w.pending {
		if err := w.resolveStaged(pp); err != nil {
			return err
		}
		if len(pp.frames) == 0 {
			continue
		}
		if pp.part.LastOffset > math.MaxInt64-int64(len(pp.frames)) {
			// Only a last_offset another program wrote gets here; past it
			// the offsets wrapped negative and the insert answered 500.
			return fmt.Errorf("%w: partition %q of queue %q has no offsets left (last_offset %d)",
				combtype.ErrInvalid, pp.part.Name, pp.queue.Name, pp.part.LastOffset)
		}
		createdAt := max(micros(w.now), pp.part.LastSegmentAt)
		if err := w.insertSegments(pp, createdAt); err != nil {
			return err
		}
		maxKey, err := w.insertTxids(pp)
		if err != nil {
			return err
		}
		if w.s.partitionRowsEach {
			if _, err := w.ExecContext(w.ctx,
				`UPDATE partitions SET last_offset = ?1, last_segment_at = ?2, max_txn_key = max(coalesce(max_txn_key, ?3), ?3),
				 last_segment_id = ?5 WHERE id = ?4`, pp.next-1, createdAt, maxKey, pp.part.ID, w.s.segSeq); err != nil {
				return fmt.Errorf("advance last_offset: %w", err)
			}
		} else {
			advances = append(advances, pp.part.ID, pp.next-1, createdAt, maxKey, w.s.segSeq)
		}
		pp.part.LastOffset, pp.part.LastSegmentAt = pp.next-1, createdAt
		w.s.stats.Frames.Add(int64(len(pp.frames)))
		w.touchAppend(pp.queue.Tenant, pp.queue.Name)
	}
	// The partitions' new last offsets go in statements of up to
	// maxRowsInValues partitions each: at batch 1 a commit writes to every
	// partition, and a statement per partition cost more than its row.
	for len(advances) > 0 {
		n := min(len(advances)/5, maxRowsInValues)
		if _, err := w.ExecContext(w.ctx, partitionsAdvance(n), advances[:5*n]...); err != nil {
			return fmt.Errorf("advance last_offset: %w", err)
		}
		advances = advances[5*n:]
	}
	return nil
}

// Bounds on one segment. A pop decodes whole segments, so however large a
// push or a fused commit, a pop costs what its batch costs, not what the
// commit was: the frames of one partition are cut into segments of at most
// this many frames and payload bytes (one frame at least).
const (
	MaxSegmentFrames = 256
	MaxSegmentBytes  = 256 << 10
)

// insertSegments writes the frames of pp as one or more bounded segments.
func (w *wtx) insertSegments(pp *pendingPart, createdAt int64) error {
	base := pp.next - int64(len(pp.frames))
	for start := 0; start < len(pp.frames); {
		end, size := start, 0
		for end < len(pp.frames) && end-start < MaxSegmentFrames &&
			(end == start || size+len(pp.frames[end].Payload) <= MaxSegmentBytes) {
			size += len(pp.frames[end].Payload)
			end++
		}
		seg, err := w.s.enc.EncodeScratch(pp.frames[start:end])
		if err != nil {
			return err
		}
		// The id is the segment's place in commit order (see segmentSeq);
		// a commit that fails leaves a gap, which is harmless.
		w.s.segSeq++
		if _, err := w.ExecContext(w.ctx,
			`INSERT INTO segments (id, partition_id, base_offset, frame_count, created_at, codec, raw_size, checksum, data)
			 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			w.s.segSeq, pp.part.ID, base+int64(start), end-start, createdAt, seg.Codec, seg.RawSize, int64(seg.Checksum), seg.Data); err != nil {
			return fmt.Errorf("insert segment: %w", err)
		}
		w.s.stats.Segments.Add(1)
		start = end
	}
	return nil
}

// resolveStaged assigns offsets to the new items of pp in arrival order;
// an id already stored, or staged earlier in this commit, is a duplicate
// answering the original's offset.
func (w *wtx) resolveStaged(pp *pendingPart) error {
	var ids []string
	for _, st := range pp.staged {
		if !st.generated {
			ids = append(ids, st.item.TxnID)
		}
	}
	stored := map[string]int64{}
	if len(ids) > 0 {
		var err error
		if stored, err = w.storedTxids(pp.part.ID, ids); err != nil {
			return err
		}
	}
	seen := make(map[string]int64, len(pp.staged))
	msgIDs := w.s.messageIDs(pp.part.UUID)
	for _, st := range pp.staged {
		it, res := st.item, st.res
		off, dup := stored[it.TxnID]
		if !dup {
			off, dup = seen[it.TxnID]
		}
		if dup {
			res.Status, res.Offset = combtype.StatusDuplicate, off
		} else {
			off = pp.next
			pp.next++
			seen[it.TxnID] = off
			pp.frames = append(pp.frames, segment.Frame{TxnID: it.TxnID, TraceID: it.TraceID, ProducerSub: it.ProducerSub,
				Payload: w.s.sealPayload(pp.queue, it.Payload)})
			res.Status, res.Offset = combtype.StatusQueued, off
		}
		res.MessageID = msgIDs.at(off)
	}
	return nil
}

// insertTxids writes the dedup rows of pp, a few as bound values and more
// in one statement per chunk (the ids travel as one JSON array, so the
// statement text never changes), and returns the highest key among them.
// The statements are OR FAIL: a multi-row statement that may ABORT makes
// SQLite copy every page it changes into a statement journal, to undo the
// statement alone, and a failure here fails the whole commit, which
// runBatch rolls back (a sixth of the writer's CPU at batch 100).
func (w *wtx) insertTxids(pp *pendingPart) (int64, error) {
	const chunk = 4096
	base := pp.next - int64(len(pp.frames))
	maxKey := int64(math.MinInt64)
	// The ceiling before these keys bounds every key stored before them,
	// which is what a new window of recent keys starts from.
	ceil, known := w.s.keyCeil[pp.part.ID]
	keys := make([]int64, len(pp.frames))
	for i := range pp.frames {
		key := txnKey(pp.frames[i].TxnID)
		w.s.keyCeil.raise(pp.part.ID, key)
		maxKey = max(maxKey, key)
		keys[i] = key
	}
	if len(keys) <= maxRowsInValues && !w.s.dedupJSON {
		// A few keys, the common case when producers push one message at
		// a time, go as bound values: parsing a JSON array of five keys
		// cost more than inserting the rows.
		args := make([]any, 0, 2+len(keys))
		args = append(args, pp.part.ID, base)
		for _, k := range keys {
			args = append(args, k)
		}
		if _, err := w.ExecContext(w.ctx, txidsValues(len(keys)), args...); err != nil {
			return 0, fmt.Errorf("insert dedup keys: %w", err)
		}
	} else {
		buf := make([]byte, 0, 20*min(len(keys), chunk))
		for start := 0; start < len(keys); start += chunk {
			end := min(start+chunk, len(keys))
			buf = append(buf[:0], '[')
			for i := start; i < end; i++ {
				if i > start {
					buf = append(buf, ',')
				}
				buf = strconv.AppendInt(buf, keys[i], 10)
			}
			buf = append(buf, ']')
			if _, err := w.ExecContext(w.ctx,
				`INSERT OR FAIL INTO txids (partition_id, txn_key, offset)
				 SELECT ?, value, ? + key FROM json_each(?)`,
				pp.part.ID, base+int64(start), string(buf)); err != nil {
				return 0, fmt.Errorf("insert dedup keys: %w", err)
			}
		}
	}
	if known {
		w.s.recent.stored(pp.part.ID, ceil, keys)
	}
	return maxKey, nil
}

// maxRowsInValues is the most dedup rows insertTxids writes as a VALUES
// list; more go as one JSON array, so there are at most this many
// statement texts to prepare.
const maxRowsInValues = 16

// txidsValuesText holds the VALUES statement for each row count.
var txidsValuesText = func() (texts [maxRowsInValues + 1]string) {
	for n := 1; n <= maxRowsInValues; n++ {
		b := []byte("INSERT OR FAIL INTO txids (partition_id, txn_key, offset) VALUES ")
		for i := range n {
			if i > 0 {
				b = append(b, ',')
			}
			b = fmt.Appendf(b, "(?1, ?%d, ?2 + %d)", i+3, i)
		}
		texts[n] = string(b)
	}
	return texts
}()

// txidsValues is the statement that inserts n dedup rows of one partition
// at consecutive offsets: ?1 the partition, ?2 the first offset, ?3... the keys.
func txidsValues(n int) string { return txidsValuesText[n] }

// partitionsAdvanceText holds the statement that advances n partitions.
var partitionsAdvanceText = func() (texts [maxRowsInValues + 1]string) {
	for n := 1; n <= maxRowsInValues; n++ {
		b := []byte("WITH v(id, last_offset, created_at, max_key, seg) AS (VALUES ")
		for i := range n {
			if i > 0 {
				b = append(b, ',')
			}
			b = fmt.Appendf(b, "(?%d, ?%d, ?%d, ?%d, ?%d)", 5*i+1, 5*i+2, 5*i+3, 5*i+4, 5*i+5)
		}
		b = append(b, `)
UPDATE partitions SET last_offset = v.last_offset, last_segment_at = v.created_at,
 max_txn_key = max(coalesce(partitions.max_txn_key, v.max_key), v.max_key), last_segment_id = v.seg
FROM v WHERE partitions.id = v.id`...)
		texts[n] = string(b)
	}
	return texts
}()

// partitionsAdvance is the statement that writes the new last offset,
// created_at, highest dedup key and last segment of n partitions, bound
// five values a partition in that order after its id.
func partitionsAdvance(n int) string { return partitionsAdvanceText[n] }
