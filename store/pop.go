package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/seek"
)

// candidate is a partition a pop may claim, with the group's cursor on it.
type candidate struct {
	part      combtype.Partition
	hasCursor bool // false: no row yet, committed is what the subscription implies
	cursor
}

// next is the first offset the group still wants (see nextOffset).
func (c *candidate) next() int64 { return nextOffset(c.committed, c.part.LogStart) }

// scanCandidates returns at most limit (all for limit < 0) of the
// partitions of queue that are due for group: those with something pending
// past the cursor and no live lease. A partition the group has no cursor
// row on is read at the position its subscription implies (implied.go),
// and is due when something is pending past it; hasCursor tells the claim
// to write the row. It walks partitions in name order
// starting after the name given, wrapping around, through the (queue_id,
// name) index, so with many partitions it stops as soon as it has found
// limit due ones instead of reading them all; callers rotate the starting
// name so every partition gets its turn. A group that could have something
// due on few partitions only (dueSuspects) has those read instead, so one
// with nothing due does not walk the queue to find that out.
//
// walks count the walks of the whole queue it makes.
func scanCandidates(ctx context.Context, db querier, queueID int64, group, partition string, now int64, limit int, after string,
	walks ...*atomic.Int64) ([]candidate, error) {
	var out []candidate
	scan := func(q string, limit int, args ...any) error {
		return scanRows(ctx, db, &out, group, q, limit, args...)
	}
	if partition != "" {
		return out, scan(scanColumns+scanPartitions+scanDue+` AND p.name = ?4`, -1, group, queueID, now, partition)
	}
	suspects, few, err := dueSuspects(ctx, db, queueID, group)
	if err != nil {
		return nil, err
	}
	if few {
		// Few partitions could have something for the group: read those
		// alone, and take the turn in name order here.
		if err := scan(scanColumns+scanSuspects+scanDue, -1, group, queueID, now, jsonInts(suspects)); err != nil {
			return nil, err
		}
		slices.SortFunc(out, func(a, b candidate) int { return strings.Compare(a.part.Name, b.part.Name) })
		i, _ := slices.BinarySearchFunc(out, after, func(c candidate, name string) int {
			return strings.Compare(c.part.Name, name+"\x00")
		})
		out = append(out[i:len(out):len(out)], out[:i]...)
		if limit >= 0 && len(out) > limit {
			out = out[:limit]
		}
		return out, nil
	}
	for _, n := range walks {
		n.Add(1)
	}
	cols := scanColumns + scanPartitions + scanDue
	if after == "" {
		// No turn to start after (a group's first pops): one walk in name
		// order covers what the two below would, with one statement
		// instead of two for every claim of a wave of new groups.
		return out, scan(cols+` ORDER BY p.name`, limit, group, queueID, now)
	}
	if err := scan(cols+` AND p.name > ?4 ORDER BY p.name`, limit, group, queueID, now, after); err != nil {
		return nil, err
	}
	if limit >= 0 && len(out) >= limit {
		return out, nil
	}
	rest := -1
	if limit >= 0 {
		rest = limit - len(out)
	}
	return out, scan(cols+` AND p.name <= ?4 ORDER BY p.name`, rest, group, queueID, now, after)
}

// scanRows appends to out the candidates the claim scan q finds, at most
// limit (< 0: all). The limit is applied here rather than by LIMIT ?:
// SQLite reads a bound LIMIT while planning, so rebinding it expires the
// cached statement and every pop would compile the scan again. Rows come
// in p.name order from the (queue_id, name) index, so stopping early reads
// no more than LIMIT.
func scanRows(ctx context.Context, db querier, out *[]candidate, group, q string, limit int, args ...any) error {
	if limit == 0 {
		return nil
	}
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("scan partitions: %w", err)
	}
	defer rows.Close()
	for n := 0; (limit < 0 || n < limit) && rows.Next(); n++ {
		var c candidate
		var created int64
		p := &c.part
		if err := rows.Scan(&p.ID, &p.UUID, &p.QueueID, &p.Name, &p.LastOffset, &p.LogStart, &p.LastSegmentAt, &created,
			&c.hasCursor, &c.committed, &c.leaseID, &c.leaseExpires, &c.retry); err != nil {
			return fmt.Errorf("scan partition: %w", err)
		}
		p.CreatedAt = fromMicros(created)
		c.partitionID, c.group = p.ID, group
		*out = append(*out, c)
	}
	return rows.Err()
}

// lastSegmentOf is the highest segment id of queue's partitions (0 when it
// has none): every segment a read made after this one finds past it is
// new since.
func lastSegmentOf(ctx context.Context, db querier, queueID int64) (int64, error) {
	var seg int64
	if err := db.QueryRowContext(ctx, `SELECT COALESCE(MAX(last_segment_id), 0) FROM partitions INDEXED BY partitions_queue_last_segment
		WHERE queue_id = ?`, queueID).Scan(&seg); err != nil {
		return 0, fmt.Errorf("read the queue's last segment: %w", err)
	}
	return seg, nil
}

// suspectsSince is changed with the partitions of queue written past
// segment seg, sorted and each once; ok is false when they are more than
// maxSuspects (a walk reads them then).
func suspectsSince(ctx context.Context, db querier, queueID, seg int64, changed []int64) (ids []int64, ok bool, err error) {
	rows, err := db.QueryContext(ctx, `SELECT id FROM partitions INDEXED BY partitions_queue_last_segment
		WHERE queue_id = ? AND last_segment_id > ?`, queueID, seg)
	if err != nil {
		return nil, false, fmt.Errorf("list partitions written since: %w", err)
	}
	defer rows.Close()
	ids = changed
	for rows.Next() && len(ids) <= maxSuspects {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, false, fmt.Errorf("scan partition written since: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("list partitions written since: %w", err)
	}
	if len(ids) > maxSuspects {
		return nil, false, nil
	}
	slices.Sort(ids)
	return slices.Compact(ids), true, nil
}

// dueSinceMark answers a pop of a whole queue from mk, the mark of a walk
// that found nothing due for group, when only new segments and the
// partitions changed for the group alone can have made something due
// since (idle.go): it reads those partitions and whether any of them is
// due. ok is false when they are too many to
// read so (the pop walks); due lists the due ones, and wake is when a
// lease over pending data expires. The mark is renewed with the due ones.
func (s *Store) dueSinceMark(ctx context.Context, k idleKey, mk idleMark, changed []int64, seq int64, since idleSince, now int64) (due []int64, wake time.Time, ok bool, err error) {
	if since.seg, err = lastSegmentOf(ctx, s.r, k.queue); err != nil {
		return nil, time.Time{}, false, err
	}
	ids, ok, err := suspectsSince(ctx, s.r, k.queue, mk.since.seg, append(changed, mk.due...))
	if err != nil || !ok {
		return nil, time.Time{}, false, err
	}
	wake = mk.wake
	if len(ids) > 0 {
		var got []candidate
		if err := scanRows(ctx, s.r, &got, k.group, scanColumns+scanSuspects+scanDue, -1, k.group, k.queue, now, jsonInts(ids)); err != nil {
			return nil, time.Time{}, false, err
		}
		for _, c := range got {
			due = append(due, c.part.ID)
		}
		slices.Sort(due)
		// A lease the group took since on one of them ends its answer.
		lw, err := leaseWakeAmong(ctx, s.r, k.queue, k.group, now, ids)
		if err != nil {
			return nil, time.Time{}, false, err
		}
		wake = earliest(wake, lw)
	}
	// Renewed, with what is due now: kept only while nothing was due, a
	// mark under a steady trickle of pushes went on counting what was
	// written since, and past maxSuspects every pop walked the queue.
	s.idle.mark(k, seq, wake, since, mk.at, due)
	if len(due) > 0 {
		return due, time.Time{}, true, nil
	}
	return nil, wake, true, nil
}

// The parts of the claim scan: its columns; the partitions it reads, all
// of the queue in name order or (scanSuspects) those listed in ?4; and
// which of them are due.
var (
	scanColumns = `SELECT p.id, p.uuid, p.queue_id, p.name, p.last_offset, p.log_start, p.last_segment_at, p.created_at,
		c.committed IS NOT NULL, ` + committedExpr + `, c.lease_id, c.lease_expires_at, COALESCE(c.retry_count, 0)`
	scanPartitions = ` FROM partitions p`
	scanSuspects   = ` FROM json_each(?4) j CROSS JOIN partitions p ON p.id = j.value`
	scanDue        = ` LEFT JOIN cursors c ON c.partition_id = p.id AND c.group_name = ?1
		LEFT JOIN subscriptions s ON s.queue_id = p.queue_id AND s.group_name = ?1
		WHERE p.queue_id = ?2 AND ` + mayBePendingExpr + ` AND ` + groupPendingExpr + `
			AND (c.committed IS NULL OR NOT (` + liveLeaseAt + `?3))`
)

// maxSuspects is the most partitions dueSuspects lists; past it the claim
// scan walks the queue, where it stops at the first due partitions.
const maxSuspects = 128

// dueSuspects lists the partitions of queue that could have something due
// for group, when that is told from indexes and they are at most
// maxSuspects (few). It is so for a group subscribed to new messages, or
// from a time, since lazy cursors (store/implied.go): mayBePendingExpr is
// false on every other partition. The candidates are its cursor rows, the
// partitions created after it subscribed, those written since
// (last_segment_id past start_seq, through partitions_queue_last_segment)
// and, from a time, those written from that time until it subscribed
// (segments_time); created_at never decreases within a partition, so a
// partition whose newest segment is at or after the time has one there.
// A group that has nothing due then reads few rows, not every partition.
func dueSuspects(ctx context.Context, db querier, queueID int64, group string) ([]int64, bool, error) {
	rows, err := db.QueryContext(ctx, `SELECT -1 WHERE NOT EXISTS (SELECT 1 FROM subscriptions s
			WHERE s.queue_id = ?2 AND s.group_name = ?1 AND s.start_seq IS NOT NULL AND s.start_mode IN ('new', 'timestamp'))
		UNION ALL SELECT c.partition_id FROM cursors c INDEXED BY cursors_group CROSS JOIN partitions p ON p.id = c.partition_id
			WHERE c.group_name = ?1 AND p.queue_id = ?2
		UNION ALL SELECT p.id FROM subscriptions s CROSS JOIN partitions p INDEXED BY partitions_queue_id
			ON p.queue_id = s.queue_id AND p.id > s.start_partition
			WHERE s.queue_id = ?2 AND s.group_name = ?1
		UNION ALL SELECT p.id FROM subscriptions s CROSS JOIN partitions p INDEXED BY partitions_queue_last_segment
			ON p.queue_id = s.queue_id AND p.last_segment_id > s.start_seq
			WHERE s.queue_id = ?2 AND s.group_name = ?1
		UNION ALL SELECT g.partition_id FROM subscriptions s CROSS JOIN segments g INDEXED BY segments_time
			ON g.created_at >= s.start_from AND g.id <= s.start_seq
			CROSS JOIN partitions p ON p.id = g.partition_id
			WHERE s.queue_id = ?2 AND s.group_name = ?1 AND s.start_mode = 'timestamp' AND p.queue_id = ?2`, group, queueID)
	if err != nil {
		return nil, false, fmt.Errorf("list partitions that may be due: %w", err)
	}
	defer rows.Close()
	seen := map[int64]bool{}
	var ids []int64
	for n := 0; rows.Next(); n++ {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, false, fmt.Errorf("scan partition that may be due: %w", err)
		}
		if id < 0 || n == maxSuspects {
			return nil, false, nil
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("list partitions that may be due: %w", err)
	}
	return ids, true, nil
}

// leaseWakeAmong is leaseWake over the partitions ids of queue only.
func leaseWakeAmong(ctx context.Context, db querier, queueID int64, group string, now int64, ids []int64) (time.Time, error) {
	var at sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT MIN(c.lease_expires_at) FROM json_each(?4) j CROSS JOIN partitions p ON p.id = j.value
		JOIN cursors c ON c.partition_id = p.id AND c.group_name = ?1
		WHERE p.queue_id = ?2 AND `+liveLeaseAt+`?3 AND `+pendingExpr, group, queueID, now, jsonInts(ids)).Scan(&at); err != nil {
		return time.Time{}, fmt.Errorf("find lease expiry: %w", err)
	}
	if !at.Valid {
		return time.Time{}, nil
	}
	return fromMicros(at.Int64), nil
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

// popReq is a pop as the store runs it: the request, its tenant, and where
// a group that never met the queue starts.
type popReq struct {
	combtype.PopRequest
	Tenant string
	Start  seek.Subscription
	// suspects, when not nil, are the only partitions a pop's idle mark
	// says can be due (idle.go): the claim reads those first, not the
	// queue's partitions in turn until it has found enough, which at a
	// million partitions held the writer for seconds.
	suspects []int64
	// handed is a claim the writer makes for a parked pop (handed.go).
	handed bool
}

// popQueues resolves the queues a pop may serve, highest priority first,
// and, for a pop of one queue, whether the group has a subscription on it,
// read in the same statement: each woken pop of a wave makes it.
func (s *Store) popQueues(ctx context.Context, req *popReq) ([]*combtype.Queue, []bool, error) {
	if req.Queue != "" {
		var q combtype.Queue
		var created int64
		var subscribed bool
		err := s.r.QueryRowContext(ctx, `SELECT `+queueColumns+`,
			EXISTS (SELECT 1 FROM subscriptions s WHERE s.queue_id = queues.id AND s.group_name = ?3)
			FROM queues WHERE tenant = ?1 AND name = ?2`, req.Tenant, req.Queue, req.Group).
			Scan(append(queueDest(&q, &created), &subscribed)...)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, nil, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("get queue %q: %w", req.Queue, err)
		}
		q.CreatedAt = fromMicros(created)
		return []*combtype.Queue{&q}, []bool{subscribed}, nil
	}
	// A namespace's or task's queues are read a page at a time as the pop
	// comes to them (popQueuePage).
	return nil, nil, nil
}

// popQueuePageSize is how many queues of a namespace or task a pop reads
// at a time.
const popQueuePageSize = 256

// queuePageKey is where a page of queues starts: after the queue of this
// priority and id, in the order pops take them (unset: from the first).
type queuePageKey struct {
	priority int64
	id       int64
	set      bool
}

// popQueuePage reads the next page of the queues of req's namespace or
// task after after, highest priority first. The subscriptions of a
// namespace's queues are looked up as the pop comes to each: it stops at
// the first that has messages.
//
// Each page is read through the index of its namespace (or task) in that
// order, the rest of its priority after the key and then the lower
// priorities, so that a page costs what it holds, not what came before it.
func (s *Store) popQueuePage(ctx context.Context, req *popReq, after queuePageKey) ([]queuePageKey, error) {
	stmts := popPageByNamespace
	if req.Namespace == "" {
		stmts = popPageByTask
	}
	q := stmts.first
	if after.set {
		q = stmts.after
	}
	rows, err := s.r.QueryContext(ctx, q, req.Tenant, req.Namespace, req.Task, after.priority, after.id, popQueuePageSize)
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	defer rows.Close()
	var page []queuePageKey
	for rows.Next() {
		k := queuePageKey{set: true}
		if err := rows.Scan(&k.id, &k.priority); err != nil {
			return nil, fmt.Errorf("list queues: %w", err)
		}
		page = append(page, k)
	}
	return page, rows.Err()
}

// queuesByID reads the queues of ids, in the order of ids.
func (s *Store) queuesByID(ctx context.Context, ids []int64) ([]*combtype.Queue, error) {
	got, err := listQueues(ctx, s.r, `SELECT `+queueColumns+` FROM queues WHERE id IN (SELECT value FROM json_each(?1))`, jsonInts(ids))
	if err != nil {
		return nil, err
	}
	at := make(map[int64]int, len(ids))
	for i, id := range ids {
		at[id] = i
	}
	slices.SortFunc(got, func(a, b *combtype.Queue) int { return at[a.ID] - at[b.ID] })
	return got, nil
}

// popPageQueries are the statements of popQueuePage, for a namespace
// (the task, if also named, filtered on it) or a task alone.
type popPageQueries struct{ first, after string }

var (
	popPageByNamespace = popPageStatements("namespace", "?2", "(?3 = '' OR task = ?3)")
	popPageByTask      = popPageStatements("task", "?3", "(?2 = '' OR namespace = ?2)")
)

func popPageStatements(col, param, also string) popPageQueries {
	page := func(where, order string) string {
		return `SELECT id, priority FROM queues
			WHERE tenant = ?1 AND ` + col + ` = ` + param + ` AND ` + also + ` AND ` + where + `
			ORDER BY ` + order + ` LIMIT ?6`
	}
	return popPageQueries{
		first: page("1", "priority DESC, id"),
		after: `SELECT * FROM (` + page("priority = ?4 AND id > ?5", "id") + `)
			UNION ALL SELECT * FROM (` + page("priority < ?4", "priority DESC, id") + `)
			ORDER BY priority DESC, id LIMIT ?6`,
	}
}

// maxPrefilterPartitions is the most partitions of a queue mayHaveFor
// reads; a queue with more is tried as it is, where the claim scan's own
// shortcuts (dueSuspects, idle marks) keep a walk of it cheap.
const maxPrefilterPartitions = 64

// mayHaveFor tells which of the queues ids, read for a pop of a namespace or
// task, may have something for req's group, in one statement for all of
// them: those the group has no subscription on (the pop subscribes it),
// those with more than maxPrefilterPartitions partitions, and those with
// a partition holding messages past the group's position, leased or not
// (scanCandidates' partitions are among these). A pop of a namespace read
// each queue with a statement or four of its own: 88 ms for 2,000 queues
// with nothing for it (BenchmarkNamespaceWalk).
// The value is true for a queue the group has no subscription on.
func (s *Store) mayHaveFor(ctx context.Context, req *popReq, ids []int64) (map[int64]bool, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT j.value, NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.queue_id = j.value AND s.group_name = ?2)
		FROM json_each(?1) j
		WHERE NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.queue_id = j.value AND s.group_name = ?2)
			OR (SELECT COUNT(*) FROM (SELECT 1 FROM partitions p WHERE p.queue_id = j.value LIMIT ?3)) >= ?3
			OR EXISTS (SELECT 1 FROM partitions p
				LEFT JOIN cursors c ON c.partition_id = p.id AND c.group_name = ?2
				LEFT JOIN subscriptions s ON s.queue_id = p.queue_id AND s.group_name = ?2
				WHERE p.queue_id = j.value AND `+mayBePendingExpr+` AND `+groupPendingExpr+`)`,
		jsonInts(ids), req.Group, maxPrefilterPartitions+1)
	if err != nil {
		return nil, fmt.Errorf("find queues with messages for the group: %w", err)
	}
	defer rows.Close()
	may := make(map[int64]bool, len(ids))
	for rows.Next() {
		var id int64
		var unsubscribed bool
		if err := rows.Scan(&id, &unsubscribed); err != nil {
			return nil, fmt.Errorf("find queues with messages for the group: %w", err)
		}
		may[id] = unsubscribed
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("find queues with messages for the group: %w", err)
	}
	return may, nil
}

// subscribeFirst subscribes req's group, in one commit, to those of
// queues it has no subscription on (unsubscribed in may) before a pop of
// their namespace or task tries them. Tried one by one, each was a claim
// of its own through the writer, durable since it subscribes: a new
// group's first pop of a namespace of 2,000 queues was 2,000 commits, and
// 100 new groups took 29-44 s to park. A group subscribing to new
// messages is subscribed to the whole page of queues at its first
// contact with them, not to each as a walk reaches it, so the messages
// pushed to a queue after the group's first pop of its namespace are the
// group's.
// It reports whether it subscribed the group to any, and adds to made
// the queues whose subscription it wrote.
func (s *Store) subscribeFirst(ctx context.Context, req *popReq, queues []*combtype.Queue, may map[int64]bool, made *[]int64) (bool, error) {
	var news []*combtype.Queue
	for _, q := range queues {
		if may[q.ID] && !s.subs.has(subKey{req.Tenant, q.Name, req.Group}) {
			news = append(news, q)
		}
	}
	if len(news) < 2 {
		return false, nil // one queue's claim subscribes it as cheaply
	}
	wrote, err := s.subscribeQueues(ctx, req, news)
	*made = append(*made, wrote...)
	return true, err
}

// subscribeQueues subscribes req's group to queues, in one commit, and
// returns the queues whose subscription it wrote (not there before).
func (s *Store) subscribeQueues(ctx context.Context, req *popReq, news []*combtype.Queue) ([]int64, error) {
	gen := s.subs.generation()
	ids := make([]int64, len(news))
	for i, q := range news {
		ids[i] = q.ID
	}
	var made []int64
	err := s.submit(ctx, &writeOp{isolated: true, apply: func(w *wtx) error {
		made = made[:0]
		had, err := column[int64](w.ctx, w, `SELECT queue_id FROM subscriptions
			WHERE group_name = ?1 AND queue_id IN (SELECT value FROM json_each(?2))`, req.Group, jsonInts(ids))
		if err != nil {
			return fmt.Errorf("read subscriptions: %w", err)
		}
		for _, q := range news {
			if err := w.subscribe(q, req.Group, req.Start); err != nil {
				return err
			}
			if !slices.Contains(had, q.ID) {
				made = append(made, q.ID)
			}
		}
		return nil
	}})
	if err != nil {
		return nil, fmt.Errorf("subscribe group %q: %w", req.Group, err)
	}
	for _, q := range news {
		s.subs.add(subKey{req.Tenant, q.Name, req.Group}, gen)
	}
	return made, nil
}

// unsubscribeMade takes back the subscriptions of group a pop of a
// namespace or task wrote (made) before it was refused at the bound on
// subscriptions: the refusal says nothing was written. Subscribing a page
// of queues at a time, a group's pop over 2,000 queues under
// --max-groups 3000 answered 409 and left 768 subscriptions behind; 100
// new groups at once over 2,000 queues were all refused, and left 99,840
// that kept every one of them out. A subscription the group has cursor
// rows under is kept: it holds the group's positions.
func (s *Store) unsubscribeMade(ctx context.Context, group string, made []int64) error {
	if len(made) == 0 {
		return nil
	}
	return s.submit(ctx, &writeOp{isolated: true, apply: func(w *wtx) error {
		w.s.subs.forget()
		w.groupsLeft()
		if _, err := w.ExecContext(w.ctx, `DELETE FROM subscriptions WHERE group_name = ?1
			AND queue_id IN (SELECT value FROM json_each(?2))
			AND NOT EXISTS (SELECT 1 FROM partitions p JOIN cursors c ON c.partition_id = p.id AND c.group_name = ?1
				WHERE p.queue_id = subscriptions.queue_id)`, group, jsonInts(made)); err != nil {
			return fmt.Errorf("take back subscriptions: %w", err)
		}
		return nil
	}})
}

// popQueuesAmong reads those of the queues named in names that are of
// req's namespace or task, in the order popQueuePage reads them.
func (s *Store) popQueuesAmong(ctx context.Context, req *popReq, names []string) ([]*combtype.Queue, error) {
	if len(names) == 0 {
		return nil, nil
	}
	arg, err := json.Marshal(names)
	if err != nil {
		return nil, fmt.Errorf("encode queue names: %w", err)
	}
	return listQueues(ctx, s.r, `SELECT `+queueColumns+` FROM queues
		WHERE tenant = ?1 AND name IN (SELECT value FROM json_each(?4))
			AND (?2 = '' OR namespace = ?2) AND (?3 = '' OR task = ?3)
		ORDER BY priority DESC, id`, req.Tenant, req.Namespace, req.Task, string(arg))
}

// Pop claims and reads up to r.Batch of tenant's messages without waiting;
// r.Wait and r.Timeout are the broker's. Looking is done on a reader; only
// a pop that has something to claim, or that is the group's first contact
// with the queue, goes through the writer.
func (s *Store) Pop(ctx context.Context, tenant string, r combtype.PopRequest) (*combtype.PopResult, error) {
	return s.pop(ctx, tenant, r, nil)
}

// PopAmong is Pop for a pop of a namespace or task that looks at only
// those of its queues named in queues (what WatchChanges found changed
// since its last look), highest priority first.
func (s *Store) PopAmong(ctx context.Context, tenant string, r combtype.PopRequest, queues []string) (*combtype.PopResult, error) {
	if r.Queue != "" {
		return nil, fmt.Errorf("pop among queues: a pop of queue %q", r.Queue)
	}
	return s.pop(ctx, tenant, r, queues)
}

// pop is Pop, of only the queues named in among for a pop of a namespace
// or task if among is not nil.
func (s *Store) pop(ctx context.Context, tenant string, r combtype.PopRequest, among []string) (_ *combtype.PopResult, err error) {
	req := s.popRequest(tenant, r)
	res := &combtype.PopResult{Group: req.Group}
	// The subscriptions a pop of a namespace or task writes, taken back
	// if a later one is refused at the bound (unsubscribeMade).
	var made *[]int64
	if req.Queue == "" {
		made = new([]int64)
		defer func() {
			if len(*made) > 0 && errors.Is(err, combtype.ErrGroupLimit) {
				if uerr := s.unsubscribeMade(context.WithoutCancel(ctx), req.Group, *made); uerr != nil {
					s.log.Error("a pop refused at the bound on group subscriptions could not take back those it wrote",
						"group", req.Group, "subscriptions", len(*made), "err", uerr)
				}
			}
		}()
	}
	gen := s.subs.generation()
	queues, subs, err := s.popQueues(ctx, &req)
	if err != nil {
		return nil, err
	}
	if len(subs) == 1 && subs[0] {
		s.subs.add(subKey{tenant, req.Queue, req.Group}, gen)
	}
	now := micros(s.clock.Now())
	// try pops from q, for a group subscribed to it or not (nil: looked
	// up here); nil if it had nothing for the pop.
	try := func(q *combtype.Queue, subscribedTo *bool) (*combtype.PopResult, error) {
		s.stats.QueueLooks.Add(1)
		var subscribed bool
		var suspects []int64
		renew := false // this pop walks to renew the group's mark
		if subscribedTo != nil {
			subscribed = *subscribedTo
		} else if k := (subKey{tenant, q.Name, req.Group}); s.subs.has(k) {
			// What a namespace pop's earlier walks showed: the lookup was
			// a statement for each queue of the namespace on every walk.
			subscribed = true
		} else {
			gen := s.subs.generation()
			if err := s.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM subscriptions WHERE queue_id = ? AND group_name = ?)`,
				q.ID, req.Group).Scan(&subscribed); err != nil {
				return nil, fmt.Errorf("look up subscription: %w", err)
			}
			if subscribed {
				s.subs.add(k, gen)
			}
		}
		if !subscribed && req.Partition == "" {
			// The first pop of a large queue subscribes in an op of its
			// own and looks on a reader, as any later one: its claim would
			// walk every partition inside the writer, which, after a seek
			// that left the group nothing due, held every other write for
			// seconds at a million partitions.
			large, err := largerThanAChunk(ctx, s.r, q.ID, s.chunkLimit())
			if err != nil {
				return nil, err
			}
			if large {
				wrote, err := s.subscribeQueues(ctx, &req, []*combtype.Queue{q})
				if err != nil {
					return nil, err
				}
				if made != nil {
					*made = append(*made, wrote...)
				}
				subscribed = true
			}
		}
		if subscribed {
			// A walk of the queue that found nothing due holds until a
			// commit or a lease's expiry (idle.go); a pop of one partition
			// reads that partition alone.
			idle, seq := idleKey{q.ID, req.Group}, s.commitSeq.Load()
			var since idleSince
			markable := false
			if req.Partition == "" {
				if wake, ok := s.idle.nothingDue(idle, seq, now); ok {
					res.WakeAt = earliest(res.WakeAt, wake)
					return nil, nil
				}
				since, markable = s.idle.since(watchKey(tenant, q.Name), req.Group)
				if !markable {
					// A change of this queue is becoming visible: a mark
					// taken now holds only until the next commit.
					since.epoch = -1
				}
				mk, changed, ok, r := s.idle.appendsOnly(idle, watchKey(tenant, q.Name), since, now, markable)
				renew = r
				if ok && markable {
					due, wake, ok, err := s.dueSinceMark(ctx, idle, mk, changed, seq, since, now)
					if err != nil {
						return nil, err
					}
					if ok && due == nil {
						res.WakeAt = earliest(res.WakeAt, wake)
						return nil, nil
					}
					suspects = due
				}
			}
			// A group whose last pop of the queue took a full batch is in
			// the middle of a backlog: its claim is sent without first
			// looking on a reader for something due, which it almost always
			// finds, and which the claim looks for again anyway. Finding
			// nothing there costs one commit of nothing, and the next pop
			// looks first again. Nor does a pop whose mark found what is
			// due (suspects): its claim reads those.
			if (renew || !s.turn.wasFull(q.ID, req.Group)) && suspects == nil {
				if markable {
					// Read before the walk: a segment it might not see is past it.
					if since.seg, err = lastSegmentOf(ctx, s.r, q.ID); err != nil {
						return nil, err
					}
				}
				// A walk of the whole queue that can be kept reads as many
				// due partitions as the claim would: fewer are all there
				// are, and are kept as the mark. More (a backlog) are
				// handed to the claim, which then reads those alone.
				limit := 1
				if req.Partition == "" && markable {
					limit = min(req.Partitions+8, maxSuspects+1)
					if renew {
						// The walk that renews a mark reads on while a mark
						// can hold what it finds: one that stopped at the
						// claim's share left no mark behind a consumer a few
						// partitions behind, and at a minute every pop walked.
						limit = maxSuspects + 1
					}
				}
				due, err := scanCandidates(ctx, s.r, q.ID, req.Group, req.Partition, now, limit, s.turn.next(q.ID, req.Group), &s.stats.QueueWalks)
				if err != nil {
					return nil, err
				}
				if len(due) == 0 {
					wake, err := leaseWake(ctx, s.r, q.ID, req.Group, req.Partition, now)
					if err != nil {
						return nil, err
					}
					if req.Partition == "" {
						s.idle.mark(idle, seq, wake, since, now, nil)
					}
					res.WakeAt = earliest(res.WakeAt, wake)
					return nil, nil
				}
				// Enough for the claim: all that is due, or as many as it
				// reads itself.
				complete := len(due) < limit
				enough := complete || (len(due) >= req.Partitions+8 && q.Options.DelayedProcessing == 0 && q.Options.WindowBuffer == 0)
				if limit > 1 && enough {
					ids := make([]int64, len(due))
					for i := range due {
						ids[i] = due[i].part.ID
					}
					if complete {
						// All that is due: kept with the mark, so that the
						// pops after this one (and the claims made for
						// parked ones) read them and what is written since,
						// not the queue.
						wake, err := leaseWake(ctx, s.r, q.ID, req.Group, "", now)
						if err != nil {
							return nil, err
						}
						marked := slices.Sorted(slices.Values(ids))
						s.idle.mark(idle, seq, wake, since, now, marked)
					}
					// In turn order: the claim takes them as it finds them.
					// Not a backlog's first ones where a delay or a window
					// may hold them back: that claim reads them all.
					suspects = ids
				}
			}
		}
		var got *combtype.PopResult
		var wake time.Time
		claimReq := req
		claimReq.suspects = suspects
		// The frames are read inside the claim, on the writer, before its
		// commit: an autoAck cursor only moves with the messages in hand,
		// retention cannot remove a claimed frame before it is read, and
		// the client leaving cannot fail the read (the writer's context is
		// not the request's). Isolated: a claim that fails (a payload no
		// key opens) rolls back alone instead of failing its neighbours.
		// Lazy unless it consumes (autoAck) or may subscribe the group: a
		// subscription lost to a power cut would be taken again later, and
		// a group subscribing to new messages would then skip the ones
		// pushed in between. Cursors it seeds on new partitions are seeded
		// again the same way from the durable subscription.
		// A claim changes a few rows: the group's subscription and cursors.
		c := &claimOp{q: q, req: &claimReq}
		gen := s.subs.generation()
		err = s.submit(ctx, &writeOp{isolated: true, smallUndo: true, lazy: subscribed && !req.AutoAck, apply: c.apply, claim: c})
		if err != nil {
			return nil, err
		}
		s.subs.add(subKey{tenant, q.Name, req.Group}, gen) // the claim subscribed it
		got, wake = c.res, c.wake
		s.turn.filled(q.ID, req.Group, got != nil && len(got.Messages) >= req.Batch)
		res.WakeAt = earliest(res.WakeAt, wake)
		return got, nil
	}
	if req.Queue != "" {
		if len(queues) == 0 {
			return res, nil
		}
		got, err := try(queues[0], &subs[0])
		if got != nil || err != nil {
			return got, err
		}
		return res, nil
	}
	// tryEach pops from the first of queues that has something for the
	// pop; nil if none had. It tries only those that may have something
	// for the group (mayHaveFor); the others it would try find nothing
	// pending, and no lease over it that could wake the pop.
	tryEach := func(queues []*combtype.Queue, may map[int64]bool) (*combtype.PopResult, error) {
		if subscribed, err := s.subscribeFirst(ctx, &req, queues, may, made); err != nil {
			return nil, err
		} else if subscribed {
			// Subscribed, the queues with nothing for the group are ruled
			// out as the others are, rather than each read on its own.
			ids := make([]int64, len(queues))
			for i, q := range queues {
				ids[i] = q.ID
			}
			if may, err = s.mayHaveFor(ctx, &req, ids); err != nil {
				return nil, err
			}
		}
		for _, q := range queues {
			if _, ok := may[q.ID]; !ok {
				continue
			}
			if got, err := try(q, nil); got != nil || err != nil {
				return got, err
			}
		}
		return nil, nil
	}
	if among != nil {
		queues, err := s.popQueuesAmong(ctx, &req, among)
		if err != nil {
			return nil, err
		}
		ids := make([]int64, len(queues))
		for i, q := range queues {
			ids[i] = q.ID
		}
		may, err := s.mayHaveFor(ctx, &req, ids)
		if err != nil {
			return nil, err
		}
		if got, err := tryEach(queues, may); got != nil || err != nil {
			return got, err
		}
		return res, nil
	}
	// A namespace's or task's queues are read a page at a time, highest
	// priority first, and the pop stops at the first that has messages:
	// read whole, 20,000 queues were 7 MB for each such pop, and 100 of
	// them at once took the server to 736 MB.
	for after := (queuePageKey{}); ; {
		page, err := s.popQueuePage(ctx, &req, after)
		if err != nil {
			return nil, err
		}
		// Only the queues that may have something for the pop are read
		// whole: read for every queue, the rows were most of a look.
		ids := make([]int64, len(page))
		for i, k := range page {
			ids[i] = k.id
		}
		may, err := s.mayHaveFor(ctx, &req, ids)
		if err != nil {
			return nil, err
		}
		if len(may) > 0 {
			ids = slices.DeleteFunc(ids, func(id int64) bool { _, ok := may[id]; return !ok })
			queues, err := s.queuesByID(ctx, ids)
			if err != nil {
				return nil, err
			}
			if got, err := tryEach(queues, may); got != nil || err != nil {
				return got, err
			}
		}
		if len(page) < popQueuePageSize {
			return res, nil
		}
		after = page[len(page)-1]
	}
}

// popRequest is r as the store runs it for tenant, its bounds applied.
func (s *Store) popRequest(tenant string, r combtype.PopRequest) popReq {
	req := popReq{PopRequest: r, Tenant: tenant,
		Start: seek.ParseSubscription(r.SubscriptionMode, r.SubscriptionFrom, s.defaultSub)}
	if req.Group == "" {
		req.Group = combtype.QueueModeGroup
	}
	req.Batch = min(max(req.Batch, 1), combtype.MaxPopBatch)
	req.Partitions = min(max(req.Partitions, 1), combtype.MaxPopPartitions)
	if req.Partition != "" {
		req.Partitions = 1
	}
	return req
}

// PopWoken is Pop for a pop woken by a change to its queue: it goes to the
// writer at once, without Pop's look on a reader (the queue row, the
// group's subscription, a scan for something due), since a wake mostly
// means something is due. The writer resolves the queue from the rows it
// keeps, and the claims of the pops one change wakes are fused into a
// few set-based statements for all of them (claimWave), where each would
// otherwise cost its own look and several statements. A pop of a
// namespace or task is an ordinary Pop.
func (s *Store) PopWoken(ctx context.Context, tenant string, r combtype.PopRequest) (*combtype.PopResult, error) {
	if r.Queue == "" {
		return s.Pop(ctx, tenant, r)
	}
	req := s.popRequest(tenant, r)
	k := subKey{tenant, req.Queue, req.Group}
	gen := s.subs.generation()
	// Lazy only when the group is known to be subscribed, as Pop decides
	// it: a claim that subscribes must be durable (see Pop).
	known := s.subs.has(k)
	lazy := known && !req.AutoAck
	c := &claimOp{tenant: tenant, queue: req.Queue, req: &req}
	if err := s.submit(ctx, &writeOp{isolated: true, smallUndo: true, lazy: lazy, apply: c.apply, claim: c}); err != nil {
		return nil, err
	}
	if c.found && !known {
		// Only a group not known before: the set's lock is taken by
		// every pop of a wave, all at once.
		s.subs.add(k, gen)
	}
	if c.res != nil {
		return c.res, nil
	}
	return &combtype.PopResult{Group: req.Group, WakeAt: c.wake}, nil
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}
