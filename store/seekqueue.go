package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/seek"
)

// A seek of a whole queue, in bounded writer ops. Moving a group's cursor
// on every partition of a queue in one op held the writer (every push,
// pop and ack of every queue) for as long as a million partitions take:
// 19 s for a seek to the end on a quiet machine, two minutes loaded, and
// 13-19 s for a seek to a snapshot or a time, which also read every
// partition's placement into memory at once (460-700 MB). Above
// seekChunkPartitions partitions the seek moves that many partitions per
// op and commit, and holds no more than one op's partitions in memory,
// with the meaning of one op kept:
//
//   - The end is fixed when the seek starts: the first op takes the
//     segment sequence (segSeq: every segment committed so far has an id at
//     most it, every later one above) and the queue's highest partition
//     id, and every partition up to that id is placed against its head at
//     that sequence (the end of its last segment with an id at most it),
//     as the subscriptions' registrations are (implied.go). A message
//     pushed while the seek runs is past that head: a seek to the end
//     neither skips it nor delivers it twice, and one to a time or a
//     snapshot, which lands at or below that head, delivers it once.
//     Partitions made after the start are not moved, as they would not
//     have been by one op at the start.
//   - The target is fixed too: a time and a snapshot's cursors do not
//     change (a snapshot a seek is applying is neither deleted nor
//     expired until it ends), and an offset is checked against every
//     partition in the first op, as one op would, so that a seek out of
//     range moves nothing. A later op finding the offset below what
//     retention has removed meanwhile raises it to the watermark (clamped).
//   - Until the last op, the group claims nothing on the queue (claim):
//     nothing published before the seek is handed out from a partition
//     not moved yet. Its pops find nothing due, and those parked wake at
//     the last op's commit.
//   - Seeks are serialized (seekMarks.serial), so two seeks of a group do
//     not interleave their partitions.
//   - The seek's progress is kept in settings, in each op's own commit: a
//     store closed or killed in the middle finishes the seek when it
//     opens again (resumeSeeks), before it serves anything, and its
//     group claims nothing on the queue until then. The request's context
//     does not cut a seek short once it has started.
//   - A seek whose op fails while the store runs (a full disk) returns
//     the error with the queue half moved; its progress stays in settings
//     and is finished at the next open, unless a later seek or a delete of
//     the group supersedes it (dropPendingSeeks).
//
// A queue of up to seekChunkPartitions partitions is sought in one op, a
// chunk at a time.

// seekChunkPartitions is how many partitions one op of a seek of a queue
// moves. At a million partitions, loaded (scripts/scale), pushes to
// another queue during a seek to the end waited 58 ms median, 2.1 s at
// worst, with 4,096, and 31 ms, 1.2 s at worst, with 1,024; the whole
// seek took about as long either way.
const seekChunkPartitions = 1024

// seekSettingPrefix keys a seek of a queue in progress in settings (the
// name is from when only seeks to the end were made in several ops), and
// groupDeleteSettingPrefix a group delete of a queue (groups.go): a
// version that knows only seeks does not take one for a seek to the end.
const (
	seekSettingPrefix        = "seek-to-end/"
	groupDeleteSettingPrefix = "group-delete/"
)

type seekKey struct {
	queueID int64
	group   string
}

// seekMarks are the (queue, group) pairs a seek of a queue is moving, and
// the snapshots such seeks are applying.
type seekMarks struct {
	serial sync.Mutex // held by every seek that writes
	n      atomic.Int32
	mu     sync.Mutex
	m      map[seekKey]int64 // the snapshot's id, 0 for other targets
}

// moving tells whether a seek of queueID by group is under way; a map
// read only while one is.
func (m *seekMarks) moving(queueID int64, group string) bool {
	if m.n.Load() == 0 {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.m[seekKey{queueID, group}]
	return ok
}

// applying tells whether a seek under way is applying the snapshot id.
func (m *seekMarks) applying(id int64) bool {
	if m.n.Load() == 0 {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, sn := range m.m {
		if sn == id {
			return true
		}
	}
	return false
}

// snapshots lists the snapshots seeks under way are applying.
func (m *seekMarks) snapshots() []int64 {
	if m.n.Load() == 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var ids []int64
	for _, sn := range m.m {
		if sn != 0 {
			ids = append(ids, sn)
		}
	}
	return ids
}

func (m *seekMarks) set(p *pendingSeek, on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[seekKey]int64{}
	}
	key := seekKey{p.ID, p.Group}
	_, was := m.m[key]
	switch {
	case on:
		m.m[key] = p.Snapshot
		if !was {
			m.n.Add(1)
		}
	case was:
		delete(m.m, key)
		m.n.Add(-1)
	}
}

// pendingSeek is a seek of a queue in progress, as settings keep it.
type pendingSeek struct {
	Tenant string `json:"tenant"`
	Queue  string `json:"queue"`
	UUID   string `json:"uuid"`
	ID     int64  `json:"id"`
	Group  string `json:"group"`
	// Seq is the segment sequence at the start, Max the highest partition
	// id then; After the highest partition id moved so far.
	Seq   int64 `json:"seq"`
	Max   int64 `json:"max"`
	After int64 `json:"after"`
	// The target: a time (microseconds), an offset, or a snapshot (its
	// row id and name); none is the end, as in the records of versions
	// that made only seeks to the end in several ops.
	Time         *int64 `json:"time,omitempty"`
	Offset       *int64 `json:"offset,omitempty"`
	Snapshot     int64  `json:"snapshot,omitempty"`
	SnapshotName string `json:"snapshotName,omitempty"`
	// Delete is a delete of the group's positions instead (groups.go),
	// DeleteMetadata its subscription's too.
	Delete         bool `json:"delete,omitempty"`
	DeleteMetadata bool `json:"deleteMetadata,omitempty"`
}

func (p *pendingSeek) key() string {
	prefix := seekSettingPrefix
	if p.Delete {
		prefix = groupDeleteSettingPrefix
	}
	return prefix + strconv.FormatInt(p.ID, 10) + "/" + p.Group
}

// target is what seek.Place is asked for p's partitions.
func (p *pendingSeek) target() seek.Target {
	switch {
	case p.Time != nil:
		t := fromMicros(*p.Time)
		return seek.Target{Time: &t}
	case p.Offset != nil:
		return seek.Target{Offset: p.Offset}
	case p.SnapshotName != "":
		return seek.Target{Snapshot: p.SnapshotName}
	}
	return seek.Target{ToEnd: true}
}

// chunkSize is the partitions one op of a seek of a queue moves.
func (s *Store) chunkSize() int {
	if s.seekChunk > 0 {
		return s.seekChunk
	}
	return seekChunkPartitions
}

// chunkLimit is the most partitions a queue can have for a seek, a
// snapshot or a group delete of it to be one op. Waves (claimwave.go)
// never serve a queue larger, so the claim is the one place that must
// hold back a group a seek or a delete is moving.
func (s *Store) chunkLimit() int {
	return max(s.chunkSize(), maxWavePartitions)
}

// largerThanAChunk tells whether queue queueID has more than limit
// partitions, reading at most limit+1 of them.
func largerThanAChunk(ctx context.Context, db querier, queueID int64, limit int) (bool, error) {
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM partitions WHERE queue_id = ? LIMIT ?)`,
		queueID, limit+1).Scan(&n); err != nil {
		return false, fmt.Errorf("size queue %d: %w", queueID, err)
	}
	return n > limit, nil
}

// seekList collects a seek's result: its totals, and the partitions it
// lists (at most list when list > 0).
type seekList struct {
	res  *combtype.SeekResult
	list int
}

func (l seekList) room() int {
	if l.list <= 0 {
		return -1
	}
	return max(0, l.list-len(l.res.Partitions))
}

func (l seekList) take(c seekStep) {
	l.res.Partitions = append(l.res.Partitions, c.moved...)
	addTotals(&l.res.Totals, c.totals)
}

// addTotals adds o to t.
func addTotals(t *combtype.SeekTotals, o combtype.SeekTotals) {
	t.Partitions += o.Partitions
	t.Moving += o.Moving
	t.Clamped += o.Clamped
	t.Redeliver += o.Redeliver
	t.Skip += o.Skip
	t.OvershootBound += o.OvershootBound
	t.FramesEvicted += o.FramesEvicted
}

// seekQueue is Seek for every partition of a queue: one op when the queue
// is small, else the chunked seek described above.
func (s *Store) seekQueue(ctx context.Context, tenant string, req *combtype.SeekRequest) (*combtype.SeekResult, error) {
	if req.DryRun {
		return s.seekQueueDry(ctx, tenant, req)
	}
	s.seeks.serial.Lock()
	defer s.seeks.serial.Unlock()
	var res *combtype.SeekResult
	var p *pendingSeek
	var c seekStep
	chunked := false
	err := s.submit(ctx, &writeOp{isolated: true, apply: func(w *wtx) error {
		res, p, c, chunked = nil, nil, seekStep{}, false
		var err error
		if res, p, err = beginSeek(w.ctx, w, tenant, req, w.s.segSeq, micros(w.now)); err != nil {
			return err
		}
		var n int
		limit := s.chunkLimit()
		if err := w.QueryRowContext(w.ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM partitions WHERE queue_id = ? LIMIT ?)`,
			p.ID, limit+1).Scan(&n); err != nil {
			return fmt.Errorf("size queue %q: %w", p.Queue, err)
		}
		if n == 0 {
			return combtype.ErrQueueNotFound
		}
		chunked = n > limit
		room := req.List
		if room <= 0 {
			room = -1
		}
		for {
			step, err := w.seekChunk(p, room, chunked)
			if err != nil {
				return err
			}
			c.merge(step)
			*p = step.next
			if room > 0 {
				room = max(0, room-len(step.moved))
			}
			if step.done || chunked {
				c.done = step.done
				return nil
			}
		}
	}})
	if err != nil {
		if p != nil {
			s.seeks.set(p, false)
		}
		return nil, err
	}
	out := seekList{res: res, list: req.List}
	out.take(c)
	if !c.done {
		// Begun: the rest runs to its end whatever becomes of the request.
		if _, err := s.finishSeek(context.WithoutCancel(ctx), p, out); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// seekQueueDry is seekQueue for a dry run: the same placements, read a
// chunk at a time in one read transaction, nothing written.
func (s *Store) seekQueueDry(ctx context.Context, tenant string, req *combtype.SeekRequest) (*combtype.SeekResult, error) {
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("begin read: %w", err)
	}
	defer tx.Rollback()
	// Past every segment's id: each partition's head is its last offset
	// in this read, as one op would see it.
	res, p, err := beginSeek(ctx, tx, tenant, req, math.MaxInt64, micros(s.clock.Now()))
	if err != nil {
		return nil, err
	}
	probes, done, err := landingProbes(ctx, tx)
	if err != nil {
		return nil, err
	}
	defer done()
	out := seekList{res: res, list: req.List}
	for {
		c, err := placeChunk(ctx, tx, probes, p, s.chunkSize(), out.room())
		if err != nil {
			return nil, err
		}
		out.take(c)
		if len(c.ids) < s.chunkSize() {
			return res, nil
		}
		p.After = c.ids[len(c.ids)-1]
	}
}

// beginSeek fixes what a seek of req.Queue places its partitions against:
// the segment sequence seq and the highest partition id now, and the
// target (a snapshot's row, checked to be of this queue; an offset,
// checked against every partition).
func beginSeek(ctx context.Context, db querier, tenant string, req *combtype.SeekRequest, seq, now int64) (*combtype.SeekResult, *pendingSeek, error) {
	q, err := getQueue(ctx, db, tenant, req.Queue)
	if err != nil {
		return nil, nil, err
	}
	res := &combtype.SeekResult{Queue: q.Name, Group: req.Group}
	p := &pendingSeek{Tenant: tenant, Queue: q.Name, UUID: q.UUID, ID: q.ID, Group: req.Group, Seq: seq}
	var top sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT MAX(id) FROM partitions WHERE queue_id = ?`, q.ID).Scan(&top); err != nil {
		return nil, nil, fmt.Errorf("read queue %q: %w", q.Name, err)
	}
	if !top.Valid {
		return nil, nil, combtype.ErrQueueNotFound
	}
	p.Max = top.Int64
	t := req.Target
	switch {
	case t.Time != nil:
		at := micros(*t.Time)
		p.Time = &at
	case t.Offset != nil:
		off := *t.Offset
		p.Offset = &off
		var e seek.OffsetError
		err := db.QueryRowContext(ctx, `SELECT name, log_start - 1, last_offset FROM partitions
			WHERE queue_id = ?1 AND (?2 < log_start - 1 OR ?2 > last_offset) ORDER BY id LIMIT 1`, q.ID, off).
			Scan(&e.Partition, &e.Floor, &e.Last)
		if err == nil {
			e.Offset = off
			return nil, nil, fmt.Errorf("%w: %w", combtype.ErrInvalid, &e)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return nil, nil, fmt.Errorf("check offset %d on queue %q: %w", off, q.Name, err)
		}
	case t.Snapshot != "":
		id, sn, err := seekSnapshot(ctx, db, tenant, t.Snapshot, now, q)
		if err != nil {
			return nil, nil, err
		}
		p.Snapshot, p.SnapshotName, res.Snapshot = id, sn.Name, sn
	}
	return res, p, nil
}

// seekSnapshot reads the snapshot named by a seek of q, without its
// cursors (a chunk reads its own): ErrSnapshotNotFound when there is no
// live one, ErrInvalid when it was taken on another queue. A queue deleted
// and recreated under the same name has new partition uuids: none
// matches, and every partition replays from the oldest retained message,
// like a partition created later.
func seekSnapshot(ctx context.Context, db querier, tenant, name string, now int64, q *combtype.Queue) (int64, *combtype.Snapshot, error) {
	id, sn, err := snapshotRow(ctx, db, tenant, name, now)
	if err != nil {
		return 0, nil, err
	}
	if sn.Queue != q.Name {
		return 0, nil, fmt.Errorf("%w: snapshot %q was taken on queue %q, not %q", combtype.ErrInvalid, sn.Name, sn.Queue, q.Name)
	}
	return id, sn, nil
}

// seekStep is what one op of a seek of a queue did, taken up by its
// caller once the op has committed: the writer may apply an op twice (a
// commit failed by a neighbour is retried op by op).
type seekStep struct {
	next   pendingSeek
	ids    []int64 // the partitions placed, listed or not
	tos    []int64 // where each goes
	moved  []combtype.PartitionSeek
	totals combtype.SeekTotals
	// removed counts the positions a group delete's chunk removed.
	removed int64
	done    bool
}

func (c *seekStep) merge(o seekStep) {
	c.moved = append(c.moved, o.moved...)
	addTotals(&c.totals, o.totals)
	c.removed += o.removed
}

// finishSeek runs the ops of p after its first until the seek is done,
// adding what they did to out (out.res nil: not kept); of a group delete,
// it returns the positions removed.
func (s *Store) finishSeek(ctx context.Context, p *pendingSeek, out seekList) (removed int64, err error) {
	defer s.seeks.set(p, false)
	for {
		var c seekStep
		err := s.submit(ctx, &writeOp{isolated: true, apply: func(w *wtx) error {
			room := -1
			if out.res != nil {
				room = out.room()
			}
			var err error
			c, err = w.seekChunk(p, room, true)
			return err
		}})
		if err != nil {
			return removed, fmt.Errorf("%s %q of queue %q: %w", p.what(), p.Group, p.Queue, err)
		}
		*p = c.next
		removed += c.removed
		if out.res != nil {
			out.take(c)
		}
		if s.seekChunkDone != nil {
			s.seekChunkDone()
		}
		if c.done {
			return removed, nil
		}
	}
}

// seekChunkQuery reads the next chunk of a seek of a queue: each
// partition's id, uuid, name, first kept offset, last offset and last
// segment's time, the group's committed offset (NULL when it has no
// position there), the partition's head at the seek's start (the end of
// its last segment with an id at most the segment sequence then; -1 when
// it had none or retention removed it), and the snapshot's cursor (NULL
// when the seek names no snapshot, ?7 = 0, or it has none there).
var seekChunkQuery = `SELECT p.id, p.uuid, p.name, p.log_start, p.last_offset, p.last_segment_at,
	CASE WHEN c.committed IS NOT NULL OR s.group_name IS NOT NULL THEN ` + committedExpr + ` END,
	` + headAtSeqExpr("?3") + `, sc.committed
	FROM partitions p
	LEFT JOIN cursors c ON c.partition_id = p.id AND c.group_name = ?1
	LEFT JOIN subscriptions s ON s.queue_id = p.queue_id AND s.group_name = ?1
	LEFT JOIN snapshot_cursors sc ON sc.snapshot_id = ?7 AND sc.partition_uuid = p.uuid
	WHERE p.queue_id = ?2 AND p.id > ?4 AND p.id <= ?5 ORDER BY p.id LIMIT ?6`

// placeChunk places the group's cursor on the next n partitions of p
// after p.After, listing at most room of them (room < 0: every one).
// probes answers the landing searches of a seek to a time.
func placeChunk(ctx context.Context, db, probes querier, p *pendingSeek, n, room int) (seekStep, error) {
	out := seekStep{next: *p}
	rows, err := db.QueryContext(ctx, seekChunkQuery, p.Group, p.ID, p.Seq, p.After, p.Max, n, p.Snapshot)
	if err != nil {
		return out, fmt.Errorf("read seek state: %w", err)
	}
	type placing struct {
		part combtype.Partition
		st   seek.State
	}
	var got []placing
	for rows.Next() {
		var r placing
		var committed, captured sql.NullInt64
		var head int64
		pt := &r.part
		if err := rows.Scan(&pt.ID, &pt.UUID, &pt.Name, &pt.LogStart, &pt.LastOffset, &pt.LastSegmentAt, &committed,
			&head, &captured); err != nil {
			rows.Close()
			return out, fmt.Errorf("scan seek state: %w", err)
		}
		r.st = seek.State{Name: pt.Name, LastOffset: head, LogStart: pt.LogStart, LastSegmentAt: pt.LastSegmentAt,
			HasCursor: committed.Valid, Committed: pt.LogStart - 1}
		if committed.Valid {
			r.st.Committed = committed.Int64
		}
		if captured.Valid {
			c := captured.Int64
			r.st.Captured = &c
		}
		got = append(got, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("read seek state: %w", err)
	}
	t := p.target()
	for i := range got {
		pt, st := &got[i].part, &got[i].st
		var pl seek.Placement
		switch {
		case p.Offset != nil:
			// Checked against every partition at the start; retention
			// may have passed it since.
			pl.Committed = *p.Offset
			if floor := st.Floor(); pl.Committed < floor {
				pl.Clamped, pl.FramesEvicted, pl.Committed = true, floor-pl.Committed, floor
			}
		default:
			if p.Time != nil {
				l, err := landing(ctx, probes, pt, *p.Time)
				if err != nil {
					return out, err
				}
				st.Landing = l.seg()
			}
			if pl, err = seek.Place(t, st); err != nil {
				return out, fmt.Errorf("%w: %w", combtype.ErrInvalid, err)
			}
		}
		to := max(pl.Committed, st.Floor())
		if t.ToEnd && st.HasCursor {
			// Past the head at the start already (an ack of the group
			// that came meanwhile): where one op at the start, then the
			// ack, would have left it.
			to = max(to, st.Committed)
		}
		from := max(st.Committed, st.Floor())
		ps := combtype.PartitionSeek{Partition: pt.Name, PartitionID: pt.UUID, From: from, To: to,
			Redeliver: max(0, from-to), Skip: max(0, to-from), Clamped: pl.Clamped, FramesEvicted: pl.FramesEvicted,
			OvershootBound: pl.OvershootBound, Created: !st.HasCursor}
		out.totals.Add(ps)
		out.ids, out.tos = append(out.ids, pt.ID), append(out.tos, to)
		if room != 0 {
			out.moved = append(out.moved, ps)
			room--
		}
	}
	if len(out.ids) > 0 {
		out.next.After = out.ids[len(out.ids)-1]
	}
	return out, nil
}

// seekChunk moves the group's cursor on the next chunk of p's partitions
// and, when persist, records the progress (or the end) in settings; it
// lists at most room of them (room < 0: every one). The pair is marked as
// moving until the op that ends the seek, which wakes the queue's parked
// pops.
func (w *wtx) seekChunk(p *pendingSeek, room int, persist bool) (seekStep, error) {
	out := seekStep{next: *p}
	var uuid string
	err := w.QueryRowContext(w.ctx, `SELECT uuid FROM queues WHERE id = ?`, p.ID).Scan(&uuid)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && uuid != p.UUID) {
		// The queue was deleted meanwhile, and its cursors with it.
		if _, err := w.ExecContext(w.ctx, `DELETE FROM settings WHERE key = ?`, p.key()); err != nil {
			return out, fmt.Errorf("end seek: %w", err)
		}
		w.s.seeks.set(p, false)
		out.done = true
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("read queue %q: %w", p.Queue, err)
	}
	w.s.seeks.set(p, true)
	if p.Delete {
		return w.groupDeleteChunk(p, persist)
	}
	// The writer's statements are prepared once: they answer the landing
	// searches as they are.
	out, err = placeChunk(w.ctx, w, w, p, w.s.chunkSize(), room)
	if err != nil {
		return out, err
	}
	if err := w.seekSubscribe(p.ID, p.Group); err != nil {
		return out, err
	}
	if err := w.moveCursors(out.ids, out.tos, p.Group); err != nil {
		return out, err
	}
	out.done = len(out.ids) < w.s.chunkSize()
	if out.done {
		if _, err := w.ExecContext(w.ctx, `DELETE FROM settings WHERE key = ?`, p.key()); err != nil {
			return out, fmt.Errorf("end seek: %w", err)
		}
		if err := w.dropPendingSeeks(p.Tenant, p.Queue, p.Group); err != nil {
			return out, err
		}
		w.s.seeks.set(p, false)
		w.touch(p.Tenant, p.Queue)
		return out, nil
	}
	if !persist {
		return out, nil
	}
	return out, w.recordSeek(&out.next)
}

// recordSeek keeps p's progress in settings.
func (w *wtx) recordSeek(p *pendingSeek) error {
	v, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("encode %s: %w", p.what(), err)
	}
	if _, err := w.ExecContext(w.ctx, `INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
		p.key(), string(v), micros(w.now)); err != nil {
		return fmt.Errorf("record %s: %w", p.what(), err)
	}
	return nil
}

// what names p in errors and logs.
func (p *pendingSeek) what() string {
	if p.Delete {
		return "delete of group"
	}
	return "seek"
}

// dropPendingSeeks forgets the unfinished seeks (and group deletes) of
// group on tenant's queue (every queue of tenant when queue is "") that a
// later seek or a delete of the group supersedes. Only a seek whose op failed
// while the store ran leaves one behind (a stop in the middle is finished
// at the next open, before anything is served), and that one would
// otherwise be finished at the next open over what came after it.
func (w *wtx) dropPendingSeeks(tenant, queue, group string) error {
	pending, err := readPendingSeeks(w.ctx, w)
	if err != nil {
		return err
	}
	for _, p := range pending {
		if p.Tenant != tenant || p.Group != group || (queue != "" && p.Queue != queue) {
			continue
		}
		if _, err := w.ExecContext(w.ctx, `DELETE FROM settings WHERE key = ?`, p.key()); err != nil {
			return fmt.Errorf("drop the unfinished seek of %q on queue %q: %w", group, p.Queue, err)
		}
	}
	return nil
}

// readPendingSeeks reads the seeks and group deletes left in settings.
func readPendingSeeks(ctx context.Context, db querier) ([]*pendingSeek, error) {
	rows, err := db.QueryContext(ctx, `SELECT value FROM settings WHERE (key >= ?1 AND key < ?2) OR (key >= ?3 AND key < ?4)`,
		seekSettingPrefix, seekSettingPrefix[:len(seekSettingPrefix)-1]+"0",
		groupDeleteSettingPrefix, groupDeleteSettingPrefix[:len(groupDeleteSettingPrefix)-1]+"0")
	if err != nil {
		return nil, fmt.Errorf("read seeks in progress: %w", err)
	}
	defer rows.Close()
	var todo []*pendingSeek
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("scan seek in progress: %w", err)
		}
		p := &pendingSeek{}
		if err := json.Unmarshal([]byte(v), p); err != nil {
			return nil, fmt.Errorf("decode seek in progress: %w", err)
		}
		todo = append(todo, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read seeks in progress: %w", err)
	}
	return todo, nil
}

// resumeSeeks finishes the seeks and group deletes a previous run of the
// store left in settings, before the store serves anything. One that cannot be
// finished now (a full disk) is logged and left for the next open: the
// store still opens, so that retention and deletes can make room.
func (s *Store) resumeSeeks(ctx context.Context) error {
	todo, err := readPendingSeeks(ctx, s.r)
	if err != nil {
		return err
	}
	for _, p := range todo {
		s.seeks.set(p, true)
		s.log.Info("finishing a "+p.what()+" cut short", "queue", p.Queue, "group", p.Group)
		if _, err := s.finishSeek(ctx, p, seekList{}); err != nil {
			s.log.Warn("a "+p.what()+" cut short is left for the next start", "queue", p.Queue, "group", p.Group,
				"err", err)
		}
	}
	return nil
}
