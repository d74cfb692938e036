package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// SegmentRef describes one stored segment.
type SegmentRef struct {
	BaseOffset int64
	FrameCount int64
	CreatedAt  time.Time
}

// SeekState is what a placement rule sees of one partition when a seek
// resolves: the watermarks, the group's cursor, and what the request asked
// the store to look up.
type SeekState struct {
	Partition Partition
	// HasCursor is false when the group never met this partition; Committed
	// is then Partition.LogStart-1.
	HasCursor bool
	Committed int64
	// Landing is the first segment committed at or after SeekRequest.At
	// (see landing); nil when no segment is that recent or the request
	// carries no time.
	Landing *SegmentRef
	// Captured is the snapshot's committed for this partition; nil when the
	// request names no snapshot or the partition was created after it.
	Captured *int64
}

// Floor is the lowest committed value that still means something: just
// below the first retained offset.
func (st *SeekState) Floor() int64 { return st.Partition.LogStart - 1 }

// Placement is where a seek puts one partition's cursor.
type Placement struct {
	Committed int64
	// Clamped is true when the position wanted lay below the retention
	// watermark and was raised to it; FramesEvicted counts the offsets
	// below the watermark that the seek could not give back.
	Clamped       bool
	FramesEvicted int64
	// OvershootBound is, for a timestamp seek, the most frames older than
	// the time that the landing segment can deliver again: its frame count
	// minus one.
	OvershootBound int64
}

// SeekRequest moves one group's cursors on one queue.
type SeekRequest struct {
	Tenant string
	Group  string // "" = QueueModeGroup
	Queue  string
	// Partition names one partition; "" seeks every partition of the queue.
	Partition string
	// At, when set, makes the store look up each partition's landing segment.
	At *time.Time
	// Snapshot, when set, makes the store load that live snapshot's
	// captured cursors; it must have been taken on Queue.
	Snapshot string
	// DryRun resolves every placement and changes nothing.
	DryRun bool
	// Place decides each partition's new committed value. An error aborts
	// the whole seek, nothing changed. Required.
	Place func(*SeekState) (Placement, error)
}

// PartitionSeek is what a seek did, or would do, to one partition.
type PartitionSeek struct {
	Partition   string
	PartitionID string // uuid
	// From is the committed value before the seek (the floor when the
	// group had no cursor there), To the one after.
	From, To int64
	// Redeliver counts frames the group will be handed again, Skip frames
	// it will never be handed.
	Redeliver, Skip int64
	Placement
	// Created is true when the seek gave the group its first cursor on
	// this partition.
	Created bool

	id int64 // the partition's row id
}

// SeekResult is the outcome of a seek, one entry per partition in creation order.
type SeekResult struct {
	Queue      string
	Group      string
	Partitions []PartitionSeek
	// Snapshot is the snapshot applied, when the request named one.
	Snapshot *Snapshot
}

// Clamped reports whether any partition was clamped, and how many frames
// the clamping could not give back in total.
func (r *SeekResult) Clamped() (bool, int64) {
	var any bool
	var n int64
	for _, p := range r.Partitions {
		if p.Clamped {
			any = true
			n += p.FramesEvicted
		}
	}
	return any, n
}

// seekStatesQuery reads, for every partition of a queue (or one named
// partition), the watermarks and the group's cursor.
const seekStatesQuery = `SELECT p.id, p.uuid, p.queue_id, p.name, p.last_offset, p.log_start, p.last_segment_at, p.created_at,
	c.committed
	FROM partitions p
	LEFT JOIN cursors c ON c.partition_id = p.id AND c.group_name = ?1
	WHERE p.queue_id = ?2 AND (?3 = '' OR p.name = ?3)
	ORDER BY p.id`

func seekStates(ctx context.Context, db querier, queueID int64, group, partition string, at *time.Time) ([]SeekState, error) {
	out, err := scanSeekStates(ctx, db, queueID, group, partition)
	if err != nil || at == nil {
		return out, err
	}
	// Landings are searched once the rows are closed: db may be one
	// connection, busy until then.
	probes := db
	if pr, ok := db.(interface {
		PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
	}); ok {
		var done func()
		if probes, done, err = landingProbes(ctx, pr); err != nil {
			return nil, err
		}
		defer done()
	}
	for i := range out {
		p := &out[i].Partition
		if out[i].Landing, err = landing(ctx, probes, p, micros(*at)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func scanSeekStates(ctx context.Context, db querier, queueID int64, group, partition string) ([]SeekState, error) {
	rows, err := db.QueryContext(ctx, seekStatesQuery, group, queueID, partition)
	if err != nil {
		return nil, fmt.Errorf("read seek state: %w", err)
	}
	defer rows.Close()
	var out []SeekState
	for rows.Next() {
		var st SeekState
		var created int64
		var committed sql.NullInt64
		p := &st.Partition
		if err := rows.Scan(&p.ID, &p.UUID, &p.QueueID, &p.Name, &p.LastOffset, &p.LogStart, &p.LastSegmentAt, &created,
			&committed); err != nil {
			return nil, fmt.Errorf("scan seek state: %w", err)
		}
		p.CreatedAt = fromMicros(created)
		st.HasCursor, st.Committed = committed.Valid, committed.Int64
		if !committed.Valid {
			st.Committed = p.LogStart - 1
		}
		out = append(out, st)
	}
	return out, rows.Err()
}

// Seek moves one group's cursor on every partition of a queue, or on one
// partition, to where req.Place says. All partitions move in one writer
// operation: committed set, any lease dropped (so an ack carrying it fails
// the lease check), retry and redelivery counters reset, a missing cursor
// created; other groups are untouched, and parked pops of the queue wake.
//
// It returns ErrQueueNotFound when the queue is unknown to the tenant or has
// no partitions, ErrPartitionNotFound when the named partition (or its
// queue) does not exist, ErrSnapshotNotFound when the snapshot is unknown or
// expired, and any error of Place, with nothing changed.
func (s *Store) Seek(ctx context.Context, req SeekRequest) (*SeekResult, error) {
	if req.Place == nil {
		return nil, fmt.Errorf("seek: %w: no placement rule", ErrInvalid)
	}
	if req.Group == "" {
		req.Group = QueueModeGroup
	}
	if req.DryRun {
		// A consistent read is enough: nothing is written.
		tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return nil, fmt.Errorf("begin read: %w", err)
		}
		defer tx.Rollback()
		return resolveSeek(ctx, tx, micros(s.clock.Now()), &req)
	}
	var res *SeekResult
	err := s.submit(ctx, &writeOp{isolated: true, apply: func(w *wtx) error {
		var err error
		res, err = resolveSeek(w.ctx, w.tx, micros(w.now), &req)
		if err != nil {
			return err
		}
		return w.applySeek(res, req.Tenant)
	}})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// resolveSeek reads the state of the partitions req touches and asks
// req.Place where each cursor goes.
func resolveSeek(ctx context.Context, db querier, now int64, req *SeekRequest) (*SeekResult, error) {
	q, err := getQueue(ctx, db, req.Tenant, req.Queue)
	if err != nil {
		if errors.Is(err, ErrQueueNotFound) && req.Partition != "" {
			return nil, ErrPartitionNotFound
		}
		return nil, err
	}
	res := &SeekResult{Queue: q.Name, Group: req.Group}
	var captured map[string]int64
	if req.Snapshot != "" {
		snap, cursors, err := loadSnapshot(ctx, db, req.Tenant, req.Snapshot, now)
		if err != nil {
			return nil, err
		}
		if snap.Queue != q.Name {
			return nil, fmt.Errorf("%w: snapshot %q was taken on queue %q, not %q", ErrInvalid, snap.Name, snap.Queue, q.Name)
		}
		// A queue deleted and recreated under the same name has new
		// partition uuids: none matches, and every partition replays from
		// the oldest retained message, like a partition created later.
		res.Snapshot, captured = snap, cursors
	}
	states, err := seekStates(ctx, db, q.ID, req.Group, req.Partition, req.At)
	if err != nil {
		return nil, err
	}
	if len(states) == 0 {
		if req.Partition != "" {
			return nil, ErrPartitionNotFound
		}
		return nil, ErrQueueNotFound
	}
	res.Partitions = make([]PartitionSeek, len(states))
	for i := range states {
		st := &states[i]
		if c, ok := captured[st.Partition.UUID]; ok {
			st.Captured = &c
		}
		pl, err := req.Place(st)
		if err != nil {
			return nil, err
		}
		p := &st.Partition
		if pl.Committed < st.Floor() || pl.Committed > p.LastOffset {
			return nil, fmt.Errorf("seek partition %q: placement %d outside [%d, %d]", p.Name, pl.Committed, st.Floor(), p.LastOffset)
		}
		from := max(st.Committed, st.Floor())
		res.Partitions[i] = PartitionSeek{
			Partition: p.Name, PartitionID: p.UUID, From: from, To: pl.Committed,
			Redeliver: max(0, from-pl.Committed), Skip: max(0, pl.Committed-from),
			Placement: pl, Created: !st.HasCursor, id: p.ID,
		}
	}
	return res, nil
}

// applySeek writes the resolved placements.
func (w *wtx) applySeek(res *SeekResult, tenant string) error {
	now := micros(w.now)
	for _, ps := range res.Partitions {
		if _, err := w.ExecContext(w.ctx, `INSERT INTO cursors (partition_id, group_name, committed, created_at)
			VALUES (?1, ?2, ?3, ?4)
			ON CONFLICT (partition_id, group_name) DO UPDATE SET committed = excluded.committed,
				lease_id = NULL, lease_from = NULL, lease_to = NULL, lease_expires_at = NULL,
				retry_count = 0, redelivery_count = 0`, ps.id, res.Group, ps.To, now); err != nil {
			return fmt.Errorf("move cursor of partition %q: %w", ps.Partition, err)
		}
	}
	// Parked pops of this queue look again now, so a backward seek starts
	// redelivering on the next poll instead of at the pop's timeout.
	w.touch(tenant, res.Queue)
	return nil
}
