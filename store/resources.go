package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Resource views: queues, partitions and message counts. Every count here
// is arithmetic over partition watermarks and cursors, never a scan of
// messages: a partition stores last_offset - log_start + 1 messages, and a
// cursor splits them into completed (at or below committed), processing
// (inside a live lease) and pending (the rest).
//
// Which cursor: a message has no state of its own, and every consumer group
// has its own position. The views use the queue-mode cursor when the
// partition has one, since queue mode is "each message handled once" and
// that cursor is its single answer; otherwise the least advanced named
// group, so a bus message counts as completed only once every group has
// passed it. A partition no group has met is all pending.
//
// Dead-lettered messages are counted twice on purpose: the cursor moved
// past them, so they are completed in the log, and their DLQ copies are
// counted in DeadLetter, which is not part of Total (DLQ rows outlive
// retention). Failed is always 0: a failed batch is pending again until its
// retries run out, and then it is dead-lettered. Messages deleted through
// the message route count until a cursor passes them or retention removes
// their segment.

// MessageCounts are the six counters of the resource views.
type MessageCounts struct {
	Total      int64
	Pending    int64
	Processing int64
	Completed  int64
	Failed     int64
	DeadLetter int64
}

func (c *MessageCounts) add(o MessageCounts) {
	c.Total += o.Total
	c.Pending += o.Pending
	c.Processing += o.Processing
	c.Completed += o.Completed
	c.Failed += o.Failed
	c.DeadLetter += o.DeadLetter
}

// partitionCounts splits p's stored messages by the status cursor.
func partitionCounts(p *Partition, cs []cursor, now int64) MessageCounts {
	total := storedCount(p)
	counts := MessageCounts{Total: total, Pending: total}
	c := statusCursor(cs)
	if c == nil || total == 0 {
		return counts
	}
	counts.Completed = min(max(c.committed-p.LogStart+1, 0), total)
	if c.live(now) && c.leaseFrom.Valid && c.leaseTo.Valid {
		lo := max(c.leaseFrom.Int64, c.committed+1, p.LogStart)
		hi := min(c.leaseTo.Int64, p.LastOffset)
		counts.Processing = max(hi-lo+1, 0)
	}
	counts.Pending = total - counts.Completed - counts.Processing
	return counts
}

// PartitionStats is one partition with its counts and cursor totals.
type PartitionStats struct {
	Partition
	Counts MessageCounts
	// Oldest and Newest are the commit times of the first and last stored
	// segments; zero when the partition stores nothing.
	Oldest, Newest time.Time
	// Summed over every group's cursor on the partition.
	TotalConsumed   int64
	BatchesConsumed int64
	LastConsumedAt  time.Time // zero when never consumed
	HasQueueMode    bool
	BusGroups       int
	// LeaseExpiresAt is the status cursor's live lease expiry, zero if none.
	LeaseExpiresAt time.Time
	// LiveLeases counts the groups holding a live lease on the partition.
	LiveLeases int

	cursors []cursor
}

// QueueStats is a queue with its partitions and summed counts.
type QueueStats struct {
	Queue
	Partitions   []PartitionStats // in creation order
	Counts       MessageCounts
	HasQueueMode bool
	BusGroups    int // distinct named groups with a cursor on the queue
}

// QueueFilter selects queues for ListQueueStats.
type QueueFilter struct {
	Tenant    string
	Namespace string // "" = any
	Task      string // "" = any
	Limit     int    // <= 0 = no limit
	Offset    int
}

// ListQueueStats returns the tenant's queues matching f, newest first,
// with their counts.
func (s *Store) ListQueueStats(ctx context.Context, f QueueFilter) ([]*QueueStats, error) {
	q := `SELECT ` + queueColumns + ` FROM queues WHERE tenant = ? AND (? = '' OR namespace = ?) AND (? = '' OR task = ?)
		ORDER BY created_at DESC, id DESC`
	args := []any{f.Tenant, f.Namespace, f.Namespace, f.Task, f.Task}
	if f.Limit > 0 {
		q += ` LIMIT ? OFFSET ?`
		args = append(args, f.Limit, max(f.Offset, 0))
	} else if f.Offset > 0 {
		q += ` LIMIT -1 OFFSET ?`
		args = append(args, f.Offset)
	}
	queues, err := listQueues(ctx, s.rdb, q, args...)
	if err != nil {
		return nil, err
	}
	return s.queueStats(ctx, s.rdb, queues, false)
}

// QueueStats returns one queue with its partitions' counts and segment
// times, or ErrQueueNotFound.
func (s *Store) QueueStats(ctx context.Context, tenant, name string) (*QueueStats, error) {
	q, err := getQueue(ctx, s.rdb, tenant, name)
	if err != nil {
		return nil, err
	}
	stats, err := s.queueStats(ctx, s.rdb, []*Queue{q}, true)
	if err != nil {
		return nil, err
	}
	return stats[0], nil
}

func listQueues(ctx context.Context, db querier, query string, args ...any) ([]*Queue, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	defer rows.Close()
	var out []*Queue
	for rows.Next() {
		q, err := scanQueue(rows)
		if err != nil {
			return nil, fmt.Errorf("scan queue: %w", err)
		}
		out = append(out, q)
	}
	return out, rows.Err()
}

func jsonInts(ids []int64) string {
	buf := make([]byte, 0, 8*len(ids)+2)
	buf = append(buf, '[')
	for i, id := range ids {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendInt(buf, id, 10)
	}
	return string(append(buf, ']'))
}

// queueStats loads the partitions, cursors and DLQ counts of queues in a
// few set-based queries. withTimes also reads each partition's oldest
// segment time (one index seek per partition).
func (s *Store) queueStats(ctx context.Context, db querier, queues []*Queue, withTimes bool) ([]*QueueStats, error) {
	out := make([]*QueueStats, len(queues))
	if len(queues) == 0 {
		return out, nil
	}
	byID := make(map[int64]*QueueStats, len(queues))
	ids := make([]int64, len(queues))
	for i, q := range queues {
		out[i] = &QueueStats{Queue: *q}
		byID[q.ID] = out[i]
		ids[i] = q.ID
	}
	idList := jsonInts(ids)
	parts, err := queryPartitions(ctx, db, `SELECT `+partitionColumns+` FROM partitions
		WHERE queue_id IN (SELECT value FROM json_each(?)) ORDER BY queue_id, id`, idList)
	if err != nil {
		return nil, err
	}
	pidx := make(map[int64]*PartitionStats, len(parts))
	uuidIdx := make(map[string]*PartitionStats, len(parts))
	for _, p := range parts {
		qs := byID[p.QueueID]
		qs.Partitions = append(qs.Partitions, PartitionStats{Partition: *p})
	}
	for _, qs := range out {
		for i := range qs.Partitions {
			ps := &qs.Partitions[i]
			pidx[ps.ID] = ps
			uuidIdx[ps.UUID] = ps
		}
	}
	rows, err := db.QueryContext(ctx, `SELECT `+cursorColumns+` FROM cursors c JOIN partitions p ON p.id = c.partition_id
		WHERE p.queue_id IN (SELECT value FROM json_each(?))`, idList)
	if err != nil {
		return nil, fmt.Errorf("read cursors: %w", err)
	}
	for rows.Next() {
		c, err := scanCursor(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("scan cursor: %w", err)
		}
		if ps := pidx[c.partitionID]; ps != nil {
			ps.cursors = append(ps.cursors, c)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read cursors: %w", err)
	}
	dead, err := dlqCountsByPartition(ctx, db, parts)
	if err != nil {
		return nil, err
	}
	now := micros(s.clock.Now())
	for _, qs := range out {
		groups := map[string]bool{}
		for i := range qs.Partitions {
			ps := &qs.Partitions[i]
			ps.Counts = partitionCounts(&ps.Partition, ps.cursors, now)
			ps.Counts.DeadLetter = dead[ps.UUID]
			for _, c := range ps.cursors {
				ps.TotalConsumed += c.totalConsumed
				ps.BatchesConsumed += c.batches
				if c.lastConsumedAt.Valid && c.lastConsumedAt.Int64 > micros(ps.LastConsumedAt) {
					ps.LastConsumedAt = fromMicros(c.lastConsumedAt.Int64)
				}
				if c.live(now) {
					ps.LiveLeases++
				}
				if c.group == QueueModeGroup {
					ps.HasQueueMode = true
				} else {
					ps.BusGroups++
					groups[c.group] = true
				}
			}
			if sc := statusCursor(ps.cursors); sc != nil && sc.live(now) {
				ps.LeaseExpiresAt = fromMicros(sc.leaseExpires.Int64)
			}
			if ps.LastOffset >= ps.LogStart {
				ps.Newest = fromMicros(ps.LastSegmentAt)
			}
			qs.Counts.add(ps.Counts)
			qs.HasQueueMode = qs.HasQueueMode || ps.HasQueueMode
		}
		qs.BusGroups = len(groups)
	}
	if withTimes {
		for _, ps := range pidx {
			if ps.LastOffset < ps.LogStart {
				continue
			}
			var at int64
			err := db.QueryRowContext(ctx, `SELECT created_at FROM segments WHERE partition_id = ? ORDER BY base_offset LIMIT 1`,
				ps.ID).Scan(&at)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return nil, fmt.Errorf("oldest segment: %w", err)
			}
			if err == nil {
				ps.Oldest = fromMicros(at)
			}
		}
	}
	return out, nil
}

// dlqCountsByPartition counts DLQ rows per partition uuid, through the
// (partition_uuid, offset) index.
func dlqCountsByPartition(ctx context.Context, db querier, parts []*Partition) (map[string]int64, error) {
	out := map[string]int64{}
	if len(parts) == 0 {
		return out, nil
	}
	uuids := make([]string, len(parts))
	for i, p := range parts {
		uuids[i] = p.UUID
	}
	rows, err := db.QueryContext(ctx, `SELECT partition_uuid, COUNT(*) FROM dlq
		WHERE partition_uuid IN (SELECT value FROM json_each(?)) GROUP BY partition_uuid`, jsonStrings(uuids))
	if err != nil {
		return nil, fmt.Errorf("count dead letters: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var u string
		var n int64
		if err := rows.Scan(&u, &n); err != nil {
			return nil, fmt.Errorf("scan dead letter count: %w", err)
		}
		out[u] = n
	}
	return out, rows.Err()
}

// Overview is the tenant-wide summary of the resources views.
type Overview struct {
	Queues, Partitions, Namespaces, Tasks int64
	Counts                                MessageCounts
	// OffsetLag (messages) and TimeLag (seconds: age of the oldest
	// unconsumed segment) over every cursor.
	OffsetLag, TimeLag LagSummary
	// IngestedLastMinute is the number of messages committed in the minute
	// before Timestamp.
	IngestedLastMinute int64
	Timestamp          time.Time
}

// Overview summarises tenant's queues, messages and lag.
func (s *Store) Overview(ctx context.Context, tenant string) (*Overview, error) {
	now := s.clock.Now()
	stats, err := s.ListQueueStats(ctx, QueueFilter{Tenant: tenant})
	if err != nil {
		return nil, err
	}
	o := &Overview{Timestamp: now, Queues: int64(len(stats))}
	namespaces, tasks := map[string]bool{}, map[string]bool{}
	for _, qs := range stats {
		o.Partitions += int64(len(qs.Partitions))
		o.Counts.add(qs.Counts)
		if qs.Namespace != "" {
			namespaces[qs.Namespace] = true
		}
		if qs.Task != "" {
			tasks[qs.Task] = true
		}
	}
	o.Namespaces, o.Tasks = int64(len(namespaces)), int64(len(tasks))

	// Lag per cursor: offsets behind the end, and the age of the segment
	// holding the next wanted offset, found through the unique
	// (partition_id, base_offset) index; nothing is decoded.
	rows, err := s.r.QueryContext(ctx, `SELECT `+lagExpr+`, `+oldestExpr+`
		FROM cursors c JOIN partitions p ON p.id = c.partition_id JOIN queues q ON q.id = p.queue_id
		WHERE q.tenant = ?`, tenant)
	if err != nil {
		return nil, fmt.Errorf("read lag: %w", err)
	}
	var offsets, ages []float64
	for rows.Next() {
		var lag int64
		var oldest sql.NullInt64
		if err := rows.Scan(&lag, &oldest); err != nil {
			rows.Close()
			return nil, fmt.Errorf("scan lag: %w", err)
		}
		offsets = append(offsets, float64(lag))
		age := 0.0
		if oldest.Valid {
			age = max(float64(micros(now)-oldest.Int64)/1e6, 0)
		}
		ages = append(ages, age)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read lag: %w", err)
	}
	o.OffsetLag, o.TimeLag = summarise(offsets), summarise(ages)

	// One index range per partition over (partition_id, created_at).
	if err := s.r.QueryRowContext(ctx, `SELECT COALESCE(SUM(s.frame_count), 0) FROM queues q
		JOIN partitions p ON p.queue_id = q.id JOIN segments s ON s.partition_id = p.id AND s.created_at > ?
		WHERE q.tenant = ?`, micros(now.Add(-time.Minute)), tenant).Scan(&o.IngestedLastMinute); err != nil {
		return nil, fmt.Errorf("count recent messages: %w", err)
	}
	return o, nil
}

// GroupedStats sums the queues sharing a namespace or a task.
type GroupedStats struct {
	Name       string
	Queues     int64
	Partitions int64
	Counts     MessageCounts
}

// NamespaceStats groups tenant's queues by namespace, by name; queues
// without a namespace are left out.
func (s *Store) NamespaceStats(ctx context.Context, tenant string) ([]GroupedStats, error) {
	return s.groupedStats(ctx, tenant, func(q *Queue) string { return q.Namespace })
}

// TaskStats groups tenant's queues by task, by name; queues without a task
// are left out.
func (s *Store) TaskStats(ctx context.Context, tenant string) ([]GroupedStats, error) {
	return s.groupedStats(ctx, tenant, func(q *Queue) string { return q.Task })
}

func (s *Store) groupedStats(ctx context.Context, tenant string, key func(*Queue) string) ([]GroupedStats, error) {
	stats, err := s.ListQueueStats(ctx, QueueFilter{Tenant: tenant})
	if err != nil {
		return nil, err
	}
	by := map[string]*GroupedStats{}
	for _, qs := range stats {
		k := key(&qs.Queue)
		if k == "" {
			continue
		}
		g := by[k]
		if g == nil {
			g = &GroupedStats{Name: k}
			by[k] = g
		}
		g.Queues++
		g.Partitions += int64(len(qs.Partitions))
		g.Counts.add(qs.Counts)
	}
	out := make([]GroupedStats, 0, len(by))
	for _, g := range by {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b GroupedStats) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// --- deleting a queue ----------------------------------------------------

// Batch sizes of DeleteQueue: each writer op removes at most this many
// segments, or dedup keys, so pushes fused with it wait for one bounded
// delete rather than for the whole queue.
const (
	DefaultDeleteSegmentBatch = 500
	DefaultDeleteKeyBatch     = 5000
	deletePartitionBatch      = 500
)

// detachedTenantPrefix marks a queue that DeleteQueue has detached and is
// still emptying. No request can carry this tenant, so every tenant-scoped
// query (all of them) already ignores such a queue.
const detachedTenantPrefix = "\x00deleted\x00"

// DeleteQueue removes tenant's queue and everything it holds: partitions,
// segments, dedup keys, cursors and leases, subscriptions, tombstones,
// traces, snapshots and its DLQ rows. It reports whether the queue existed.
// Pushes parked by push maintenance are not touched: they were accepted as
// pushes to that name and recreate the queue when they drain.
//
// A big queue is not deleted in one transaction, which would stall every
// push for as long as it takes. The first op detaches the queue: it moves
// the queue row to a tenant no request can name and drops what is small
// and keyed by name or cursor (cursors, subscriptions, tombstones, DLQ
// rows), so from that commit on the name is free, a new push creates a new,
// empty queue, and parked pops of the old one wake. Bounded ops then empty
// the detached queue from the front, moving log_start as retention does,
// and a last op removes its rows. A detached queue left by a crash is
// emptied by ResumeDeletes, which the broker runs when it opens.
func (s *Store) DeleteQueue(ctx context.Context, tenant, name string) (existed bool, err error) {
	return s.deleteQueue(ctx, tenant, name, DefaultDeleteSegmentBatch, DefaultDeleteKeyBatch)
}

func (s *Store) deleteQueue(ctx context.Context, tenant, name string, segBatch, keyBatch int) (bool, error) {
	existed, err := s.detachQueue(ctx, tenant, name)
	if err != nil {
		return false, err
	}
	// The queue is gone for every client once detached; emptying it goes
	// on if the caller leaves, and stops only when the store closes.
	if err := s.purgeDetached(context.WithoutCancel(ctx), segBatch, keyBatch); err != nil {
		return existed, err
	}
	return existed, nil
}

// ResumeDeletes finishes the queue deletes a crash interrupted: it empties
// and removes every detached queue, one bounded op at a time, and returns
// when none is left, ctx ends or the store closes.
func (s *Store) ResumeDeletes(ctx context.Context) error {
	return s.purgeDetached(ctx, DefaultDeleteSegmentBatch, DefaultDeleteKeyBatch)
}

// detachQueue is DeleteQueue's first op; it reports whether the queue existed.
func (s *Store) detachQueue(ctx context.Context, tenant, name string) (bool, error) {
	var detached bool
	err := s.submit(ctx, &writeOp{isolated: true, apply: func(w *wtx) error {
		detached = false
		q, err := w.queue(tenant, name, false)
		if errors.Is(err, ErrQueueNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		delete(w.queues, queueKey{tenant, name})
		if _, err := w.ExecContext(w.ctx, `UPDATE queues SET tenant = ?, name = ? WHERE id = ?`,
			detachedTenantPrefix+q.UUID, q.UUID, q.ID); err != nil {
			return fmt.Errorf("detach queue: %w", err)
		}
		if err := w.dropQueueState(q.ID); err != nil {
			return err
		}
		if err := w.dropStreamsOf(tenant, name); err != nil {
			return err
		}
		if _, err := w.ExecContext(w.ctx, `DELETE FROM dlq WHERE tenant = ? AND queue_name = ?`, tenant, name); err != nil {
			return fmt.Errorf("delete dead letters: %w", err)
		}
		// Snapshots name the queue by uuid, so a recreated queue could never
		// use them; they would only wait for their expiry.
		if _, err := w.ExecContext(w.ctx, `DELETE FROM snapshot_cursors WHERE snapshot_id IN
			(SELECT id FROM snapshots WHERE queue_uuid = ?)`, q.UUID); err != nil {
			return fmt.Errorf("delete snapshot cursors: %w", err)
		}
		if _, err := w.ExecContext(w.ctx, `DELETE FROM snapshots WHERE queue_uuid = ?`, q.UUID); err != nil {
			return fmt.Errorf("delete snapshots: %w", err)
		}
		w.touch(tenant, name)
		detached = true
		return nil
	}})
	return detached, err
}

// dropQueueState deletes the cursors, subscriptions and tombstones of
// queue id: the small state keyed by cursor, group or message.
func (w *wtx) dropQueueState(queueID int64) error {
	for _, q := range []string{
		`DELETE FROM cursors WHERE partition_id IN (SELECT id FROM partitions WHERE queue_id = ?)`,
		`DELETE FROM subscriptions WHERE queue_id = ?`,
		`DELETE FROM tombstones WHERE partition_id IN (SELECT id FROM partitions WHERE queue_id = ?)`,
	} {
		if _, err := w.ExecContext(w.ctx, q, queueID); err != nil {
			return fmt.Errorf("drop queue state: %w", err)
		}
	}
	return nil
}

// purgeDetached empties and removes every detached queue, one bounded op
// at a time.
func (s *Store) purgeDetached(ctx context.Context, segBatch, keyBatch int) error {
	for {
		var done bool
		err := s.submit(ctx, &writeOp{apply: func(w *wtx) error {
			var err error
			done, err = w.purgeStep(segBatch, keyBatch)
			return err
		}})
		if err != nil {
			return fmt.Errorf("purge deleted queue: %w", err)
		}
		if done {
			return nil
		}
	}
}

// purgeStep does one bounded piece of emptying the detached queues; done
// is true when none is left.
func (w *wtx) purgeStep(segBatch, keyBatch int) (done bool, err error) {
	var queueID int64
	err = w.QueryRowContext(w.ctx, `SELECT id FROM queues WHERE tenant >= ? AND tenant < ? ORDER BY id LIMIT 1`,
		detachedTenantPrefix, detachedTenantPrefix+"\xff").Scan(&queueID)
	if errors.Is(err, sql.ErrNoRows) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("find deleted queue: %w", err)
	}
	// A pop that resolved the queue before it was detached may have
	// subscribed it since; drop that state again.
	if err := w.dropQueueState(queueID); err != nil {
		return false, err
	}
	parts, err := queryPartitions(w.ctx, w.tx, `SELECT `+partitionColumns+` FROM partitions WHERE queue_id = ? ORDER BY id`, queueID)
	if err != nil {
		return false, err
	}
	// Each step spends both budgets: keys and segments of the same
	// partitions go in the same commit, halving the commits of a purge.
	// Partitions cost a few statements each even when empty.
	segBudget, keyBudget, partBudget := segBatch, keyBatch, deletePartitionBatch
	for _, p := range parts {
		if partBudget--; partBudget < 0 {
			return false, nil
		}
		// Dedup keys in primary-key order: each batch starts where the
		// last one stopped, so the whole pass is linear.
		res, err := w.ExecContext(w.ctx, `DELETE FROM txids WHERE partition_id = ?1 AND (txn_key, offset) IN
			(SELECT txn_key, offset FROM txids WHERE partition_id = ?1 LIMIT ?2)`, p.ID, keyBudget)
		if err != nil {
			return false, fmt.Errorf("delete dedup keys: %w", err)
		}
		keys, _ := res.RowsAffected()
		keyBudget -= int(keys)
		// Segments from the front, moving log_start with them so the
		// partition stays a valid log at every commit.
		var end sql.NullInt64
		var segs int64
		if err := w.QueryRowContext(w.ctx, `SELECT MAX(base_offset + frame_count), COUNT(*) FROM (SELECT base_offset, frame_count
			FROM segments WHERE partition_id = ? ORDER BY base_offset LIMIT ?)`, p.ID, segBudget).Scan(&end, &segs); err != nil {
			return false, fmt.Errorf("find segments to delete: %w", err)
		}
		if segs > 0 {
			if _, err := w.ExecContext(w.ctx, `DELETE FROM segments WHERE partition_id = ? AND base_offset < ?`, p.ID, end.Int64); err != nil {
				return false, fmt.Errorf("delete segments: %w", err)
			}
			if _, err := w.ExecContext(w.ctx, `UPDATE partitions SET log_start = ? WHERE id = ?`, end.Int64, p.ID); err != nil {
				return false, fmt.Errorf("advance log_start: %w", err)
			}
			segBudget -= int(segs)
		}
		if keyBudget <= 0 || segBudget <= 0 {
			// Budget spent: this partition may hold more; the next step
			// sees it again.
			return false, nil
		}
		// Traces name their message by partition uuid; they go with it.
		if _, err := w.ExecContext(w.ctx, `DELETE FROM trace_names WHERE trace_id IN
			(SELECT id FROM traces WHERE partition_uuid = ?)`, p.UUID); err != nil {
			return false, fmt.Errorf("delete trace names: %w", err)
		}
		if _, err := w.ExecContext(w.ctx, `DELETE FROM traces WHERE partition_uuid = ?`, p.UUID); err != nil {
			return false, fmt.Errorf("delete traces: %w", err)
		}
		if _, err := w.ExecContext(w.ctx, `DELETE FROM partitions WHERE id = ?`, p.ID); err != nil {
			return false, fmt.Errorf("delete partition: %w", err)
		}
	}
	if _, err := w.ExecContext(w.ctx, `DELETE FROM queues WHERE id = ?`, queueID); err != nil {
		return false, fmt.Errorf("delete queue: %w", err)
	}
	return false, nil
}
