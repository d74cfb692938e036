package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Bounds on one pop, so that a single request cannot pull a whole log into
// memory; a client asking for more gets this much and pops again.
const (
	MaxPopBatch      = 10000
	MaxPopPartitions = 1000
	// MaxPopBytes bounds the payload bytes of one pop; a pop always
	// delivers at least one message, however large.
	MaxPopBytes = 4 << 20
)

// QueueModeGroup is the cursor every pop without a consumer group shares.
const QueueModeGroup = "__QUEUE_MODE__"

// Subscription modes as stored.
const (
	ModeAll       = "all"
	ModeNew       = "new"
	ModeTimestamp = "timestamp"
)

// SubscriptionStart is where a group starts on first contact with a queue.
type SubscriptionStart struct {
	Mode string     // ModeAll, ModeNew or ModeTimestamp
	From *time.Time // ModeTimestamp only
}

// PopRequest asks for up to Batch messages of one queue, or of the queues
// matching Namespace/Task when Queue is "".
type PopRequest struct {
	Tenant     string
	Queue      string
	Partition  string // "" = any partition
	Namespace  string
	Task       string
	Group      string // "" = QueueModeGroup
	Batch      int    // <= 0 means 1
	Partitions int    // max partitions claimed under one lease; <= 0 means 1
	AutoAck    bool
	Start      SubscriptionStart // applied on the group's first contact only
}

// Message is one delivered message.
type Message struct {
	ID          string
	TxnID       string
	PartitionID string
	Partition   string
	Queue       string
	LeaseID     string // "" with autoAck
	Group       string
	Payload     []byte
	CreatedAt   time.Time
	TraceID     string
	ProducerSub string
	RetryCount  int64
	Offset      int64
}

// PopResult is a delivered batch; Messages is empty when nothing was due.
type PopResult struct {
	Queue             string
	Partition         string
	PartitionID       string
	LeaseID           string
	Group             string
	PartitionsClaimed int
	Messages          []Message
	// FramesEvicted counts frames retention removed before this group
	// consumed them, skipped by this claim.
	FramesEvicted int64
	// WakeAt, when not zero and nothing was delivered, is the earliest time
	// something held back (a live lease, a delay, a window) becomes due.
	WakeAt time.Time
}

// candidate is a partition a pop may claim, with the group's cursor on it.
type candidate struct {
	part      Partition
	hasCursor bool // false: the group never met the partition, cursor is zero
	cursor
}

// next is the first offset the group still wants (see nextOffset).
func (c *candidate) next() int64 { return nextOffset(c.committed, c.part.LogStart) }

// scanCandidates returns at most limit (all for limit < 0) of the
// partitions of queue that are due for group: those the group has no
// cursor on yet (a first contact to seed), and those with something pending
// past the cursor and no live lease. It walks partitions in name order
// starting after the name given, wrapping around, through the (queue_id,
// name) index, so with many partitions it stops as soon as it has found
// limit due ones instead of reading them all; callers rotate the starting
// name so every partition gets its turn.
func scanCandidates(ctx context.Context, db querier, queueID int64, group, partition string, now int64, limit int, after string) ([]candidate, error) {
	const cols = `SELECT p.id, p.uuid, p.queue_id, p.name, p.last_offset, p.log_start, p.last_segment_at, p.created_at,
		c.committed IS NOT NULL, COALESCE(c.committed, 0), c.lease_id, c.lease_expires_at, COALESCE(c.retry_count, 0)
		FROM partitions p LEFT JOIN cursors c ON c.partition_id = p.id AND c.group_name = ?1
		WHERE p.queue_id = ?2 AND (c.committed IS NULL OR (` + pendingExpr + `
			AND NOT (` + liveLeaseAt + `?3)))`
	var out []candidate
	scan := func(q string, args ...any) error {
		rows, err := db.QueryContext(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("scan partitions: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var c candidate
			var created int64
			p := &c.part
			if err := rows.Scan(&p.ID, &p.UUID, &p.QueueID, &p.Name, &p.LastOffset, &p.LogStart, &p.LastSegmentAt, &created,
				&c.hasCursor, &c.committed, &c.leaseID, &c.leaseExpires, &c.retry); err != nil {
				return fmt.Errorf("scan partition: %w", err)
			}
			p.CreatedAt = fromMicros(created)
			c.partitionID, c.group = p.ID, group
			out = append(out, c)
		}
		return rows.Err()
	}
	if partition != "" {
		return out, scan(cols+` AND p.name = ?4`, group, queueID, now, partition)
	}
	if err := scan(cols+` AND p.name > ?4 ORDER BY p.name LIMIT ?5`, group, queueID, now, after, limit); err != nil {
		return nil, err
	}
	if limit >= 0 && len(out) >= limit {
		return out, nil
	}
	rest := -1
	if limit >= 0 {
		rest = limit - len(out)
	}
	return out, scan(cols+` AND p.name <= ?4 ORDER BY p.name LIMIT ?5`, group, queueID, now, after, rest)
}

// leaseWake is when the earliest live lease of group over pending data in
// queue expires (zero if none): when a pop that found nothing due should
// look again.
func leaseWake(ctx context.Context, db querier, queueID int64, group, partition string, now int64) (time.Time, error) {
	q := `SELECT MIN(c.lease_expires_at) FROM partitions p
		JOIN cursors c ON c.partition_id = p.id AND c.group_name = ?1
		WHERE p.queue_id = ?2 AND ` + liveLeaseAt + `?3
			AND ` + pendingExpr
	args := []any{group, queueID, now}
	if partition != "" {
		q += ` AND p.name = ?4`
		args = append(args, partition)
	}
	var at sql.NullInt64
	if err := db.QueryRowContext(ctx, q, args...).Scan(&at); err != nil {
		return time.Time{}, fmt.Errorf("find lease expiry: %w", err)
	}
	if !at.Valid {
		return time.Time{}, nil
	}
	return fromMicros(at.Int64), nil
}

// popQueues resolves the queues a pop may serve, highest priority first.
func (s *Store) popQueues(ctx context.Context, req *PopRequest) ([]*Queue, error) {
	if req.Queue != "" {
		q, err := getQueue(ctx, s.r, req.Tenant, req.Queue)
		if errors.Is(err, ErrQueueNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return []*Queue{q}, nil
	}
	return listQueues(ctx, s.r, `SELECT `+queueColumns+` FROM queues
		WHERE tenant = ? AND (? = '' OR namespace = ?) AND (? = '' OR task = ?)
		ORDER BY priority DESC, id`, req.Tenant, req.Namespace, req.Namespace, req.Task, req.Task)
}

// Pop claims and reads up to req.Batch messages without waiting. Looking is
// done on a reader; only a pop that has something to claim, or that is the
// group's first contact with the queue, goes through the writer.
func (s *Store) Pop(ctx context.Context, req PopRequest) (*PopResult, error) {
	if req.Group == "" {
		req.Group = QueueModeGroup
	}
	req.Batch = min(max(req.Batch, 1), MaxPopBatch)
	req.Partitions = min(max(req.Partitions, 1), MaxPopPartitions)
	if req.Partition != "" {
		req.Partitions = 1
	}
	res := &PopResult{Group: req.Group}
	queues, err := s.popQueues(ctx, &req)
	if err != nil {
		return nil, err
	}
	now := micros(s.clock.Now())
	for _, q := range queues {
		var subscribed bool
		err := s.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM subscriptions WHERE queue_id = ? AND group_name = ?)`,
			q.ID, req.Group).Scan(&subscribed)
		if err != nil {
			return nil, fmt.Errorf("look up subscription: %w", err)
		}
		if subscribed {
			due, err := scanCandidates(ctx, s.r, q.ID, req.Group, req.Partition, now, 1, s.turn.next(q.ID, req.Group))
			if err != nil {
				return nil, err
			}
			if len(due) == 0 {
				wake, err := leaseWake(ctx, s.r, q.ID, req.Group, req.Partition, now)
				if err != nil {
					return nil, err
				}
				res.WakeAt = earliest(res.WakeAt, wake)
				continue
			}
		}
		var got *PopResult
		var wake time.Time
		// The frames are read inside the claim, on the writer, before its
		// commit: an autoAck cursor only moves with the messages in hand,
		// retention cannot remove a claimed frame before it is read, and
		// the client leaving cannot fail the read (the writer's context is
		// not the request's). Isolated: a claim that fails (a payload no
		// key opens) rolls back alone instead of failing its neighbours.
		err = s.submit(ctx, &writeOp{isolated: true, apply: func(w *wtx) error {
			var err error
			got, wake, err = w.claim(q, &req)
			return err
		}})
		if err != nil {
			return nil, err
		}
		res.WakeAt = earliest(res.WakeAt, wake)
		if got == nil {
			continue
		}
		return got, nil
	}
	return res, nil
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

type claimSpan struct {
	part     Partition
	from, to int64
	retry    int64
	dead     []int64 // tombstoned offsets inside [from, to], ascending
	evicted  int64   // frames retention removed below from that the group had not consumed
}

// seedExpr is the committed value of a new cursor on partition p: just below
// the oldest retained offset, or, from a time, just below the first segment
// committed at or after it (the partition's last offset if none is).
const seedExpr = `CASE WHEN ?1 IS NULL THEN p.log_start - 1 ELSE MAX(p.log_start - 1, COALESCE(
	(SELECT s.base_offset - 1 FROM segments s WHERE s.partition_id = p.id AND s.created_at >= ?1 ORDER BY s.created_at, s.id LIMIT 1),
	p.last_offset)) END`

// subscribe writes the group's durable subscription record for q if it has
// none, seeding a cursor on every existing partition in one statement.
func (w *wtx) subscribe(q *Queue, group string, start SubscriptionStart) error {
	var exists bool
	if err := w.QueryRowContext(w.ctx, `SELECT EXISTS (SELECT 1 FROM subscriptions WHERE queue_id = ? AND group_name = ?)`,
		q.ID, group).Scan(&exists); err != nil {
		return fmt.Errorf("look up subscription: %w", err)
	}
	if exists {
		return nil
	}
	now := micros(w.now)
	mode := start.Mode
	if group == QueueModeGroup {
		mode = ModeAll // queue mode never skips a backlog
	}
	var from sql.NullInt64
	newSeed := "p.last_offset"
	switch mode {
	case ModeNew:
		// Partitions met later are seeded from the registration time, so
		// their messages, all pushed after it, are delivered.
		from = sql.NullInt64{Int64: now, Valid: true}
	case ModeTimestamp:
		if start.From == nil {
			return fmt.Errorf("%w: timestamp subscription without a time", ErrInvalid)
		}
		from = sql.NullInt64{Int64: micros(*start.From), Valid: true}
		newSeed = ""
	default:
		mode = ModeAll
		newSeed = ""
	}
	// Partitions created after the registration hold only messages pushed
	// after it: they are taken from their start. Which partitions those
	// are is told by id, not by comparing wall-clock times, which a clock
	// stepping back would get wrong.
	var after sql.NullInt64
	if from.Valid && from.Int64 <= now {
		if err := w.QueryRowContext(w.ctx, `SELECT COALESCE(MAX(id), 0) FROM partitions`).Scan(&after.Int64); err != nil {
			return fmt.Errorf("read registration point: %w", err)
		}
		after.Valid = true
	}
	if _, err := w.ExecContext(w.ctx, `INSERT INTO subscriptions (queue_id, group_name, mode, from_time, created_at, after_partition)
		VALUES (?, ?, ?, ?, ?, ?)`, q.ID, group, mode, from, now, after); err != nil {
		return fmt.Errorf("insert subscription: %w", err)
	}
	expr := seedExpr
	args := []any{from, group, now, q.ID}
	if newSeed != "" {
		expr, args = newSeed, []any{nil, group, now, q.ID}
	}
	if _, err := w.ExecContext(w.ctx, `INSERT INTO cursors (partition_id, group_name, committed, created_at)
		SELECT p.id, ?2, `+expr+`, ?3 FROM partitions p WHERE p.queue_id = ?4
		ON CONFLICT DO NOTHING`, args...); err != nil {
		return fmt.Errorf("seed cursors: %w", err)
	}
	return nil
}

// claim leases (or, with autoAck, consumes) the due spans of q for the
// group and reads their messages. It returns nil when nothing was due.
// When every span it took met a damaged segment, the cursors moved past
// them and it claims again, a few times at most.
func (w *wtx) claim(q *Queue, req *PopRequest) (res *PopResult, wake time.Time, err error) {
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

func (w *wtx) claimOnce(q *Queue, req *PopRequest) (res *PopResult, wake time.Time, err error) {
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
	due, err := scanCandidates(w.ctx, w, q.ID, req.Group, req.Partition, now, limit, after)
	if err != nil {
		return nil, time.Time{}, err
	}
	for _, c := range due {
		if !c.hasCursor {
			if err := w.seedMissingFrom(q, req.Group); err != nil {
				return nil, time.Time{}, err
			}
			if due, err = scanCandidates(w.ctx, w, q.ID, req.Group, req.Partition, now, limit, after); err != nil {
				return nil, time.Time{}, err
			}
			break
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
			visible, nextAt, err := w.visibleUpTo(c.part.ID, from, addMicros(now, -delay))
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
		lw, err := leaseWake(w.ctx, w, q.ID, req.Group, req.Partition, now)
		if err != nil {
			return nil, time.Time{}, err
		}
		return nil, earliest(wake, lw), nil
	}
	leaseID := ""
	if !req.AutoAck {
		leaseID = uuid.NewString()
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
	res = &PopResult{Queue: q.Name, Group: req.Group, LeaseID: leaseID, PartitionsClaimed: len(spans),
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
	return res, time.Time{}, nil
}

// readSpans reads the messages of spans inside the claim, at most
// MaxPopBytes of payload (always at least one message), and returns the
// spans cut to what was read. A segment that fails its checksum or does
// not decode is put aside (see quarantine) and its span ends before it; a
// span whose payloads cannot be decrypted is left unclaimed, and its error
// is returned only when no other span delivered anything.
func (w *wtx) readSpans(q *Queue, req *PopRequest, spans []claimSpan, leaseID string) ([]Message, []claimSpan, error) {
	var msgs []Message
	var size int64
	var sealedErr error
	kept := spans[:0]
	full := false
	for _, sp := range spans {
		if full {
			break
		}
		start := len(msgs)
		err := w.s.scanFrames(w.ctx, w, sp.part.ID, sp.from, sp.to, func(off int64, createdAt int64, f *Frame) error {
			if sp.deleted(off) {
				return nil
			}
			if len(msgs) > 0 && size+int64(len(f.Payload)) > MaxPopBytes {
				full = true
				return errFull
			}
			size += int64(len(f.Payload))
			msgs = append(msgs, Message{
				ID: MessageID(sp.part.UUID, off), TxnID: f.TxnID, PartitionID: sp.part.UUID, Partition: sp.part.Name,
				Queue: q.Name, LeaseID: leaseID, Group: req.Group, Payload: f.Payload, CreatedAt: fromMicros(createdAt),
				TraceID: f.TraceID, ProducerSub: f.ProducerSub, RetryCount: sp.retry, Offset: off,
			})
			return nil
		})
		var bad *segmentError
		switch {
		case err == nil, errors.Is(err, errFull):
		case errors.As(err, &bad) && errors.Is(err, ErrCorrupt):
			if err := w.quarantine(q, &sp, bad, req.Group); err != nil {
				return nil, nil, err
			}
			sp.to = min(sp.to, bad.base-1)
		case errors.Is(err, ErrNoEncryptionKey):
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

// errFull stops a scan once a pop has its bytes.
var errFull = errors.New("pop full")

// quarantine puts aside the damaged segment bad of sp's partition: a copy
// of it goes to quarantined_segments (once, whoever meets it first), the
// group's cursor moves past it when the span starts inside it, and the
// log and the stats say so. The segment row stays until retention takes it.
func (w *wtx) quarantine(q *Queue, sp *claimSpan, bad *segmentError, group string) error {
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

func (w *wtx) seedMissingFrom(q *Queue, group string) error {
	var from, after sql.NullInt64
	if err := w.QueryRowContext(w.ctx, `SELECT from_time, after_partition FROM subscriptions WHERE queue_id = ? AND group_name = ?`,
		q.ID, group).Scan(&from, &after); err != nil {
		return fmt.Errorf("read subscription: %w", err)
	}
	if _, err := w.ExecContext(w.ctx, `INSERT INTO cursors (partition_id, group_name, committed, created_at)
		SELECT p.id, ?2, CASE WHEN p.id > ?5 THEN p.log_start - 1 ELSE `+seedExpr+` END, ?3 FROM partitions p
		WHERE p.queue_id = ?4 AND NOT EXISTS (SELECT 1 FROM cursors c WHERE c.partition_id = p.id AND c.group_name = ?2)`,
		from, group, micros(w.now), q.ID, after); err != nil {
		return fmt.Errorf("seed new partitions: %w", err)
	}
	return nil
}

// visibleUpTo returns the last offset committed at or before cutoff (from-1
// if none), and the commit time of the segment holding from when that
// segment is not yet visible.
func (w *wtx) visibleUpTo(partitionID, from, cutoff int64) (int64, int64, error) {
	var last sql.NullInt64
	if err := w.QueryRowContext(w.ctx, `SELECT base_offset + frame_count - 1 FROM segments
		WHERE partition_id = ? AND created_at <= ? ORDER BY created_at DESC, id DESC LIMIT 1`,
		partitionID, cutoff).Scan(&last); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, 0, fmt.Errorf("find visible offset: %w", err)
	}
	visible := from - 1
	if last.Valid {
		visible = last.Int64
	}
	if visible >= from {
		return visible, 0, nil
	}
	var at int64
	if err := w.QueryRowContext(w.ctx, `SELECT created_at FROM segments WHERE partition_id = ? AND base_offset + frame_count > ?
		ORDER BY base_offset LIMIT 1`, partitionID, from).Scan(&at); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, 0, fmt.Errorf("find next segment: %w", err)
	}
	return visible, at, nil
}

// scanFrames calls fn for every stored frame of partition in [from, to], in
// offset order. Offsets that retention removed are skipped.
func (s *Store) scanFrames(ctx context.Context, db querier, partitionID, from, to int64, fn func(off, createdAt int64, f *Frame) error) error {
	rows, err := db.QueryContext(ctx, `SELECT base_offset, frame_count, created_at, codec, raw_size, checksum, data FROM segments
		WHERE partition_id = ?1 AND base_offset <= ?3 AND base_offset >= COALESCE(
			(SELECT base_offset FROM segments WHERE partition_id = ?1 AND base_offset <= ?2 ORDER BY base_offset DESC LIMIT 1), 0)
		ORDER BY base_offset`, partitionID, from, to)
	if err != nil {
		return fmt.Errorf("read segments: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var base, count, createdAt, sum int64
		var codec, rawSize int
		var data []byte
		if err := rows.Scan(&base, &count, &createdAt, &codec, &rawSize, &sum, &data); err != nil {
			return fmt.Errorf("scan segment: %w", err)
		}
		frames, err := decodeSegment(codec, rawSize, uint32(sum), data, int(count))
		if err != nil {
			return &segmentError{partitionID: partitionID, base: base, count: count, err: err}
		}
		for i := range frames {
			off := base + int64(i)
			if off < from || off > to {
				continue
			}
			if frames[i].Payload, err = s.DecryptPayload(frames[i].Payload); err != nil {
				return &segmentError{partitionID: partitionID, base: base, count: count,
					err: fmt.Errorf("frame %d: %w", off, err)}
			}
			if err := fn(off, createdAt, &frames[i]); err != nil {
				return err
			}
		}
	}
	return rows.Err()
}

// segmentError is a stored segment that cannot be read.
type segmentError struct {
	partitionID, base, count int64
	err                      error
}

func (e *segmentError) Error() string {
	return fmt.Sprintf("segment %d of partition %d: %v", e.base, e.partitionID, e.err)
}

func (e *segmentError) Unwrap() error { return e.err }
