package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/store/segment"
)

// Message reads. A message has no row of its own: it is a frame in a
// segment, and its status for a group is where the group's cursor stands
// (completed at or below committed, processing inside a live lease, pending
// otherwise), or dead_letter when a DLQ copy of it exists. The status shown
// is the one the resource counts use: the queue-mode cursor, or else the
// least advanced named group.

func modeType(queue bool, bus int) string {
	switch {
	case queue && bus > 0:
		return "hybrid"
	case queue:
		return "queue"
	case bus > 0:
		return "bus"
	}
	return "none"
}

// partitionView is what classifying a partition's offsets needs.
type partitionView struct {
	q    *combtype.Queue
	p    *combtype.PartitionStats
	dlq  bool // some DLQ row names this partition
	tomb bool // some tombstone names this partition
	qm   *cursor
	sc   *cursor // status cursor
	bus  []int64 // each named group's committed offset, ascending
}

// newPartitionView is the view of p through pc, read with its bus kept
// (nil for a partition no group has met).
func newPartitionView(q *combtype.Queue, p *combtype.PartitionStats, pc *partCursors) *partitionView {
	v := &partitionView{q: q, p: p, dlq: p.Counts.DeadLetter > 0}
	if pc != nil {
		v.qm, v.sc, v.bus = pc.qm, pc.status(), pc.bus
	}
	return v
}

// status classifies offset off; dead is whether a DLQ row names it.
func (v *partitionView) status(off int64, dead bool, now int64) (status, queueStatus string, consumedBy int, lease time.Time) {
	cursorStatus := func(c *cursor) string {
		switch {
		case c == nil:
			return combtype.MessagePending
		case off <= c.committed:
			return combtype.MessageCompleted
		case c.inLease(off, now):
			return combtype.MessageProcessing
		}
		return combtype.MessagePending
	}
	// The groups whose committed offset is off or past it.
	consumedBy = len(v.bus) - sort.Search(len(v.bus), func(i int) bool { return v.bus[i] >= off })
	if v.qm != nil {
		queueStatus = cursorStatus(v.qm)
	}
	status = cursorStatus(v.sc)
	if status == combtype.MessageProcessing {
		lease = fromMicros(v.sc.leaseExpires.Int64)
	}
	if dead {
		status = combtype.MessageDeadLetter
	}
	return status, queueStatus, consumedBy, lease
}

// offsetsIn returns the sorted offsets in [from, to] of partition named in
// query (which takes partition, from, to).
func offsetsIn(ctx context.Context, db querier, query string, partition any, from, to int64) ([]int64, error) {
	rows, err := db.QueryContext(ctx, query, partition, from, to)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var off int64
		if err := rows.Scan(&off); err != nil {
			return nil, err
		}
		out = append(out, off)
	}
	return out, rows.Err()
}

const (
	tombstonesInRange  = `SELECT offset FROM tombstones WHERE partition_id = ? AND offset BETWEEN ? AND ? ORDER BY offset`
	deadLettersInRange = `SELECT DISTINCT offset FROM dlq WHERE partition_uuid = ? AND offset BETWEEN ? AND ? ORDER BY offset`
)

// credibleFrameCount reports whether a segment of size stored bytes can
// hold count frames: each frame packs four length-prefixed fields, at
// least four bytes, and LZ4 compresses at most 255 to 1.
func credibleFrameCount(count, size int64) bool {
	return count >= 1 && size >= 0 && count <= size*255/4+1
}

func containsOffset(sorted []int64, off int64) bool {
	_, ok := slices.BinarySearch(sorted, off)
	return ok
}

// smallPartitionSet is the most partitions ListMessages walks by their
// own offset index; a larger set is walked through segments_time instead.
const smallPartitionSet = 256

// listScanSlack bounds the walk of ListMessages: it reads at most limit +
// offset + listScanSlack segments. Unbounded, a status no message had
// (or an offset of 790,000) walked every segment of the time window and
// loaded every partition's cursors: 300,000 partitions of one message
// took 145 s and, four at once, 660 MB.
const listScanSlack = 10_000

// ListMessages returns one page of the messages matching f, newest first,
// and how the matched queues are consumed. Segments are walked from the
// newest end by their index entries; a segment is decoded only when one of
// its frames falls inside the page, and a partition's cursors are read
// only when the walk meets one of its segments, so the cost follows
// limit+offset (and the time window), not the number of partitions.
func (s *Store) ListMessages(ctx context.Context, tenant string, f combtype.MessageFilter) ([]combtype.MessageInfo, combtype.ModeInfo, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = combtype.DefaultMessageLimit
	}
	skip := max(f.Offset, 0)
	if skip > combtype.MaxPageOffset {
		return nil, combtype.ModeInfo{}, fmt.Errorf("%w: offset %d is past %d; narrow the listing with from and to instead",
			combtype.ErrInvalid, skip, combtype.MaxPageOffset)
	}
	walk := limit + skip + listScanSlack
	queues, err := listQueues(ctx, s.r, `SELECT `+queueColumns+` FROM queues WHERE tenant = ? AND (? = '' OR name = ?)
		AND (? = '' OR namespace = ?) AND (? = '' OR task = ?)`,
		tenant, f.Queue, f.Queue, f.Namespace, f.Namespace, f.Task, f.Task)
	if err != nil {
		return nil, combtype.ModeInfo{}, err
	}
	out := []combtype.MessageInfo{}
	var mode combtype.ModeInfo
	mode.Type = modeType(false, 0)
	if len(queues) == 0 {
		return out, mode, nil
	}
	qids := make([]int64, len(queues))
	for i, q := range queues {
		qids[i] = q.ID
	}
	qidList := jsonInts(qids)
	// A few partitions (one named, or small queues) are walked by their ids;
	// more than smallPartitionSet through the time index joined to them.
	var ids []int64
	rows, err := s.r.QueryContext(ctx, `SELECT id FROM partitions WHERE queue_id IN (SELECT value FROM json_each(?1))
		AND (?2 = '' OR name = ?2) LIMIT ?3`, qidList, f.Partition, smallPartitionSet+1)
	if err != nil {
		return nil, combtype.ModeInfo{}, fmt.Errorf("list partitions: %w", err)
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, combtype.ModeInfo{}, fmt.Errorf("scan partition: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, combtype.ModeInfo{}, fmt.Errorf("list partitions: %w", err)
	}
	if len(ids) == 0 {
		return out, mode, nil
	}
	small := len(ids) <= smallPartitionSet
	if mode, err = s.messagesMode(ctx, qidList, f.Partition, ids, small); err != nil {
		return nil, combtype.ModeInfo{}, err
	}
	from, to := int64(0), int64(1<<62)
	if !f.From.IsZero() {
		from = micros(f.From)
	}
	if !f.To.IsZero() {
		to = micros(f.To)
	}
	now := micros(s.clock.Now())
	idList := jsonInts(ids)
	views := map[int64]*partitionView{}

	var damaged []*segmentError
	defer func() { s.setAsideLater(ctx, damaged) }()
	// Walk segment index entries newest first, a chunk at a time: the
	// first chunk about what the page needs, since each entry holds at
	// least one frame (tombstones and a status filter may ask for more).
	chunk := min(max(limit+skip, 16), 256)
	lastAt, lastID := int64(1<<62), int64(1<<62)
	for len(out) < limit {
		var rows *sql.Rows
		if small {
			rows, err = s.r.QueryContext(ctx, `SELECT id, partition_id, base_offset, frame_count, created_at, length(data)
			FROM segments INDEXED BY segments_partition_offset WHERE partition_id IN (SELECT value FROM json_each(?1)) AND created_at BETWEEN ?2 AND ?3
				AND (created_at < ?4 OR (created_at = ?4 AND id < ?5))
			ORDER BY created_at DESC, id DESC LIMIT ?6`, idList, from, to, lastAt, lastID, chunk)
		} else {
			rows, err = s.r.QueryContext(ctx, `SELECT s.id, s.partition_id, s.base_offset, s.frame_count, s.created_at, length(s.data)
			FROM segments s INDEXED BY segments_time CROSS JOIN partitions p ON p.id = s.partition_id
			WHERE p.queue_id IN (SELECT value FROM json_each(?1)) AND (?7 = '' OR p.name = ?7)
				AND s.created_at BETWEEN ?2 AND ?3
				AND (s.created_at < ?4 OR (s.created_at = ?4 AND s.id < ?5))
			ORDER BY s.created_at DESC, s.id DESC LIMIT ?6`, qidList, from, to, lastAt, lastID, chunk, f.Partition)
		}
		if err != nil {
			return nil, combtype.ModeInfo{}, fmt.Errorf("list segments: %w", err)
		}
		type segRef struct{ id, partition, base, count, createdAt, size int64 }
		var segs []segRef
		for rows.Next() {
			var r segRef
			if err := rows.Scan(&r.id, &r.partition, &r.base, &r.count, &r.createdAt, &r.size); err != nil {
				rows.Close()
				return nil, combtype.ModeInfo{}, fmt.Errorf("scan segment: %w", err)
			}
			segs = append(segs, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, combtype.ModeInfo{}, fmt.Errorf("list segments: %w", err)
		}
		var missing []int64
		for _, sg := range segs {
			if views[sg.partition] == nil && !slices.Contains(missing, sg.partition) {
				missing = append(missing, sg.partition)
			}
		}
		if err := s.loadViews(ctx, queues, missing, views); err != nil {
			return nil, combtype.ModeInfo{}, err
		}
		for _, sg := range segs {
			if walk--; walk < 0 {
				return out, mode, nil
			}
			lastAt, lastID = sg.createdAt, sg.id
			v := views[sg.partition]
			if v == nil {
				continue // its queue was deleted since the walk began
			}
			if !credibleFrameCount(sg.count, sg.size) {
				// The walk below takes the count at its word before
				// decoding: one edited to 2^63 held the listing in it
				// until the process ran out of memory.
				damaged = append(damaged, &segmentError{partitionID: sg.partition, base: sg.base, count: sg.count,
					err: fmt.Errorf("%w: %d frames recorded for %d stored bytes", combtype.ErrCorrupt, sg.count, sg.size)})
				continue
			}
			first, last := sg.base, sg.base+sg.count-1
			var tombs, dead []int64
			if v.tomb {
				if tombs, err = offsetsIn(ctx, s.r, tombstonesInRange, sg.partition, first, last); err != nil {
					return nil, combtype.ModeInfo{}, fmt.Errorf("read tombstones: %w", err)
				}
			}
			if v.dlq {
				if dead, err = offsetsIn(ctx, s.r, deadLettersInRange, v.p.UUID, first, last); err != nil {
					return nil, combtype.ModeInfo{}, fmt.Errorf("read dead letters: %w", err)
				}
			}
			// Which frames of this segment match, newest first, by
			// arithmetic alone.
			var match []int64
			for off := last; off >= first; off-- {
				if containsOffset(tombs, off) {
					continue
				}
				st, _, _, _ := v.status(off, containsOffset(dead, off), now)
				if f.Status == "" || f.Status == st {
					match = append(match, off)
				}
			}
			if len(match) <= skip {
				skip -= len(match)
				continue
			}
			match = match[skip:]
			skip = 0
			if len(match) > limit-len(out) {
				match = match[:limit-len(out)]
			}
			frames, err := s.segmentFrames(ctx, sg.id, int(sg.count))
			if errors.Is(err, errSegmentGone) {
				continue
			}
			if bad := damagedSegment(err); bad != nil {
				// Left out of the listing, as a claim leaves it out of a
				// batch, and put aside where the quarantine listing shows it.
				bad.partitionID = sg.partition
				damaged = append(damaged, bad)
				continue
			}
			if err != nil {
				return nil, combtype.ModeInfo{}, err
			}
			for _, off := range match {
				fr := &frames[off-first]
				st, qst, consumed, lease := v.status(off, containsOffset(dead, off), now)
				out = append(out, combtype.MessageInfo{
					ID: s.messageID(v.p.UUID, off), TxnID: fr.TxnID, PartitionID: v.p.UUID, Partition: v.p.Name,
					Queue: v.q.Name, Namespace: v.q.Namespace, Task: v.q.Task, Priority: v.q.Options.Priority,
					Offset: off, Status: st, QueueStatus: qst, ConsumedBy: consumed, TotalGroups: len(v.bus),
					TraceID: fr.TraceID, ProducerSub: fr.ProducerSub, CreatedAt: fromMicros(sg.createdAt),
					LeaseExpiresAt: lease,
				})
			}
			if len(out) >= limit {
				break
			}
		}
		if len(segs) < chunk {
			break
		}
	}
	return out, mode, nil
}

// loadViews adds to views the partitions ids (of queues) with their
// cursors, dead-letter and tombstone flags.
func (s *Store) loadViews(ctx context.Context, queues []*combtype.Queue, ids []int64, views map[int64]*partitionView) error {
	if len(ids) == 0 {
		return nil
	}
	parts, err := queryPartitions(ctx, s.r, `SELECT `+partitionColumns+` FROM partitions
		WHERE id IN (SELECT value FROM json_each(?)) ORDER BY queue_id, id`, jsonInts(ids))
	if err != nil {
		return err
	}
	byID := make(map[int64]*combtype.Queue, len(queues))
	for _, q := range queues {
		byID[q.ID] = q
	}
	parts = slices.DeleteFunc(parts, func(p *combtype.Partition) bool { return byID[p.QueueID] == nil })
	stats, cursorsOf, err := s.statsOf(ctx, s.r, queues, parts, false, true)
	if err != nil {
		return err
	}
	s.stats.ListedPartitions.Add(int64(len(parts)))
	var met []int64
	for _, qs := range stats {
		for i := range qs.Partitions {
			ps := &qs.Partitions[i]
			views[ps.ID] = newPartitionView(&qs.Queue, ps, cursorsOf[ps.ID])
			met = append(met, ps.ID)
		}
	}
	return s.markTombstoned(ctx, views, met)
}

// messagesMode is how the partitions of queues (qidList; only those named
// partition when it is set) are consumed: whether any has a queue-mode
// cursor and how many named groups have a cursor on any of them. A small
// set (ids, all of it) is read directly. Otherwise each group name in
// cursors_group is visited once, by a seek past the previous one, and
// asked whether it has a cursor on the set; a group that has stops at its
// first, so the cost follows the number of groups, not of partitions.
func (s *Store) messagesMode(ctx context.Context, qidList, partition string, ids []int64, small bool) (combtype.ModeInfo, error) {
	var rows *sql.Rows
	var err error
	if small {
		rows, err = s.r.QueryContext(ctx, `SELECT group_name FROM cursors
			WHERE partition_id IN (SELECT value FROM json_each(?1))
			UNION SELECT s.group_name FROM subscriptions s
			WHERE s.queue_id IN (SELECT queue_id FROM partitions WHERE id IN (SELECT value FROM json_each(?1)))`, jsonInts(ids))
	} else {
		rows, err = s.r.QueryContext(ctx, `WITH RECURSIVE g(name) AS (
				SELECT MIN(group_name) FROM cursors
				UNION ALL
				SELECT (SELECT MIN(group_name) FROM cursors WHERE group_name > g.name) FROM g WHERE g.name IS NOT NULL)
			SELECT name FROM g WHERE name IS NOT NULL AND EXISTS (SELECT 1 FROM cursors c
				JOIN partitions p ON p.id = c.partition_id
				WHERE c.group_name = g.name AND p.queue_id IN (SELECT value FROM json_each(?1))
					AND (?2 = '' OR p.name = ?2))
			UNION SELECT s.group_name FROM subscriptions s WHERE s.queue_id IN (SELECT value FROM json_each(?1))
				AND (?2 = '' OR EXISTS (SELECT 1 FROM partitions p WHERE p.queue_id = s.queue_id AND p.name = ?2))`,
			qidList, partition)
	}
	if err != nil {
		return combtype.ModeInfo{}, fmt.Errorf("read consuming groups: %w", err)
	}
	defer rows.Close()
	var mode combtype.ModeInfo
	for rows.Next() {
		var g string
		if err := rows.Scan(&g); err != nil {
			return combtype.ModeInfo{}, fmt.Errorf("scan consuming group: %w", err)
		}
		if g == combtype.QueueModeGroup {
			mode.HasQueueMode = true
		} else {
			mode.BusGroups++
		}
	}
	if err := rows.Err(); err != nil {
		return combtype.ModeInfo{}, fmt.Errorf("read consuming groups: %w", err)
	}
	mode.Type = modeType(mode.HasQueueMode, mode.BusGroups)
	return mode, nil
}

// markTombstoned flags the partitions that have tombstones, so the walk
// asks only those for them.
func (s *Store) markTombstoned(ctx context.Context, views map[int64]*partitionView, ids []int64) error {
	rows, err := s.r.QueryContext(ctx, `SELECT DISTINCT partition_id FROM tombstones
		WHERE partition_id IN (SELECT value FROM json_each(?))`, jsonInts(ids))
	if err != nil {
		return fmt.Errorf("read tombstones: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return fmt.Errorf("scan tombstone: %w", err)
		}
		if v := views[id]; v != nil {
			v.tomb = true
		}
	}
	return rows.Err()
}

// locateStored finds a stored, not deleted message of tenant: its queue,
// partition and offset. Unknown ids, offsets retention removed, tombstoned
// messages and messages of damaged segments are all ErrMessageNotFound;
// the damaged segments met are appended to damaged (see txnOffsetsDamaged).
func locateStored(ctx context.Context, db querier, tenant, partitionUUID, txn string, damaged *[]*segmentError) (*combtype.Queue, *combtype.Partition, int64, error) {
	var p combtype.Partition
	var created, queueID int64
	err := db.QueryRowContext(ctx, `SELECT p.id, p.uuid, p.queue_id, p.name, p.last_offset, p.log_start, p.last_segment_at,
			p.created_at, q.id FROM partitions p JOIN queues q ON q.id = p.queue_id
		WHERE p.uuid = ? AND q.tenant = ?`,
		partitionUUID, tenant).Scan(&p.ID, &p.UUID, &p.QueueID, &p.Name, &p.LastOffset, &p.LogStart,
		&p.LastSegmentAt, &created, &queueID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, 0, combtype.ErrMessageNotFound
	}
	if err != nil {
		return nil, nil, 0, fmt.Errorf("locate message: %w", err)
	}
	p.CreatedAt = fromMicros(created)
	found, err := txnOffsetsDamaged(ctx, db, p.ID, []string{txn}, damaged)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("locate message: %w", err)
	}
	off, ok := found[txn]
	if !ok || off < p.LogStart {
		return nil, nil, 0, combtype.ErrMessageNotFound
	}
	var deleted bool
	if err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM tombstones WHERE partition_id = ? AND offset = ?)`,
		p.ID, off).Scan(&deleted); err != nil {
		return nil, nil, 0, fmt.Errorf("locate message: %w", err)
	}
	if deleted {
		return nil, nil, 0, combtype.ErrMessageNotFound
	}
	q, err := scanQueue(db.QueryRowContext(ctx, `SELECT `+queueColumns+` FROM queues WHERE id = ?`, queueID))
	if err != nil {
		return nil, nil, 0, fmt.Errorf("load queue: %w", err)
	}
	return q, &p, off, nil
}

// GetMessage returns one message of tenant by partition uuid and
// transactionId, with its payload as pushed, or ErrMessageNotFound.
func (s *Store) GetMessage(ctx context.Context, tenant, partitionUUID, txn string) (*combtype.MessageDetail, error) {
	var damaged []*segmentError
	defer func() { s.setAsideLater(ctx, damaged) }()
	q, p, off, err := locateStored(ctx, s.r, tenant, partitionUUID, txn, &damaged)
	if err != nil {
		return nil, err
	}
	d := &combtype.MessageDetail{QueueOptions: q.Options, IsEncrypted: q.Options.EncryptionEnabled && s.Encrypting()}
	var frame *segment.Frame
	var createdAt int64
	if err := s.scanFrames(ctx, s.r, p.ID, off, off, func(_, at int64, f *segment.Frame) error {
		frame, createdAt = f, at
		return nil
	}); err != nil {
		if bad := damagedSegment(err); bad != nil {
			damaged = append(damaged, bad)
			return nil, combtype.ErrMessageNotFound
		}
		return nil, err
	}
	if frame == nil {
		return nil, combtype.ErrMessageNotFound // removed by retention since it was located
	}
	// Every group's position on the partition is listed (d.Groups).
	now := micros(s.clock.Now())
	var cs []cursor
	pc, err := readPartCursors(ctx, s.r, []int64{p.ID}, now, impliedEach, func(c *cursor) { cs = append(cs, *c) })
	if err != nil {
		return nil, err
	}
	v := newPartitionView(q, &combtype.PartitionStats{Partition: *p}, pc[p.ID])
	var errText sql.NullString
	var dlqRetry sql.NullInt64
	err = s.r.QueryRowContext(ctx, `SELECT error_message, retry_count FROM dlq WHERE partition_uuid = ? AND offset = ?
		ORDER BY id DESC LIMIT 1`, p.UUID, off).Scan(&errText, &dlqRetry)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("read dead letter: %w", err)
	}
	st, qst, consumed, lease := v.status(off, dlqRetry.Valid, now)
	d.MessageInfo = combtype.MessageInfo{
		ID: s.messageID(p.UUID, off), TxnID: frame.TxnID, PartitionID: p.UUID, Partition: p.Name, Queue: q.Name,
		Namespace: q.Namespace, Task: q.Task, Priority: q.Options.Priority, Offset: off, Status: st, QueueStatus: qst,
		ConsumedBy: consumed, TotalGroups: len(v.bus), TraceID: frame.TraceID, ProducerSub: frame.ProducerSub,
		CreatedAt: fromMicros(createdAt), LeaseExpiresAt: lease,
	}
	d.Payload = frame.Payload
	d.ErrorMessage = errText.String
	switch {
	case dlqRetry.Valid:
		d.RetryCount = dlqRetry.Int64
	case v.sc != nil && off > v.sc.committed:
		// The failed rounds of the batch this message is (again) part of.
		d.RetryCount = v.sc.retry
	}
	d.Mode = combtype.ModeInfo{HasQueueMode: v.qm != nil, BusGroups: len(v.bus), Type: modeType(v.qm != nil, len(v.bus))}
	for _, c := range cs {
		g := combtype.GroupPosition{Group: c.group, Consumed: off <= c.committed}
		if c.inLease(off, now) {
			g.LeaseExpiresAt = fromMicros(c.leaseExpires.Int64)
		}
		d.Groups = append(d.Groups, g)
	}
	sort.Slice(d.Groups, func(i, j int) bool { return d.Groups[i].Group < d.Groups[j].Group })
	return d, nil
}

// DeleteMessage tombstones one message of tenant: it stays in its segment
// (segments are immutable) but is never delivered again and no longer
// read. It reports false when there is no such stored message, including
// one already deleted.
//
// A message already in flight is not recalled: its consumer may still ack
// it. A claim skips tombstoned offsets (see trimTombstones), so a deleted
// message costs nothing once a cursor passes it.
func (s *Store) DeleteMessage(ctx context.Context, tenant, partitionUUID, txn string) (bool, error) {
	var found bool
	err := s.submit(ctx, &writeOp{apply: func(w *wtx) error {
		found = false
		var damaged []*segmentError
		_, p, off, err := locateStored(w.ctx, w, tenant, partitionUUID, txn, &damaged)
		for _, bad := range damaged {
			if err := w.setAside(bad); err != nil {
				return err
			}
		}
		if errors.Is(err, combtype.ErrMessageNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := w.ExecContext(w.ctx, `INSERT INTO tombstones (partition_id, offset, created_at) VALUES (?, ?, ?)`,
			p.ID, off, micros(w.now)); err != nil {
			return fmt.Errorf("insert tombstone: %w", err)
		}
		// Its transactionId is free again, as in Queen, where the delete
		// removes the row its uniqueness is kept in: a push of it after
		// the delete answered "duplicate" with the deleted message's id,
		// and stored nothing. The dedup caches only err high (push.go).
		if _, err := w.ExecContext(w.ctx, `DELETE FROM txids WHERE txn_key = ? AND partition_id = ? AND offset = ?`,
			txnKey(txn), p.ID, off); err != nil {
			return fmt.Errorf("free the deleted message's transactionId: %w", err)
		}
		clear(w.claimedDead)
		// Tombstones retention has overtaken are dead weight.
		if _, err := w.ExecContext(w.ctx, `DELETE FROM tombstones WHERE partition_id = ? AND offset < ?`, p.ID, p.LogStart); err != nil {
			return fmt.Errorf("drop evicted tombstones: %w", err)
		}
		found = true
		return nil
	}})
	return found, err
}
