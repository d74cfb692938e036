package store

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/store/segment"
)

// Claiming: what a pop takes from the partitions due for its group, under
// a lease or (autoAck) as consumed, and the reading of the claimed frames
// inside the same write.

// claimSpan is one partition's part of a claim: offsets from..to of it.
type claimSpan struct {
	part     combtype.Partition
	from, to int64
	retry    int64
	dead     []int64 // tombstoned offsets inside [from, to], ascending
	evicted  int64   // frames retention removed below from that the group had not consumed
}

// claim leases (or, with autoAck, consumes) the due spans of q for the
// group and reads their messages. It returns nil when nothing was due.
// When every span it took met a damaged segment, the cursors moved past
// them and it claims again, a few times at most.
func (w *wtx) claim(q *combtype.Queue, req *popReq) (res *combtype.PopResult, wake time.Time, err error) {
	if w.s.seeks.moving(q.ID, req.Group) {
		// A seek or a delete of the group is moving its cursors
		// (seekqueue.go, groups.go): nothing is due until it is done, and
		// its end wakes the queue.
		return nil, time.Time{}, nil
	}
	for range 4 {
		res, wake, err = w.claimOnce(q, req)
		if !errors.Is(err, errAgain) {
			return res, wake, err
		}
	}
	return nil, w.now, nil
}

// errAgain is a claim that only moved cursors past damaged segments.
var errAgain = errors.New("claim again")

// suspectsFromMark is, for a claim the writer makes on its own, the
// partitions of q the group's idle mark says can be due (idle.go): those
// written since the mark's walk and those changed for the group since,
// in earlier commits and in this one, with the mark's lease wake. ok is
// false when the mark does not hold (or this transaction changed the
// queue otherwise) or they are too many; the claim then reads the queue in
// turn.
func (w *wtx) suspectsFromMark(q *combtype.Queue, group string) (ids []int64, wake time.Time, ok bool, err error) {
	key := watchKey(q.Tenant, q.Name)
	if _, ok := w.changed[watchChange{key: key}]; ok {
		return nil, time.Time{}, false, nil
	}
	if _, ok := w.changed[watchChange{key: key, group: group}]; ok {
		return nil, time.Time{}, false, nil
	}
	since, ok := w.s.idle.since(key, group)
	if !ok {
		return nil, time.Time{}, false, nil
	}
	mk, changed, ok, _ := w.s.idle.appendsOnly(idleKey{q.ID, group}, key, since, micros(w.now), false)
	if !ok {
		return nil, time.Time{}, false, nil
	}
	changed = append(changed, mk.due...)
	ids, ok, err = suspectsSince(w.ctx, w, q.ID, mk.since.seg,
		append(changed, w.changedParts[watchChange{key: key, group: group}]...))
	if err != nil || !ok {
		return nil, time.Time{}, false, err
	}
	return ids, mk.wake, true, nil
}

func (w *wtx) claimOnce(q *combtype.Queue, req *popReq) (res *combtype.PopResult, wake time.Time, err error) {
	if err := w.subscribe(q, req.Group, req.Start); err != nil {
		return nil, time.Time{}, err
	}
	now := micros(w.now)
	// Enough due partitions to fill the claim, with room for some that a
	// run of deleted messages leaves empty; all of them when a delay or a
	// window may hold some back.
	limit := req.Partitions + 8
	if q.Options.DelayedProcessing > 0 || q.Options.WindowBuffer > 0 {
		limit = -1
	}
	after := w.s.turn.next(q.ID, req.Group)
	suspects, byMark := req.suspects, false
	if suspects == nil && req.Partition == "" && limit >= 0 {
		// A claim the writer makes for a parked pop (handed.go) has not
		// looked on a reader: it asks the group's idle mark itself.
		ids, markWake, ok, err := w.suspectsFromMark(q, req.Group)
		if err != nil {
			return nil, time.Time{}, err
		}
		if ok && len(ids) == 0 {
			return nil, markWake, nil
		}
		if ok {
			suspects, wake, byMark = ids, markWake, true
		}
	}
	var due []candidate
	if suspects != nil && req.Partition == "" {
		if err := scanRows(w.ctx, w, &due, req.Group, scanColumns+scanSuspects+scanDue, limit,
			req.Group, q.ID, now, jsonInts(suspects)); err != nil {
			return nil, time.Time{}, err
		}
	}
	if len(due) == 0 && !byMark {
		if req.handed && suspects == nil && req.Partition == "" {
			// A claim made for a parked pop, with no mark to read: on a
			// large queue the pop looks again itself, on a reader, rather
			// than this walk holding every other write (seconds at a
			// million partitions); its walk leaves the mark the next
			// claims read.
			large, err := largerThanAChunk(w.ctx, w, q.ID, w.s.chunkLimit())
			if err != nil {
				return nil, time.Time{}, err
			}
			if large {
				return nil, time.Time{}, errLookAgain
			}
		}
		// No suspects, or none due any more (another pop of the group
		// took them): the queue in turn.
		if due, err = scanCandidates(w.ctx, w, q.ID, req.Group, req.Partition, now, limit, after,
			&w.s.stats.QueueWalks, &w.s.stats.WriterWalks); err != nil {
			return nil, time.Time{}, err
		}
	}
	var spans []claimSpan
	var evicted int64
	budget := int64(req.Batch)
	for i := range due {
		if len(spans) == req.Partitions || budget == 0 {
			break
		}
		c := &due[i]
		from := c.next()
		last := c.part.LastOffset // the last offset this claim may take
		if q.Options.WindowBuffer > 0 {
			if ready := addMicros(c.part.LastSegmentAt, secondsMicros(q.Options.WindowBuffer)); ready > now {
				wake = earliest(wake, fromMicros(ready))
				continue
			}
		}
		if q.Options.DelayedProcessing > 0 {
			delay := secondsMicros(q.Options.DelayedProcessing)
			visible, nextAt, err := w.visibleUpTo(&c.part, from, addMicros(now, -delay))
			if err != nil {
				return nil, time.Time{}, err
			}
			if nextAt > 0 {
				wake = earliest(wake, fromMicros(addMicros(nextAt, delay)))
			}
			last = min(last, visible)
			if last < from {
				continue
			}
		}
		if !c.hasCursor {
			// The group's first claim on the partition writes its cursor,
			// where the subscription implied it (implied.go).
			if err := w.materializeCursor(c); err != nil {
				return nil, time.Time{}, err
			}
		}
		// Deleted messages are skipped here, at claim time, so that a lease
		// never starts or ends on one (see trimTombstones).
		var sp *claimSpan
		for from <= last && sp == nil {
			var skipTo int64
			if sp, skipTo, err = w.trimTombstones(c, from, last, budget); err != nil {
				return nil, time.Time{}, err
			}
			if sp == nil {
				if _, err := w.ExecContext(w.ctx, `UPDATE cursors SET committed = MAX(committed, ?)
					WHERE partition_id = ? AND group_name = ?`, skipTo, c.part.ID, req.Group); err != nil {
					return nil, time.Time{}, fmt.Errorf("skip deleted messages: %w", err)
				}
				from = skipTo + 1
			}
		}
		if sp == nil {
			continue
		}
		if gap := c.part.LogStart - (c.committed + 1); gap > 0 {
			// Retention removed frames this group had not consumed yet: say
			// so rather than count them as delivered.
			sp.evicted = gap
			evicted += gap
		}
		spans = append(spans, *sp)
		budget -= sp.to - sp.from + 1 - int64(len(sp.dead))
	}
	if len(spans) == 0 {
		var lw time.Time
		if byMark {
			// The mark's wake covers the leases outside its suspects.
			lw, err = leaseWakeAmong(w.ctx, w, q.ID, req.Group, now, suspects)
		} else {
			lw, err = leaseWake(w.ctx, w, q.ID, req.Group, req.Partition, now)
		}
		if err != nil {
			return nil, time.Time{}, err
		}
		if !byMark && suspects == nil && req.Partition == "" && limit >= 0 && len(due) == 0 {
			// A walk of the queue that found nothing due: kept as a pop's
			// walk is, once this transaction has committed (idle.go).
			w.idleWalks = append(w.idleWalks, idleWalk{k: idleKey{q.ID, req.Group}, key: watchKey(q.Tenant, q.Name),
				seg: w.s.segSeq, wake: earliest(wake, lw)})
		}
		return nil, earliest(wake, lw), nil
	}
	leaseID := ""
	if !req.AutoAck {
		leaseID = newLeaseID()
	}
	msgs, spans, err := w.readSpans(q, req, spans, leaseID)
	if err != nil {
		return nil, time.Time{}, err
	}
	if len(spans) == 0 {
		// Every span met a segment put aside; the cursors moved past them.
		return nil, time.Time{}, errAgain
	}
	expires := addMicros(now, q.LeaseDuration().Microseconds())
	res = &combtype.PopResult{Queue: q.Name, Group: req.Group, LeaseID: leaseID, PartitionsClaimed: len(spans),
		Partition: spans[0].part.Name, PartitionID: spans[0].part.UUID, Messages: msgs}
	for _, sp := range spans {
		w.s.turn.served(q.ID, req.Group, sp.part.Name)
		res.FramesEvicted += sp.evicted
		if sp.evicted > 0 {
			w.s.stats.FramesEvicted.Add(sp.evicted)
			w.s.log.Warn("retention removed frames a consumer group had not consumed",
				"queue", q.Name, "partition", sp.part.Name, "group", req.Group, "frames", sp.evicted)
		}
		var err error
		if req.AutoAck {
			_, err = w.ExecContext(w.ctx, `UPDATE cursors SET committed = ?, lease_id = NULL, lease_from = NULL,
				lease_to = NULL, lease_expires_at = NULL, retry_count = 0, redelivery_count = 0,
				total_consumed = total_consumed + ?, batches_consumed = batches_consumed + 1, last_consumed_at = ?
				WHERE partition_id = ? AND group_name = ?`, sp.to, sp.to-sp.from+1, now, sp.part.ID, req.Group)
		} else {
			// A lease still recorded here has expired: this is a redelivery.
			// Deleted messages before the span count as consumed.
			_, err = w.ExecContext(w.ctx, `UPDATE cursors SET lease_id = ?, lease_from = ?, lease_to = ?, lease_expires_at = ?,
				redelivery_count = redelivery_count + (lease_id IS NOT NULL), committed = MAX(committed, ?)
				WHERE partition_id = ? AND group_name = ?`, leaseID, sp.from, sp.to, expires, sp.from-1, sp.part.ID, req.Group)
		}
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("claim partition %q: %w", sp.part.Name, err)
		}
	}
	if leaseID != "" {
		w.s.leased.put(leaseID, msgs)
	}
	return res, time.Time{}, nil
}

// readSpans reads the messages of spans inside the claim, at most
// req.MaxBytes of payload (always at least one message), and returns the
// spans cut to what was read. A segment that fails its checksum or does
// not decode is put aside (see quarantine) and its span ends before it; a
// span whose payloads cannot be decrypted is left unclaimed, and its error
// is returned only when no other span delivered anything.
func (w *wtx) readSpans(q *combtype.Queue, req *popReq, spans []claimSpan, leaseID string) ([]combtype.Message, []claimSpan, error) {
	n := int64(0)
	for _, sp := range spans {
		n += sp.to - sp.from + 1
	}
	// Sized once: growing it by appends copied every message several times.
	msgs := make([]combtype.Message, 0, min(n, int64(combtype.MaxPopBatch)))
	var size int64
	maxBytes := req.MaxBytes
	if maxBytes <= 0 || maxBytes > combtype.MaxPopBytes {
		maxBytes = combtype.MaxPopBytes
	}
	var sealedErr error
	kept := spans[:0]
	full := false
	for _, sp := range spans {
		if full {
			break
		}
		start := len(msgs)
		err := w.claimedFrames(sp.part.ID, sp.from, sp.to, func(off int64, createdAt int64, f *segment.Frame) error {
			if sp.deleted(off) {
				return nil
			}
			if len(msgs) > 0 && size+int64(len(f.Payload)) > maxBytes {
				full = true
				return errFull
			}
			size += int64(len(f.Payload))
			msgs = append(msgs, combtype.Message{
				ID: w.s.messageID(sp.part.UUID, off), TxnID: f.TxnID, PartitionID: sp.part.UUID, Partition: sp.part.Name,
				Queue: q.Name, LeaseID: leaseID, Group: req.Group, Payload: f.Payload, CreatedAt: fromMicros(createdAt),
				TraceID: f.TraceID, ProducerSub: f.ProducerSub, RetryCount: sp.retry, Offset: off,
			})
			return nil
		})
		var bad *segmentError
		switch {
		case err == nil, errors.Is(err, errFull):
		case errors.As(err, &bad) && errors.Is(err, combtype.ErrCorrupt):
			if err := w.quarantine(q, &sp, bad, req.Group); err != nil {
				return nil, nil, err
			}
			sp.to = min(sp.to, bad.base-1)
		case errors.Is(err, combtype.ErrNoEncryptionKey):
			// Not damage: a key is missing or wrong. The span is left
			// unclaimed so the partition waits for the right key without
			// holding back the others.
			w.s.log.Error("cannot decrypt a claimed segment; partition skipped", "queue", q.Name,
				"partition", sp.part.Name, "group", req.Group, "err", err)
			sealedErr = cmp.Or(sealedErr, err)
			msgs = msgs[:start]
			continue
		default:
			return nil, nil, err
		}
		if len(msgs) == start {
			continue // nothing of this span was read
		}
		sp.to = min(sp.to, msgs[len(msgs)-1].Offset)
		for len(sp.dead) > 0 && sp.dead[len(sp.dead)-1] > sp.to {
			sp.dead = sp.dead[:len(sp.dead)-1]
		}
		kept = append(kept, sp)
	}
	if len(kept) == 0 && sealedErr != nil {
		return nil, nil, sealedErr
	}
	return msgs, kept, nil
}

// frameRange is the offsets from..to of a partition that a claim reads.
type frameRange struct{ partitionID, from, to int64 }

// claimedFrame is one frame a claim read, as scanFrames gave it.
type claimedFrame struct {
	off, createdAt int64
	f              segment.Frame
}

// Bounds on what one commit keeps of the frames its claims read.
const (
	maxClaimedRanges = 64
	maxClaimedBytes  = 4 << 20
)

// claimedFrames is scanFrames for claims, remembering in this commit the
// frames of small ranges read in full: the pops a push wakes, each in its
// own group, claim the same new offsets one after another in one commit,
// and read, check and decode the same segment once instead of once each.
// Stored segments do not change inside a commit except by retention or a
// queue delete, which forget what is kept (rowsChanged); the frames kept
// are shared by the messages of the claims, which only read them.
func (w *wtx) claimedFrames(partitionID, from, to int64, fn func(off, createdAt int64, f *segment.Frame) error) error {
	k := frameRange{partitionID, from, to}
	if kept, ok := w.claimed[k]; ok {
		for i := range kept {
			f := kept[i].f // a copy: fn may keep its pointer
			if err := fn(kept[i].off, kept[i].createdAt, &f); err != nil {
				return err
			}
		}
		return nil
	}
	keep := len(w.claimed) < maxClaimedRanges
	var frames []claimedFrame
	if keep {
		frames = make([]claimedFrame, 0, min(to-from+1, combtype.MaxPopBatch))
	}
	var size int
	err := w.claimScan(partitionID, from, to, func(off, createdAt int64, f *segment.Frame) error {
		if keep {
			if size += len(f.Payload); size > maxClaimedBytes {
				keep, frames = false, nil
			} else {
				frames = append(frames, claimedFrame{off: off, createdAt: createdAt, f: *f})
			}
		}
		if err := fn(off, createdAt, f); err != nil {
			keep = false // the range was not read to its end
			return err
		}
		return nil
	})
	if err == nil && keep {
		w.claimed[k] = frames
	}
	return err
}

// errFull stops a scan once a pop has its bytes.
var errFull = errors.New("pop full")

// quarantine puts aside the damaged segment bad of sp's partition: a copy
// of it goes to quarantined_segments (once, whoever meets it first), the
// group's cursor moves past it when the span starts inside it, and the
// log and the stats say so. The segment row stays until retention takes it.
func (w *wtx) quarantine(q *combtype.Queue, sp *claimSpan, bad *segmentError, group string) error {
	res, err := w.ExecContext(w.ctx, `INSERT INTO quarantined_segments (tenant, queue_name, partition_name, partition_uuid,
		base_offset, frame_count, reason, segment_created_at, codec, raw_size, checksum, data, quarantined_at)
		SELECT ?, ?, ?, ?, base_offset, frame_count, ?, created_at, codec, raw_size, checksum, data, ?
		FROM segments WHERE partition_id = ? AND base_offset = ?
		ON CONFLICT DO NOTHING`, q.Tenant, q.Name, sp.part.Name, sp.part.UUID, bad.err.Error(), micros(w.now),
		sp.part.ID, bad.base)
	if err != nil {
		return fmt.Errorf("quarantine segment: %w", err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		w.s.stats.Quarantined.Add(1)
	}
	w.quarantined++
	w.s.log.Error("segment put aside: it fails its checksum or does not decode", "queue", q.Name,
		"partition", sp.part.Name, "baseOffset", bad.base, "frames", bad.count, "group", group, "err", bad.err)
	if bad.base <= sp.from {
		if _, err := w.ExecContext(w.ctx, `UPDATE cursors SET committed = MAX(committed, ?)
			WHERE partition_id = ? AND group_name = ?`, bad.base+bad.count-1, sp.part.ID, group); err != nil {
			return fmt.Errorf("move past quarantined segment: %w", err)
		}
		w.touch(q.Tenant, q.Name)
	}
	return nil
}

// visibleUpTo returns the last offset of p committed at or before cutoff
// (from-1 if none), and the commit time of the segment holding from when
// that segment is not yet visible.
func (w *wtx) visibleUpTo(p *combtype.Partition, from, cutoff int64) (int64, int64, error) {
	// Everything before the first segment committed after cutoff is
	// visible.
	visible := p.LastOffset
	next, err := landing(w.ctx, w, p, cutoff+1)
	if err != nil {
		return 0, 0, fmt.Errorf("find visible offset: %w", err)
	}
	if next != nil {
		visible = next.BaseOffset - 1
	}
	if visible >= from {
		return visible, 0, nil
	}
	visible = from - 1
	var at int64
	if err := w.QueryRowContext(w.ctx, segmentHoldingQuery, p.ID, from).Scan(&at); err != nil {
		return 0, 0, fmt.Errorf("find next segment: %w", err)
	}
	return visible, at, nil
}

// segmentHoldingQuery reads the commit time of the first segment of
// partition ?1 that ends at or after offset ?2: the one holding it, else
// the next (past a hole a damaged segment left); 0 when there is none.
// Segments do not overlap, so that is the one with the largest
// base_offset up to ?2 if it reaches ?2, else the first past it: two
// seeks, where a test of each segment's end read every segment before ?2,
// the partition's whole retained history, on every pop of a delayed queue
// with nothing yet visible.
const segmentHoldingQuery = `SELECT COALESCE(
	(SELECT created_at FROM (SELECT created_at, base_offset, frame_count FROM segments
		WHERE partition_id = ?1 AND base_offset <= ?2 ORDER BY base_offset DESC LIMIT 1)
		WHERE base_offset + frame_count > ?2),
	(SELECT created_at FROM segments WHERE partition_id = ?1 AND base_offset > ?2 ORDER BY base_offset LIMIT 1),
	0)`

// maxTombstoneScan bounds how many tombstones one claim reads for a
// partition; a longer run of deleted messages is skipped over several pops.
const maxTombstoneScan = 4096

// tombstoneScanSQL holds the limit as a literal: a bound LIMIT is read
// while planning, so rebinding it would compile the statement on every claim.
var tombstoneScanSQL = `SELECT offset FROM tombstones WHERE partition_id = +? AND offset BETWEEN ? AND ?
	ORDER BY offset LIMIT ` + strconv.Itoa(maxTombstoneScan)

// trimTombstones shapes the claim of partition c from offset from (up to
// last, at most budget live messages) around deleted messages.
//
// The lease span is kept free of tombstones at both ends: deleted offsets
// before the first live message are skipped by moving committed past them
// (they count as consumed), and the span ends on the last live message it
// holds. A consumer that acks every message it received therefore acks
// lease_to, which releases the lease. Deleted offsets inside the span are
// returned in dead: readSpans leaves them out, and acking the live message
// after them moves the cursor over them as over any acked prefix.
//
// It returns nil when every offset it looked at up to skipTo is deleted;
// the caller moves committed to skipTo and looks further.
func (w *wtx) trimTombstones(c *candidate, from, last, budget int64) (sp *claimSpan, skipTo int64, err error) {
	dead, err := w.deadIn(c.part.ID, from, last)
	if err != nil {
		return nil, 0, err
	}
	if len(dead) == maxTombstoneScan {
		last = dead[len(dead)-1] // what lies beyond was not looked at
	}
	i, off := 0, from
	for i < len(dead) && dead[i] == off {
		i, off = i+1, off+1
	}
	if off > last {
		return nil, last, nil
	}
	sp = &claimSpan{part: c.part, from: off, to: off - 1, retry: c.retry}
	for live := int64(0); off <= last && live < budget; off++ {
		if i < len(dead) && dead[i] == off {
			sp.dead = append(sp.dead, off)
			i++
			continue
		}
		live++
		sp.to = off
	}
	for len(sp.dead) > 0 && sp.dead[len(sp.dead)-1] > sp.to {
		sp.dead = sp.dead[:len(sp.dead)-1]
	}
	return sp, sp.from - 1, nil
}

// deadIn returns the deleted offsets of partitionID in [from, last], at
// most maxTombstoneScan of them, ascending. The pops one push wakes, each
// of its own group, look up the same range one after another in one
// commit: it is read once per commit, and read again after a message
// delete (or what marks the rows changed) in the same commit. Callers
// must not change the slice returned.
func (w *wtx) deadIn(partitionID, from, last int64) ([]int64, error) {
	k := frameRange{partitionID, from, last}
	if dead, ok := w.claimedDead[k]; ok {
		return dead, nil
	}
	var dead []int64
	rows, err := w.QueryContext(w.ctx, tombstoneScanSQL, partitionID, from, last)
	if err != nil {
		return nil, fmt.Errorf("read tombstones: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var off int64
		if err := rows.Scan(&off); err != nil {
			return nil, fmt.Errorf("scan tombstone: %w", err)
		}
		dead = append(dead, off)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read tombstones: %w", err)
	}
	if len(w.claimedDead) < maxClaimedRanges {
		w.claimedDead[k] = dead
	}
	return dead, nil
}

// deleted reports whether off is a tombstoned offset inside the span.
func (sp *claimSpan) deleted(off int64) bool { return containsOffset(sp.dead, off) }
