package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/seek"
)

// SegmentRef describes one stored segment.
type SegmentRef struct {
	BaseOffset int64
	FrameCount int64
	CreatedAt  time.Time
}

// seekRow is one partition a seek touches: its row and what the rule
// sees of it.
type seekRow struct {
	part  combtype.Partition
	state seek.State
}

// seekStatesQuery reads, for every partition of a queue (or one named
// partition), the watermarks and the group's cursor.
// A partition the group has no row on but a subscription implies a cursor
// on (implied.go) is read at the implied position, as a cursor it has.
var seekStatesQuery = `SELECT p.id, p.uuid, p.queue_id, p.name, p.last_offset, p.log_start, p.last_segment_at, p.created_at,
	CASE WHEN c.committed IS NOT NULL OR s.group_name IS NOT NULL THEN ` + committedExpr + ` END
	FROM partitions p
	LEFT JOIN cursors c ON c.partition_id = p.id AND c.group_name = ?1
	LEFT JOIN subscriptions s ON s.queue_id = p.queue_id AND s.group_name = ?1
	WHERE p.queue_id = ?2 AND (?3 = '' OR p.name = ?3)
	ORDER BY p.id`

func seekStates(ctx context.Context, db querier, queueID int64, group, partition string, at *time.Time) ([]seekRow, error) {
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
		l, err := landing(ctx, probes, &out[i].part, micros(*at))
		if err != nil {
			return nil, err
		}
		out[i].state.Landing = l.seg()
	}
	return out, nil
}

func scanSeekStates(ctx context.Context, db querier, queueID int64, group, partition string) ([]seekRow, error) {
	rows, err := db.QueryContext(ctx, seekStatesQuery, group, queueID, partition)
	if err != nil {
		return nil, fmt.Errorf("read seek state: %w", err)
	}
	defer rows.Close()
	var out []seekRow
	for rows.Next() {
		var r seekRow
		var created int64
		var committed sql.NullInt64
		p := &r.part
		if err := rows.Scan(&p.ID, &p.UUID, &p.QueueID, &p.Name, &p.LastOffset, &p.LogStart, &p.LastSegmentAt, &created,
			&committed); err != nil {
			return nil, fmt.Errorf("scan seek state: %w", err)
		}
		p.CreatedAt = fromMicros(created)
		r.state = seekStateOf(p)
		r.state.HasCursor = committed.Valid
		if committed.Valid {
			r.state.Committed = committed.Int64
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// seekState is what the seek rule sees of p, before any cursor or landing
// is known.
func seekStateOf(p *combtype.Partition) seek.State {
	return seek.State{Name: p.Name, LastOffset: p.LastOffset, LogStart: p.LogStart, LastSegmentAt: p.LastSegmentAt,
		Committed: p.LogStart - 1}
}

// seg is what the seek rule needs of r; nil stays nil.
func (r *SegmentRef) seg() *seek.Segment {
	if r == nil {
		return nil
	}
	return &seek.Segment{BaseOffset: r.BaseOffset, FrameCount: r.FrameCount}
}

// Seek moves one group's cursor on every partition of a queue, or on one
// partition, to where seek.Place puts req.Target: committed set, any lease
// dropped (so an ack carrying it fails the lease check), retry and
// redelivery counters reset, a missing cursor created; other groups are
// untouched, and parked pops of the queue wake. A large queue is moved in
// several writer ops with the meaning of one (seekqueue.go).
//
// It returns ErrQueueNotFound when the queue is unknown to the tenant or has
// no partitions, ErrPartitionNotFound when the named partition (or its
// queue) does not exist, ErrSnapshotNotFound when the snapshot is unknown or
// expired, and ErrInvalid wrapping the error of Target.Validate or Place,
// with nothing changed.
func (s *Store) Seek(ctx context.Context, tenant string, req combtype.SeekRequest) (*combtype.SeekResult, error) {
	if err := req.Target.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", combtype.ErrInvalid, err)
	}
	if req.Group == "" {
		req.Group = combtype.QueueModeGroup
	}
	if req.Partition == "" {
		return s.seekQueue(ctx, tenant, &req)
	}
	if req.DryRun {
		// A consistent read is enough: nothing is written.
		tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return nil, fmt.Errorf("begin read: %w", err)
		}
		defer tx.Rollback()
		res, _, err := resolveSeek(ctx, tx, micros(s.clock.Now()), tenant, &req)
		return res, err
	}
	s.seeks.serial.Lock()
	defer s.seeks.serial.Unlock()
	var res *combtype.SeekResult
	err := s.submit(ctx, &writeOp{isolated: true, apply: func(w *wtx) error {
		var err error
		var id int64
		res, id, err = resolveSeek(w.ctx, w.tx, micros(w.now), tenant, &req)
		if err != nil {
			return err
		}
		return w.applySeek(res, id, tenant)
	}})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// resolveSeek reads the state of the one partition req names and asks
// seek.Place where its cursor goes. id is the partition's row id.
func resolveSeek(ctx context.Context, db querier, now int64, tenant string, req *combtype.SeekRequest) (*combtype.SeekResult, int64, error) {
	q, err := getQueue(ctx, db, tenant, req.Queue)
	if err != nil {
		if errors.Is(err, combtype.ErrQueueNotFound) {
			return nil, 0, combtype.ErrPartitionNotFound
		}
		return nil, 0, err
	}
	res := &combtype.SeekResult{Queue: q.Name, Group: req.Group}
	var snapID int64
	if name := req.Target.Snapshot; name != "" {
		if snapID, res.Snapshot, err = seekSnapshot(ctx, db, tenant, name, now, q); err != nil {
			return nil, 0, err
		}
	}
	rows, err := seekStates(ctx, db, q.ID, req.Group, req.Partition, req.Target.Time)
	if err != nil {
		return nil, 0, err
	}
	if len(rows) == 0 {
		return nil, 0, combtype.ErrPartitionNotFound
	}
	p, st := &rows[0].part, &rows[0].state
	if snapID != 0 {
		var c int64
		err := db.QueryRowContext(ctx, `SELECT committed FROM snapshot_cursors WHERE snapshot_id = ? AND partition_uuid = ?`,
			snapID, p.UUID).Scan(&c)
		switch {
		case err == nil:
			st.Captured = &c
		case !errors.Is(err, sql.ErrNoRows):
			return nil, 0, fmt.Errorf("read the snapshot's cursor of partition %q: %w", p.Name, err)
		}
	}
	target := seek.Target{ToEnd: req.Target.ToEnd, Time: req.Target.Time, Offset: req.Target.Offset, Snapshot: req.Target.Snapshot}
	pl, err := seek.Place(target, st)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", combtype.ErrInvalid, err)
	}
	from := max(st.Committed, st.Floor())
	ps := combtype.PartitionSeek{
		Partition: p.Name, PartitionID: p.UUID, From: from, To: pl.Committed,
		Redeliver: max(0, from-pl.Committed), Skip: max(0, pl.Committed-from),
		Clamped: pl.Clamped, FramesEvicted: pl.FramesEvicted, OvershootBound: pl.OvershootBound,
		Created: !st.HasCursor,
	}
	res.Partitions = []combtype.PartitionSeek{ps}
	res.Totals.Add(ps)
	return res, p.ID, nil
}

// applySeek writes the placement of one partition, id.
func (w *wtx) applySeek(res *combtype.SeekResult, id int64, tenant string) error {
	q, err := w.queue(tenant, res.Queue, false)
	if err != nil {
		return err
	}
	if err := w.seekSubscribe(q.ID, res.Group); err != nil {
		return err
	}
	if err := w.moveCursors([]int64{id}, []int64{res.Partitions[0].To}, res.Group); err != nil {
		return err
	}
	if err := w.dropPendingSeeks(tenant, res.Queue, res.Group); err != nil {
		return err
	}
	// Parked pops of this queue look again now, so a backward seek starts
	// redelivering on the next poll instead of at the pop's timeout.
	w.touch(tenant, res.Queue)
	return nil
}

// moveCursors sets group's cursor on each partition ids[i] to tos[i]:
// any lease dropped, retry and redelivery counters reset, a missing
// cursor created.
func (w *wtx) moveCursors(ids, tos []int64, group string) error {
	now := micros(w.now)
	for i, to := range tos {
		if _, err := w.ExecContext(w.ctx, `INSERT INTO cursors (partition_id, group_name, committed, created_at)
			VALUES (?1, ?2, ?3, ?4)
			ON CONFLICT (partition_id, group_name) DO UPDATE SET committed = excluded.committed,
				lease_id = NULL, lease_from = NULL, lease_to = NULL, lease_expires_at = NULL,
				retry_count = 0, redelivery_count = 0`, ids[i], group, to, now); err != nil {
			return fmt.Errorf("move cursor of partition %d: %w", ids[i], err)
		}
	}
	return nil
}
