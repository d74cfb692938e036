package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
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

	if o.IngestedLastMinute, err = s.ingestedSince(ctx, tenant, micros(now.Add(-time.Minute))); err != nil {
		return nil, err
	}
	return o, nil
}

// ingestedSince counts the tenant's retained messages committed after
// since (µs). Offsets are contiguous from a partition's landing segment to
// its last offset, so each partition that committed since costs one search
// (landing) and no scan; the others are skipped by their last commit time.
func (s *Store) ingestedSince(ctx context.Context, tenant string, since int64) (int64, error) {
	parts, err := queryPartitions(ctx, s.r, `SELECT `+partitionColumns+` FROM partitions WHERE last_segment_at > ?
		AND queue_id IN (SELECT id FROM queues WHERE tenant = ?)`, since, tenant)
	if err != nil {
		return 0, fmt.Errorf("count recent messages: %w", err)
	}
	var n int64
	for _, p := range parts {
		l, err := landing(ctx, s.r, p, since+1)
		if err != nil {
			return 0, fmt.Errorf("count recent messages: %w", err)
		}
		if l != nil {
			n += p.LastOffset + 1 - l.BaseOffset
		}
	}
	return n, nil
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
