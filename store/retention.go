package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/store/segment"
)

// Retention primitives. The retention service (package retention) decides
// when to sweep; these decide what a sweep may delete and delete it. Every
// deletion is one writer op bounded in time as well as in size, so a push
// queued behind retention waits for one bounded op, never for the whole
// backlog, and a large backlog still goes in few commits (each commit is
// a sync: at a thousand messages per op, syncs were most of a sweep).
//
// Inside an op the segments are read in chunks (their transactionIds name
// the dedup keys to delete), and the run of segments that goes is deleted
// at the end with one statement, with the tombstones of its offsets and
// the new log_start.
//
// Rules every eviction keeps:
//   - whole segments only, oldest first: a partition keeps a contiguous
//     suffix of its log and log_start moves to its first remaining offset;
//   - never a segment that holds or follows the first offset of a live
//     lease, so a consumer can finish (and ack) the batch it holds;
//   - for time-based policies, never a segment a live snapshot needs;
//   - never the dead-letter table: DLQ rows are copies and outlive their
//     segments;
//   - the dedup keys and traces of evicted frames go with them.

// Defaults for EvictLimits.
const (
	// DefaultEvictSegments bounds the segments one writer op deletes.
	DefaultEvictSegments = 4096
	// DefaultEvictBytes bounds the stored bytes one writer op deletes; a
	// segment larger than this is still deleted, alone.
	DefaultEvictBytes = 256 << 20
	// DefaultEvictFrames bounds the messages one writer op deletes. A
	// segment with more frames is still deleted, alone.
	DefaultEvictFrames = 1 << 18
	// DefaultEvictTime bounds the time one writer op spends deleting: past
	// it the op deletes what it has read and stops. It is checked between
	// chunks (evictChunkFrames), so an op overruns it by at most one
	// chunk, a few milliseconds. A push that arrives meanwhile commits
	// after the op, so this is about what retention adds to its latency.
	DefaultEvictTime = 10 * time.Millisecond
	// evictChunkFrames and evictChunkBytes bound what an op reads and
	// holds at once: one chunk's transactionIds, its dedup-key deletes.
	evictChunkFrames = 512
	evictChunkBytes  = 2 << 20
	evictChunkSegs   = 64
)

// EvictLimits bound one eviction op.
type EvictLimits struct {
	// Segments is the most segments deleted per op. Default DefaultEvictSegments.
	Segments int
	// Bytes is the most stored segment bytes deleted per op. Default DefaultEvictBytes.
	Bytes int64
	// Frames is the most messages deleted per op. Default DefaultEvictFrames.
	Frames int64
	// Time is the most time an op spends deleting (wall time, checked
	// between chunks). Default DefaultEvictTime.
	Time time.Duration
}

func (l EvictLimits) withDefaults() EvictLimits {
	l.Segments = cmp.Or(l.Segments, DefaultEvictSegments)
	l.Bytes = cmp.Or(l.Bytes, DefaultEvictBytes)
	l.Frames = cmp.Or(l.Frames, DefaultEvictFrames)
	l.Time = cmp.Or(l.Time, DefaultEvictTime)
	return l
}

// EvictResult counts what one eviction op deleted.
type EvictResult struct {
	Segments int
	Frames   int64
	Bytes    int64 // stored (compressed) segment bytes
	// Traces counts the traces of evicted messages deleted, those of
	// messages whose many traces go in several ops included.
	Traces int64
	// More is true when the op stopped at its limits with more to delete.
	More bool
}

// RetentionQueues returns the queues that have a retention policy to
// enforce: retentionEnabled with retentionSeconds or
// completedRetentionSeconds, maxWaitTimeSeconds (which applies without
// retentionEnabled), or maxBytes. Every tenant's queues are included.
func (s *Store) RetentionQueues(ctx context.Context) ([]*combtype.Queue, error) {
	return listQueues(ctx, s.r, `SELECT `+queueColumns+` FROM queues
		WHERE (retention_enabled = 1 AND (retention_seconds > 0 OR completed_retention_seconds > 0))
			OR max_wait_time_seconds > 0 OR max_bytes > 0
		ORDER BY id`)
}

// agePolicy is what time-based retention allows on one partition.
type agePolicy struct {
	// Segments created before cutoff go, consumed or not (retentionSeconds,
	// maxWaitTimeSeconds). math.MinInt64 = no such rule.
	cutoff int64
	// Segments created before doneCutoff go once every group has consumed
	// them (completedRetentionSeconds). math.MinInt64 = no such rule.
	doneCutoff int64
}

func newAgePolicy(o combtype.QueueOptions, now int64) (agePolicy, bool) {
	p := agePolicy{cutoff: math.MinInt64, doneCutoff: math.MinInt64}
	if o.RetentionEnabled && o.RetentionSeconds > 0 {
		p.cutoff = addMicros(now, -secondsMicros(o.RetentionSeconds))
	}
	if o.MaxWaitTimeSeconds > 0 {
		p.cutoff = max(p.cutoff, addMicros(now, -secondsMicros(o.MaxWaitTimeSeconds)))
	}
	if o.RetentionEnabled && o.CompletedRetentionSeconds > 0 {
		p.doneCutoff = addMicros(now, -secondsMicros(o.CompletedRetentionSeconds))
	}
	return p, p.cutoff != math.MinInt64 || p.doneCutoff != math.MinInt64
}

// AgedPartitions returns, from a reader, the partitions of q whose oldest
// segment is old enough for one of q's time-based policies at now: the
// only ones worth an EvictAged op.
func (s *Store) AgedPartitions(ctx context.Context, q *combtype.Queue, now time.Time) ([]int64, error) {
	pol, ok := newAgePolicy(q.Options, micros(now))
	if !ok {
		return nil, nil
	}
	rows, err := s.r.QueryContext(ctx, `SELECT p.id FROM partitions p WHERE p.queue_id = ? AND
		(SELECT s.created_at FROM segments s WHERE s.partition_id = p.id ORDER BY s.base_offset LIMIT 1) < ?
		ORDER BY p.id`, q.ID, max(pol.cutoff, pol.doneCutoff))
	if err != nil {
		return nil, fmt.Errorf("list aged partitions: %w", err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("scan partition: %w", err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// EvictAged deletes, in one writer op, the oldest segments of a partition
// of queue queueID that the queue's time-based policies (retentionSeconds,
// completedRetentionSeconds, maxWaitTimeSeconds) allow at now, up to lim.
// The options are read inside the op, so a policy changed since the sweep
// listed the queue is honoured.
func (s *Store) EvictAged(ctx context.Context, queueID, partitionID int64, now time.Time, lim EvictLimits) (EvictResult, error) {
	lim = lim.withDefaults()
	var res EvictResult
	err := s.submit(ctx, &writeOp{isolated: true, apply: func(w *wtx) error {
		res = EvictResult{}
		q, err := scanQueue(w.QueryRowContext(w.ctx, `SELECT `+queueColumns+` FROM queues WHERE id = ?`, queueID))
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("load queue: %w", err)
		}
		nowUS := micros(now)
		pol, ok := newAgePolicy(q.Options, nowUS)
		if !ok {
			return nil
		}
		p, err := scanPartition(w.QueryRowContext(w.ctx, `SELECT `+partitionColumns+` FROM partitions WHERE id = ? AND queue_id = ?`,
			partitionID, queueID))
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("load partition: %w", err)
		}
		// Exclusive bound on the last offset of an evictable segment.
		floor, err := w.leaseFloor(p.ID, nowUS)
		if err != nil {
			return err
		}
		snap, err := w.snapshotPin(p.ID, nowUS)
		if err != nil {
			return err
		}
		floor = min(floor, snap)
		consumed := int64(math.MinInt64)
		if pol.doneCutoff != math.MinInt64 {
			if consumed, err = w.consumedByAll(q.ID, p); err != nil {
				return err
			}
		}
		res, err = w.evictRun(p, lim, func(sg segMeta) bool {
			end := sg.base + sg.count - 1
			aged := sg.createdAt < pol.cutoff || (sg.createdAt < pol.doneCutoff && end <= consumed)
			return aged && end < floor
		})
		return err
	}})
	return res, err
}

// SizeCut is where a partition's log must start for its queue to fit its
// maxBytes: every segment ending below UpTo goes.
type SizeCut struct {
	PartitionID int64
	UpTo        int64 // exclusive bound on the last offset of an evicted segment
}

// OversizeCuts plans, on a reader, the eviction that brings queue queueID
// back under its maxBytes: the oldest segments by commit time across its
// partitions, until the stored bytes left fit. It returns nothing when the
// queue fits or has no bound. The plan is a ceiling: EvictPrefix re-checks
// leases when it deletes.
func (s *Store) OversizeCuts(ctx context.Context, queueID int64) ([]SizeCut, error) {
	var maxBytes, total int64
	err := s.r.QueryRowContext(ctx, `SELECT q.max_bytes, COALESCE((SELECT SUM(length(s.data)) FROM partitions p
		JOIN segments s ON s.partition_id = p.id WHERE p.queue_id = q.id), 0) FROM queues q WHERE q.id = ?`,
		queueID).Scan(&maxBytes, &total)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("measure queue: %w", err)
	}
	if maxBytes <= 0 || total <= maxBytes {
		return nil, nil
	}
	rows, err := s.r.QueryContext(ctx, `SELECT s.partition_id, s.base_offset + s.frame_count, length(s.data)
		FROM partitions p JOIN segments s ON s.partition_id = p.id WHERE p.queue_id = ? ORDER BY s.created_at, s.id`, queueID)
	if err != nil {
		return nil, fmt.Errorf("list queue segments: %w", err)
	}
	defer rows.Close()
	upTo := map[int64]int64{}
	var order []int64
	for excess := total - maxBytes; excess > 0 && rows.Next(); {
		var part, end, size int64
		if err := rows.Scan(&part, &end, &size); err != nil {
			return nil, fmt.Errorf("scan segment: %w", err)
		}
		if _, seen := upTo[part]; !seen {
			order = append(order, part)
		}
		upTo[part] = max(upTo[part], end)
		excess -= size
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list queue segments: %w", err)
	}
	cuts := make([]SizeCut, len(order))
	for i, part := range order {
		cuts[i] = SizeCut{PartitionID: part, UpTo: upTo[part]}
	}
	return cuts, nil
}

// EvictPrefix deletes, in one writer op, the oldest segments of partition
// that end below upTo, up to lim, keeping live leases but not snapshots:
// it enforces a size bound, which protects the disk.
func (s *Store) EvictPrefix(ctx context.Context, partitionID, upTo int64, now time.Time, lim EvictLimits) (EvictResult, error) {
	lim = lim.withDefaults()
	var res EvictResult
	err := s.submit(ctx, &writeOp{isolated: true, apply: func(w *wtx) error {
		res = EvictResult{}
		p, err := scanPartition(w.QueryRowContext(w.ctx, `SELECT `+partitionColumns+` FROM partitions WHERE id = ?`, partitionID))
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("load partition: %w", err)
		}
		floor, err := w.leaseFloor(p.ID, micros(now))
		if err != nil {
			return err
		}
		floor = min(floor, upTo)
		res, err = w.evictRun(p, lim, func(sg segMeta) bool { return sg.base+sg.count-1 < floor })
		return err
	}})
	return res, err
}

// evictRun deletes the oldest segments of p that mayGo, a prefix of its
// log, until one may not, or lim is spent (then More is set). It reads
// them a chunk at a time to delete their dedup keys and traces, and
// deletes the whole run of segments at the end, in one statement.
func (w *wtx) evictRun(p *combtype.Partition, lim EvictLimits, mayGo func(segMeta) bool) (EvictResult, error) {
	var res EvictResult
	start := time.Now()
	var next int64 // where the next chunk starts: after what was taken

	var last segMeta
	for {
		if res.Segments >= lim.Segments || res.Frames >= lim.Frames || res.Bytes >= lim.Bytes ||
			(res.Segments > 0 && time.Since(start) >= lim.Time) {
			res.More = true
			break
		}
		n := min(evictChunkSegs, lim.Segments-res.Segments)
		segs, err := w.segmentsFrom(p.ID, next, n)
		if err != nil {
			return EvictResult{}, err
		}
		chunk := EvictLimits{Segments: n, Bytes: min(evictChunkBytes, lim.Bytes-res.Bytes),
			Frames: min(evictChunkFrames, lim.Frames-res.Frames)}
		take, more := takePrefix(segs, chunk, mayGo)
		if len(take) > 0 {
			traces, done, err := w.dropKeys(p, take)
			if err != nil {
				return EvictResult{}, err
			}
			res.Traces += traces
			if !done {
				// Their traces are going a bounded batch an op; the
				// segments wait for the op that finds none left.
				res.More = true
				break
			}
			for _, sg := range take {
				res.Segments++
				res.Frames += sg.count
				res.Bytes += sg.size
			}
			last = take[len(take)-1]
			next = last.base + last.count
		}
		if !more {
			break
		}
	}
	if res.Segments == 0 {
		// More only when the op deleted traces ahead of their segments:
		// the next op goes on from them.
		res.More = res.More && res.Traces > 0
		return res, nil
	}
	return res, w.dropSegments(p, last)
}

// takePrefix returns the longest prefix of segs (oldest first) whose every
// segment may go, cut to what one writer op may delete under lim; more
// reports that evictable segments were left for the next op.
func takePrefix(segs []segMeta, lim EvictLimits, mayGo func(segMeta) bool) (take []segMeta, more bool) {
	var bytes, frames int64
	for _, sg := range segs {
		if !mayGo(sg) {
			return take, false
		}
		if len(take) > 0 && (bytes+sg.size > lim.Bytes || frames+sg.count > lim.Frames) {
			return take, true
		}
		take = append(take, sg)
		bytes += sg.size
		frames += sg.count
	}
	return take, len(take) == lim.Segments && len(segs) == lim.Segments
}

// segMeta is a segment row without its data.
type segMeta struct {
	base, count, createdAt, size int64
}

// firstSegments returns the oldest n segments of a partition.
func (w *wtx) firstSegments(partitionID int64, n int) ([]segMeta, error) {
	return w.segmentsFrom(partitionID, 0, n)
}

// segmentsFrom returns the first n segments of a partition based at or
// after offset from.
func (w *wtx) segmentsFrom(partitionID, from int64, n int) ([]segMeta, error) {
	rows, err := w.QueryContext(w.ctx, `SELECT base_offset, frame_count, created_at, length(data) FROM segments
		WHERE partition_id = ? AND base_offset >= ? ORDER BY base_offset LIMIT ?`, partitionID, from, n)
	if err != nil {
		return nil, fmt.Errorf("list oldest segments: %w", err)
	}
	defer rows.Close()
	var out []segMeta
	for rows.Next() {
		var sg segMeta
		if err := rows.Scan(&sg.base, &sg.count, &sg.createdAt, &sg.size); err != nil {
			return nil, fmt.Errorf("scan segment: %w", err)
		}
		out = append(out, sg)
	}
	return out, rows.Err()
}

// leaseFloor is the first offset of the earliest live lease on a partition
// (math.MaxInt64 when none): no segment reaching it may go.
func (w *wtx) leaseFloor(partitionID, now int64) (int64, error) {
	var from sql.NullInt64
	if err := w.QueryRowContext(w.ctx, `SELECT MIN(c.lease_from) FROM cursors c
		WHERE c.partition_id = ? AND `+liveLeaseAt+`?`, partitionID, now).Scan(&from); err != nil {
		return 0, fmt.Errorf("find live leases: %w", err)
	}
	if !from.Valid {
		return math.MaxInt64, nil
	}
	return from.Int64, nil
}

// snapshotPin is the first offset of a partition that a live snapshot
// still needs (math.MaxInt64 when none). Time-based retention honours it,
// so seeking to a snapshot replays what it captured; maxBytes does not.
func (w *wtx) snapshotPin(partitionID, now int64) (int64, error) {
	floor, ok, err := snapshotFloor(w.ctx, w.tx, partitionID, now)
	if err != nil {
		return 0, err
	}
	if !ok {
		return math.MaxInt64, nil
	}
	return floor, nil
}

// consumedByAll is the highest offset of p that every consumer of its
// queue has completed. A group subscribed to the queue that has no cursor
// row on this partition has consumed up to where its subscription implies
// (implied.go); a partition nobody consumes has nothing completed.
func (w *wtx) consumedByAll(queueID int64, p *combtype.Partition) (int64, error) {
	var low sql.NullInt64
	if err := w.QueryRowContext(w.ctx, `WITH `+headsAt(`partitions p`, `p.id = ?1`, `s.queue_id = ?2`)+`
		SELECT `+leastCommittedExpr+` FROM partitions p WHERE p.id = ?1`,
		p.ID, queueID).Scan(&low); err != nil {
		return 0, fmt.Errorf("find consumed floor: %w", err)
	}
	if !low.Valid {
		return p.LogStart - 1, nil
	}
	return low.Int64, nil
}

// evict deletes segs, a prefix of p's log in offset order, with the dedup
// keys, traces and tombstones of their frames, and moves log_start past
// them.
func (w *wtx) evict(p *combtype.Partition, segs []segMeta) (EvictResult, error) {
	var res EvictResult
	if len(segs) == 0 {
		return res, nil
	}
	traces, done, err := w.dropKeys(p, segs)
	res.Traces = traces
	if err != nil {
		return res, err
	}
	if !done {
		// Traces left for a later op, and with them the segments.
		res.More = true
		return res, nil
	}
	if err := w.dropSegments(p, segs[len(segs)-1]); err != nil {
		return res, err
	}
	for _, sg := range segs {
		res.Segments++
		res.Frames += sg.count
		res.Bytes += sg.size
	}
	return res, nil
}

// dropKeys deletes the traces and dedup keys of the frames of segs, a run
// of p's segments in offset order that is about to go, and counts the
// traces. The traces go first, evictChunkTraces at most: done is false
// when some are left, and then no key was deleted and segs must stay for
// a later op.
func (w *wtx) dropKeys(p *combtype.Partition, segs []segMeta) (traces int64, done bool, err error) {
	first, last := segs[0], segs[len(segs)-1]
	newStart := last.base + last.count
	// Most partitions have no traces: one probe spares them the
	// transactionIds' JSON and the per-message lookups.
	var traced bool
	if err := w.QueryRowContext(w.ctx, `SELECT EXISTS (SELECT 1 FROM traces WHERE partition_uuid = ?)`,
		p.UUID).Scan(&traced); err != nil {
		return 0, false, fmt.Errorf("look up traces: %w", err)
	}
	keys, txns, err := w.evictedKeys(p.ID, first.base, last.base, traced)
	if err != nil {
		return 0, false, err
	}
	if keys == "" {
		// A segment that does not decode cannot name its keys: find them by
		// partition and offset. The index leads with the key, so this scans
		// every partition's keys; it is paid only for a damaged segment,
		// which retention and queue deletes meet rarely, never per push.
		if _, err := w.ExecContext(w.ctx, `DELETE FROM txids WHERE partition_id = ? AND offset < ?`, p.ID, newStart); err != nil {
			return 0, false, fmt.Errorf("delete evicted dedup keys: %w", err)
		}
		return 0, true, nil
	}
	if traced {
		var all bool
		traces, all, err = w.evictTraces(p.UUID, txns, evictChunkTraces)
		if err != nil || !all {
			return traces, false, err
		}
	}
	if _, err := w.ExecContext(w.ctx, `DELETE FROM txids WHERE partition_id = ? AND offset < ?
		AND txn_key IN (SELECT value FROM json_each(?))`, p.ID, newStart, keys); err != nil {
		return 0, false, fmt.Errorf("delete evicted dedup keys: %w", err)
	}
	return traces, true, nil
}

// dropSegments deletes p's segments up to and including last, with the
// tombstones of their offsets, in one statement each, and moves log_start
// past them.
func (w *wtx) dropSegments(p *combtype.Partition, last segMeta) error {
	newStart := last.base + last.count
	if last.count-1 > p.LastOffset-last.base || newStart < last.base {
		// A frame_count another program wrote past the partition's end
		// (or past int64's): the log ends where the partition does, as
		// the CHECK on log_start requires, which refused the update and
		// answered the queue delete 500.
		newStart = p.LastOffset + 1
	}
	if _, err := w.ExecContext(w.ctx, `DELETE FROM tombstones WHERE partition_id = ? AND offset < ?`, p.ID, newStart); err != nil {
		return fmt.Errorf("delete evicted tombstones: %w", err)
	}
	if _, err := w.ExecContext(w.ctx, `DELETE FROM segments WHERE partition_id = ? AND base_offset <= ?`, p.ID, last.base); err != nil {
		return fmt.Errorf("delete segments: %w", err)
	}
	w.rowsChanged()
	if _, err := w.ExecContext(w.ctx, `UPDATE partitions SET log_start = ? WHERE id = ? AND log_start < ?`,
		newStart, p.ID, newStart); err != nil {
		return fmt.Errorf("advance log_start: %w", err)
	}
	p.LogStart = newStart
	return nil
}

// evictChunkTraces bounds the traces a chunk of an eviction deletes: a
// message may have any number of them (Queen keeps every one), and a
// chunk of messages with 300,000 held the writer 1.1 s in one op whose
// time bound is 10 ms.
const evictChunkTraces = 4096

// evictTraces deletes up to limit traces of the evicted messages txns (a
// JSON array) of partition partitionUUID, with the names they were filed
// under; all is false when some may be left.
func (w *wtx) evictTraces(partitionUUID, txns string, limit int) (n int64, all bool, err error) {
	const some = `SELECT id FROM traces WHERE partition_uuid = ?1 AND txn_id IN (SELECT value FROM json_each(?2))
		ORDER BY partition_uuid, txn_id, id LIMIT ?3`
	if _, err := w.ExecContext(w.ctx, `DELETE FROM trace_names WHERE trace_id IN (`+some+`)`,
		partitionUUID, txns, limit); err != nil {
		return 0, false, fmt.Errorf("delete evicted trace names: %w", err)
	}
	res, err := w.ExecContext(w.ctx, `DELETE FROM traces WHERE id IN (`+some+`)`, partitionUUID, txns, limit)
	if err != nil {
		return 0, false, fmt.Errorf("delete evicted traces: %w", err)
	}
	if n, err = res.RowsAffected(); err != nil {
		return 0, false, fmt.Errorf("delete evicted traces: %w", err)
	}
	return n, n < int64(limit), nil
}

// evictedKeys returns the dedup keys of the frames in the segments of
// partition based in [from, to], as a JSON array, and with txns their
// transactionIds as another; keys is "" when one of them does not decode.
// It reads only the transactionIds (segment.TxnIDs), not the payloads.
func (w *wtx) evictedKeys(partitionID, from, to int64, txns bool) (keys, ids string, err error) {
	rows, err := w.QueryContext(w.ctx, `SELECT frame_count, codec, raw_size, checksum, data FROM segments
		WHERE partition_id = ? AND base_offset >= ? AND base_offset <= ? ORDER BY base_offset`, partitionID, from, to)
	if err != nil {
		return "", "", fmt.Errorf("read evicted segments: %w", err)
	}
	defer rows.Close()
	kbuf, tbuf := []byte{'['}, []byte{'['}
	// A segment's bytes are held no longer than its row: RawBytes is the
	// driver's copy itself, and scratch is decompressed into again and
	// again (segment.TxnIDsInto).
	var scratch []byte
	for rows.Next() {
		var count, sum int64
		var codec, rawSize int
		var data sql.RawBytes
		if err := rows.Scan(&count, &codec, &rawSize, &sum, &data); err != nil {
			return "", "", fmt.Errorf("scan evicted segment: %w", err)
		}
		scratch, err = segment.TxnIDsInto(segment.Encoded{Codec: codec, RawSize: rawSize, Checksum: uint32(sum), Data: data}, int(count), scratch,
			func(_ int, txn []byte) {
				if len(kbuf) > 1 {
					kbuf = append(kbuf, ',')
				}
				kbuf = strconv.AppendInt(kbuf, txnKey(string(txn)), 10)
				if txns {
					if len(tbuf) > 1 {
						tbuf = append(tbuf, ',')
					}
					tbuf = appendJSONString(tbuf, string(txn))
				}
			})
		if err != nil {
			return "", "", nil
		}
	}
	if err := rows.Err(); err != nil {
		return "", "", fmt.Errorf("read evicted segments: %w", err)
	}
	return string(append(kbuf, ']')), string(append(tbuf, ']')), nil
}
