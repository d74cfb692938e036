package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/seek"
)

// A seek to the end of a whole queue, in bounded writer ops. Moving a
// group's cursor on every partition of a queue in one op held the writer
// (every push, pop and ack of every queue) for as long as a million
// partitions take: 19 s on a quiet machine, two minutes loaded. Above
// seekChunkPartitions partitions the seek moves that many partitions per
// op and commit, with the meaning of one op kept:
//
//   - The end is fixed when the seek starts: the first op takes the
//     segment sequence (segSeq: every segment committed so far has an id at
//     most it, every later one above) and the queue's highest partition
//     id, and every partition up to that id is moved to its head at that
//     sequence (the end of its last segment with an id at most it), as
//     the subscriptions' registrations are (implied.go). A message pushed
//     while the seek runs is past that head: it is neither skipped nor
//     delivered twice. Partitions made after the start are not moved, as
//     they would not have been by one op at the start.
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

// seekChunkPartitions is how many partitions one op of a seek to the end
// moves. At a million partitions, loaded (scripts/scale), pushes to
// another queue during the seek waited 58 ms median, 2.1 s at worst, with
// 4,096, and 31 ms, 1.2 s at worst, with 1,024; the whole seek took about
// as long either way.
const seekChunkPartitions = 1024

// seekSettingPrefix keys a seek to the end in progress in settings.
const seekSettingPrefix = "seek-to-end/"

type seekKey struct {
	queueID int64
	group   string
}

// seekMarks are the (queue, group) pairs a seek to the end is moving.
type seekMarks struct {
	serial sync.Mutex // held by every seek that writes
	n      atomic.Int32
	mu     sync.Mutex
	m      map[seekKey]bool
}

// moving tells whether a seek to the end of queueID by group is under way;
// a map read only while one is.
func (m *seekMarks) moving(queueID int64, group string) bool {
	if m.n.Load() == 0 {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.m[seekKey{queueID, group}]
}

func (m *seekMarks) set(k seekKey, on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[seekKey]bool{}
	}
	switch {
	case on && !m.m[k]:
		m.m[k] = true
		m.n.Add(1)
	case !on && m.m[k]:
		delete(m.m, k)
		m.n.Add(-1)
	}
}

// pendingSeek is a seek to the end in progress, as settings keep it.
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
}

func (p *pendingSeek) key() string {
	return seekSettingPrefix + strconv.FormatInt(p.ID, 10) + "/" + p.Group
}

// chunkSize is the partitions one op of a seek to the end moves.
func (s *Store) chunkSize() int {
	if s.seekChunk > 0 {
		return s.seekChunk
	}
	return seekChunkPartitions
}

// seekToEnd is Seek for a seek to the end of a whole queue: one op when
// the queue is small, else the chunked seek described above.
func (s *Store) seekToEnd(ctx context.Context, tenant string, req *combtype.SeekRequest) (*combtype.SeekResult, error) {
	s.seeks.serial.Lock()
	defer s.seeks.serial.Unlock()
	var res *combtype.SeekResult
	var p *pendingSeek
	var c seekStep
	err := s.submit(ctx, &writeOp{isolated: true, apply: func(w *wtx) error {
		res, p, c = nil, nil, seekStep{}
		q, err := getQueue(w.ctx, w.tx, tenant, req.Queue)
		if err != nil {
			return err
		}
		var n int
		// Waves (claimwave.go) never serve a queue this large, so the
		// claim is the one place that must hold back the group's claims.
		limit := max(s.chunkSize(), maxWavePartitions)
		if err := w.QueryRowContext(w.ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM partitions WHERE queue_id = ? LIMIT ?)`,
			q.ID, limit+1).Scan(&n); err != nil {
			return fmt.Errorf("size queue %q: %w", q.Name, err)
		}
		if n <= limit {
			var ids []int64
			if res, ids, err = resolveSeek(w.ctx, w.tx, micros(w.now), tenant, req); err != nil {
				return err
			}
			return w.applySeek(res, ids, tenant)
		}
		if p, err = w.beginSeek(tenant, q, req.Group); err != nil {
			return err
		}
		res = &combtype.SeekResult{Queue: q.Name, Group: req.Group}
		c, err = w.seekChunk(p)
		return err
	}})
	if err != nil {
		if p != nil {
			s.seeks.set(seekKey{p.ID, p.Group}, false)
		}
		return nil, err
	}
	if p == nil {
		return res, nil
	}
	*p = c.next
	res.Partitions = append(res.Partitions, c.moved...)
	if !c.done {
		// Begun: the rest runs to its end whatever becomes of the request.
		if err := s.finishSeek(context.WithoutCancel(ctx), p, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// beginSeek fixes the end of a chunked seek of q by group: the segment
// sequence and the highest partition id now.
func (w *wtx) beginSeek(tenant string, q *combtype.Queue, group string) (*pendingSeek, error) {
	p := &pendingSeek{Tenant: tenant, Queue: q.Name, UUID: q.UUID, ID: q.ID, Group: group, Seq: w.s.segSeq}
	if err := w.QueryRowContext(w.ctx, `SELECT MAX(id) FROM partitions WHERE queue_id = ?`, q.ID).Scan(&p.Max); err != nil {
		return nil, fmt.Errorf("read queue %q: %w", q.Name, err)
	}
	return p, nil
}

// seekStep is what one op of a seek to the end did, taken up by its
// caller once the op has committed: the writer may apply an op twice (a
// commit failed by a neighbour is retried op by op).
type seekStep struct {
	next  pendingSeek
	moved []combtype.PartitionSeek
	done  bool
}

// finishSeek runs the ops of p after its first until the seek is done,
// adding the partitions moved to res (nil: not kept).
func (s *Store) finishSeek(ctx context.Context, p *pendingSeek, res *combtype.SeekResult) error {
	defer s.seeks.set(seekKey{p.ID, p.Group}, false)
	for {
		var c seekStep
		err := s.submit(ctx, &writeOp{isolated: true, apply: func(w *wtx) error {
			var err error
			c, err = w.seekChunk(p)
			return err
		}})
		if err != nil {
			return fmt.Errorf("seek %q of queue %q to the end: %w", p.Group, p.Queue, err)
		}
		*p = c.next
		if res != nil {
			res.Partitions = append(res.Partitions, c.moved...)
		}
		if s.seekChunkDone != nil {
			s.seekChunkDone()
		}
		if c.done {
			return nil
		}
	}
}

// seekChunkQuery reads the next chunk of a seek to the end: each
// partition's id, uuid, name and first kept offset, the group's committed
// offset (NULL when it has no position there) and the partition's head at
// the seek's start (the end of its last segment with an id at most the
// segment sequence then; -1 when it had none or retention removed it).
var seekChunkQuery = `SELECT p.id, p.uuid, p.name, p.log_start,
	CASE WHEN c.committed IS NOT NULL OR s.group_name IS NOT NULL THEN ` + committedExpr + ` END,
	` + headAtSeqExpr("?3") + `
	FROM partitions p
	LEFT JOIN cursors c ON c.partition_id = p.id AND c.group_name = ?1
	LEFT JOIN subscriptions s ON s.queue_id = p.queue_id AND s.group_name = ?1
	WHERE p.queue_id = ?2 AND p.id > ?4 AND p.id <= ?5 ORDER BY p.id LIMIT ?6`

// seekChunk moves the group's cursor on the next chunk of p's partitions
// to their heads at p.Seq and records the progress (or the end) in
// settings. The pair is marked as moving until the op that ends the seek,
// which wakes the queue's parked pops.
func (w *wtx) seekChunk(p *pendingSeek) (seekStep, error) {
	out := seekStep{next: *p}
	k := seekKey{p.ID, p.Group}
	var uuid string
	err := w.QueryRowContext(w.ctx, `SELECT uuid FROM queues WHERE id = ?`, p.ID).Scan(&uuid)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && uuid != p.UUID) {
		// The queue was deleted meanwhile, and its cursors with it.
		if _, err := w.ExecContext(w.ctx, `DELETE FROM settings WHERE key = ?`, p.key()); err != nil {
			return out, fmt.Errorf("end seek: %w", err)
		}
		w.s.seeks.set(k, false)
		out.done = true
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("read queue %q: %w", p.Queue, err)
	}
	w.s.seeks.set(k, true)
	rows, err := w.QueryContext(w.ctx, seekChunkQuery,
		p.Group, p.ID, p.Seq, p.After, p.Max, w.s.chunkSize())
	if err != nil {
		return out, fmt.Errorf("read seek state: %w", err)
	}
	var ids []int64
	for rows.Next() {
		var id, logStart, head int64
		var ps combtype.PartitionSeek
		var committed sql.NullInt64
		if err := rows.Scan(&id, &ps.PartitionID, &ps.Partition, &logStart, &committed, &head); err != nil {
			rows.Close()
			return out, fmt.Errorf("scan seek state: %w", err)
		}
		st := seek.State{Name: ps.Partition, LastOffset: head, LogStart: logStart, HasCursor: committed.Valid,
			Committed: logStart - 1}
		if committed.Valid {
			st.Committed = committed.Int64
		}
		pl, err := seek.Place(seek.Target{ToEnd: true}, &st)
		if err != nil {
			rows.Close()
			return out, fmt.Errorf("%w: %w", combtype.ErrInvalid, err)
		}
		// Past the head at the start already (an ack of the group that
		// came meanwhile): where one op at the start, then the ack, would
		// have left it.
		to := max(pl.Committed, st.Floor())
		if st.HasCursor {
			to = max(to, st.Committed)
		}
		from := max(st.Committed, st.Floor())
		ps.From, ps.To, ps.Redeliver, ps.Skip, ps.Created = from, to, max(0, from-to), max(0, to-from), !st.HasCursor
		out.moved, ids = append(out.moved, ps), append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("read seek state: %w", err)
	}
	if err := w.moveCursors(out.moved, ids, p.Group); err != nil {
		return out, err
	}
	if len(ids) > 0 {
		out.next.After = ids[len(ids)-1]
	}
	out.done = len(ids) < w.s.chunkSize()
	if out.done {
		if _, err := w.ExecContext(w.ctx, `DELETE FROM settings WHERE key = ?`, p.key()); err != nil {
			return out, fmt.Errorf("end seek: %w", err)
		}
		w.s.seeks.set(k, false)
		w.touch(p.Tenant, p.Queue)
		return out, nil
	}
	v, err := json.Marshal(&out.next)
	if err != nil {
		return out, fmt.Errorf("encode seek: %w", err)
	}
	if _, err := w.ExecContext(w.ctx, `INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
		p.key(), string(v), micros(w.now)); err != nil {
		return out, fmt.Errorf("record seek: %w", err)
	}
	return out, nil
}

// dropPendingSeeks forgets the unfinished seeks to the end of group on
// tenant's queue (every queue of tenant when queue is "") that a later
// seek or a delete of the group supersedes. Only a seek whose op failed
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

// readPendingSeeks reads the seeks to the end left in settings.
func readPendingSeeks(ctx context.Context, db querier) ([]*pendingSeek, error) {
	rows, err := db.QueryContext(ctx, `SELECT value FROM settings WHERE key >= ? AND key < ?`,
		seekSettingPrefix, seekSettingPrefix[:len(seekSettingPrefix)-1]+"0")
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

// resumeSeeks finishes the seeks to the end a previous run of the store
// left in settings, before the store serves anything. One that cannot be
// finished now (a full disk) is logged and left for the next open: the
// store still opens, so that retention and deletes can make room.
func (s *Store) resumeSeeks(ctx context.Context) error {
	todo, err := readPendingSeeks(ctx, s.r)
	if err != nil {
		return err
	}
	for _, p := range todo {
		s.seeks.set(seekKey{p.ID, p.Group}, true)
		s.log.Info("finishing a seek to the end cut short", "queue", p.Queue, "group", p.Group)
		if err := s.finishSeek(ctx, p, nil); err != nil {
			s.log.Warn("a seek to the end cut short is left for the next start", "queue", p.Queue, "group", p.Group,
				"err", err)
		}
	}
	return nil
}
