package store

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/comb-broker/comb/combtype"
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

func addCounts(c *combtype.MessageCounts, o combtype.MessageCounts) {
	c.Total += o.Total
	c.Pending += o.Pending
	c.Processing += o.Processing
	c.Completed += o.Completed
	c.Failed += o.Failed
	c.DeadLetter += o.DeadLetter
}

// partitionCounts splits p's stored messages by c, its status cursor
// (partCursors.status; nil when no group has met it).
func partitionCounts(p *combtype.Partition, c *cursor, now int64) combtype.MessageCounts {
	total := storedCount(p)
	counts := combtype.MessageCounts{Total: total, Pending: total}
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

// ListQueueStats returns the tenant's queues matching f (Namespace, Task,
// Limit, Offset), newest first, with their totals as QueuePage gives
// them: not their partitions.
func (s *Store) ListQueueStats(ctx context.Context, tenant string, f combtype.QueueFilter) ([]*combtype.QueueStats, error) {
	// The queues' totals, not their partitions: reading every partition
	// of every queue took 1.6 s a request at 100,000 partitions.
	stats, _, err := s.QueuePage(ctx, tenant, combtype.QueueFilter{Namespace: f.Namespace, Task: f.Task,
		Limit: f.Limit, Offset: f.Offset})
	return stats, err
}

// QueueStats returns one queue with its partitions' counts and segment
// times, or ErrQueueNotFound.
func (s *Store) QueueStats(ctx context.Context, tenant, name string) (*combtype.QueueStats, error) {
	q, err := getQueue(ctx, s.rdb, tenant, name)
	if err != nil {
		return nil, err
	}
	stats, err := s.queueStats(ctx, s.rdb, []*combtype.Queue{q}, true)
	if err != nil {
		return nil, err
	}
	return stats[0], nil
}

// queueStats loads the partitions, cursors and DLQ counts of queues in a
// few set-based queries, and returns the cursors it read by partition id.
// withTimes also reads each partition's oldest segment time (one index
// seek per partition).
func (s *Store) queueStats(ctx context.Context, db querier, queues []*combtype.Queue, withTimes bool) ([]*combtype.QueueStats, error) {
	out := make([]*combtype.QueueStats, len(queues))
	if len(queues) == 0 {
		return out, nil
	}
	ids := make([]int64, len(queues))
	for i, q := range queues {
		ids[i] = q.ID
	}
	parts, err := queryPartitions(ctx, db, `SELECT `+partitionColumns+` FROM partitions
		WHERE queue_id IN (SELECT value FROM json_each(?)) ORDER BY queue_id, id`, jsonInts(ids))
	if err != nil {
		return nil, err
	}
	stats, _, err := s.statsOf(ctx, db, queues, parts, withTimes, false)
	return stats, err
}

// statsOf is queueStats over the partitions parts of queues (all of them,
// or a page): the counts summed into each queue are those of parts. It
// returns what it read of each partition's cursors; keepBus keeps each
// named group's offset there (partCursors.bus).
func (s *Store) statsOf(ctx context.Context, db querier, queues []*combtype.Queue, parts []*combtype.Partition, withTimes, keepBus bool) ([]*combtype.QueueStats, map[int64]*partCursors, error) {
	out := make([]*combtype.QueueStats, len(queues))
	byID := make(map[int64]*combtype.QueueStats, len(queues))
	for i, q := range queues {
		out[i] = &combtype.QueueStats{Queue: *q}
		byID[q.ID] = out[i]
	}
	pids := make([]int64, len(parts))
	for i, p := range parts {
		pids[i] = p.ID
	}
	pidx := make(map[int64]*combtype.PartitionStats, len(parts))
	for _, p := range parts {
		qs := byID[p.QueueID]
		qs.Partitions = append(qs.Partitions, combtype.PartitionStats{Partition: *p})
	}
	for _, qs := range out {
		for i := range qs.Partitions {
			ps := &qs.Partitions[i]
			pidx[ps.ID] = ps
		}
	}
	now := micros(s.clock.Now())
	// A queue's named groups are those with a row on its listed
	// partitions and every group subscribed to it: a subscription implies
	// a cursor on each partition where its group has no row.
	var busGroups map[int64]int
	var cursorsOf map[int64]*partCursors
	var err error
	if keepBus {
		groups := map[int64]map[string]bool{}
		named := func(queueID int64, g string) {
			if g == combtype.QueueModeGroup {
				return
			}
			if groups[queueID] == nil {
				groups[queueID] = map[string]bool{}
			}
			groups[queueID][g] = true
		}
		// The rows are enough here: a group with only implied cursors
		// is subscribed, and subscribedGroups names it.
		cursorsOf, err = readPartCursors(ctx, db, pids, now, impliedInBus, func(c *cursor) {
			if ps := pidx[c.partitionID]; ps != nil {
				named(ps.QueueID, c.group)
			}
		})
		if err != nil {
			return nil, nil, err
		}
		if err := subscribedGroups(ctx, db, out, named); err != nil {
			return nil, nil, err
		}
		busGroups = make(map[int64]int, len(groups))
		for id, gs := range groups {
			busGroups[id] = len(gs)
		}
	} else {
		// Counted by SQLite, as the rows are summed: a queue read by
		// 100,000 groups made a map of their names for each read.
		if cursorsOf, err = readPartCursors(ctx, db, pids, now, impliedSummed, nil); err != nil {
			return nil, nil, err
		}
		if busGroups, err = namedGroups(ctx, db, out, pids); err != nil {
			return nil, nil, err
		}
	}
	dead, err := dlqCountsByPartition(ctx, db, parts)
	if err != nil {
		return nil, nil, err
	}
	for _, qs := range out {
		for i := range qs.Partitions {
			ps := &qs.Partitions[i]
			pc := cursorsOf[ps.ID]
			sc := pc.status()
			ps.Counts = partitionCounts(&ps.Partition, sc, now)
			ps.Counts.DeadLetter = dead[ps.UUID]
			if pc != nil {
				ps.TotalConsumed, ps.BatchesConsumed, ps.LiveLeases = pc.totalConsumed, pc.batches, pc.live
				if pc.lastConsumedAt > 0 {
					ps.LastConsumedAt = fromMicros(pc.lastConsumedAt)
				}
				ps.HasQueueMode, ps.BusGroups = pc.qm != nil, pc.named
			}
			if sc != nil && sc.live(now) {
				ps.LeaseExpiresAt = fromMicros(sc.leaseExpires.Int64)
			}
			if ps.LastOffset >= ps.LogStart {
				ps.Newest = fromMicros(ps.LastSegmentAt)
			}
			addCounts(&qs.Counts, ps.Counts)
			qs.Evicted += ps.LogStart // offsets below log_start are gone
			qs.HasQueueMode = qs.HasQueueMode || ps.HasQueueMode
		}
		qs.BusGroups = busGroups[qs.ID]
		qs.PartitionCount = len(qs.Partitions)
	}
	if withTimes {
		// One statement, one index seek per partition that stores
		// something, rather than one round trip each.
		var stored []int64
		for id, ps := range pidx {
			if ps.LastOffset >= ps.LogStart {
				stored = append(stored, id)
			}
		}
		if len(stored) > 0 {
			rows, err := db.QueryContext(ctx, `SELECT j.value, (SELECT s.created_at FROM segments s
				WHERE s.partition_id = j.value ORDER BY s.base_offset LIMIT 1) FROM json_each(?) j`, jsonInts(stored))
			if err != nil {
				return nil, nil, fmt.Errorf("oldest segments: %w", err)
			}
			defer rows.Close()
			for rows.Next() {
				var id int64
				var at sql.NullInt64
				if err := rows.Scan(&id, &at); err != nil {
					return nil, nil, fmt.Errorf("scan oldest segment: %w", err)
				}
				if ps := pidx[id]; ps != nil && at.Valid {
					ps.Oldest = fromMicros(at.Int64)
				}
			}
			if err := rows.Err(); err != nil {
				return nil, nil, fmt.Errorf("oldest segments: %w", err)
			}
		}
	}
	return out, cursorsOf, nil
}

// subscribedGroups calls named with each group subscribed to a queue of
// out that has partitions listed there.
func subscribedGroups(ctx context.Context, db querier, out []*combtype.QueueStats, named func(queueID int64, group string)) error {
	var ids []int64
	for _, qs := range out {
		if len(qs.Partitions) > 0 {
			ids = append(ids, qs.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	rows, err := db.QueryContext(ctx, `SELECT queue_id, group_name FROM subscriptions
		WHERE queue_id IN (SELECT value FROM json_each(?))`, jsonInts(ids))
	if err != nil {
		return fmt.Errorf("read subscriptions: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var g string
		if err := rows.Scan(&id, &g); err != nil {
			return fmt.Errorf("scan subscription: %w", err)
		}
		named(id, g)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read subscriptions: %w", err)
	}
	return nil
}

// namedGroups counts, for each queue of out with partitions listed, the
// named groups statsOf shows: every group subscribed to it, and those
// with a row on one of pids but no subscription (rows an older comb's
// seek left), without reading a name into Go.
func namedGroups(ctx context.Context, db querier, out []*combtype.QueueStats, pids []int64) (map[int64]int, error) {
	counts := map[int64]int{}
	var ids []int64
	for _, qs := range out {
		if len(qs.Partitions) > 0 {
			ids = append(ids, qs.ID)
		}
	}
	if len(ids) == 0 {
		return counts, nil
	}
	rows, err := db.QueryContext(ctx, `SELECT queue_id, COUNT(*) FROM subscriptions
			WHERE queue_id IN (SELECT value FROM json_each(?1)) AND group_name != ?3 GROUP BY queue_id
		UNION ALL SELECT p.queue_id, COUNT(DISTINCT c.group_name)
			FROM json_each(?2) j CROSS JOIN partitions p ON p.id = j.value CROSS JOIN cursors c ON c.partition_id = p.id
			WHERE c.group_name != ?3 AND NOT EXISTS (SELECT 1 FROM subscriptions s
				WHERE s.queue_id = p.queue_id AND s.group_name = c.group_name)
			GROUP BY p.queue_id`, jsonInts(ids), jsonInts(pids), combtype.QueueModeGroup)
	if err != nil {
		return nil, fmt.Errorf("count named groups: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, fmt.Errorf("count named groups: %w", err)
		}
		counts[id] += n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count named groups: %w", err)
	}
	return counts, nil
}

// Overview summarises tenant's queues, messages and lag: the Overview of
// its Summary.
func (s *Store) Overview(ctx context.Context, tenant string) (*combtype.Overview, error) {
	sum, err := s.Summary(ctx, tenant)
	if err != nil {
		return nil, err
	}
	o := sum.Overview
	return &o, nil
}

// summarise sums tenant's Summary now: every queue's totals, the lag of
// every cursor and the last minute's ingest.
func (s *Store) summarise(ctx context.Context, tenant string) (*combtype.Summary, error) {
	now := s.clock.Now()
	stats, err := s.queueSummaries(ctx, tenant, combtype.QueueFilter{}, true)
	if err != nil {
		return nil, err
	}
	sum := &combtype.Summary{Queues: stats}
	o := &sum.Overview
	o.Timestamp, o.Queues = now, int64(len(stats))
	namespaces, tasks := map[string]bool{}, map[string]bool{}
	for _, qs := range stats {
		o.Partitions += int64(qs.PartitionCount)
		addCounts(&o.Counts, qs.Counts)
		if qs.Namespace != "" {
			namespaces[qs.Namespace] = true
		}
		if qs.Task != "" {
			tasks[qs.Task] = true
		}
	}
	o.Namespaces, o.Tasks = int64(len(namespaces)), int64(len(tasks))

	// Lag per position, read only where something may lag (sumLag).
	offsets, ages, err := s.sumLag(ctx, tenant, now)
	if err != nil {
		return nil, err
	}
	o.OffsetLag, o.TimeLag = offsets.summary(), ages.summary()

	if o.IngestedLastMinute, err = s.ingestedSince(ctx, tenant, micros(now.Add(-time.Minute))); err != nil {
		return nil, err
	}
	return sum, nil
}

// LeaseCounts counts the live leases on the tenant's queues matching f
// (Namespace, Task, Name), through cursors_lease: leases are few, so this
// is read on every call.
func (s *Store) LeaseCounts(ctx context.Context, tenant string, f combtype.QueueFilter) (combtype.LeaseCounts, error) {
	var out combtype.LeaseCounts
	err := s.r.QueryRowContext(ctx, `SELECT COUNT(*), COUNT(DISTINCT c.partition_id)
		FROM cursors c INDEXED BY cursors_lease JOIN partitions p ON p.id = c.partition_id JOIN queues q ON q.id = p.queue_id
		WHERE c.lease_id IS NOT NULL AND c.lease_expires_at > ?1 AND q.tenant = ?2
			AND (?3 = '' OR q.namespace = ?3) AND (?4 = '' OR q.task = ?4) AND (?5 = '' OR q.name = ?5)`,
		micros(s.clock.Now()), tenant, f.Namespace, f.Task, f.Name).Scan(&out.Active, &out.Partitions)
	if err != nil {
		return out, fmt.Errorf("count leases: %w", err)
	}
	return out, nil
}

// QueuePage returns the page (Limit, Offset) of the tenant's queues
// matching f, in f's order, with their totals but not their partitions,
// and how many match (PageInfo.Total). Orders by name, namespace, task or
// creation read the queues table and sum the page's queues only; orders
// by totals sort the tenant's Summary, summed in the background above a
// size, and the page says how old it is.
func (s *Store) QueuePage(ctx context.Context, tenant string, f combtype.QueueFilter) ([]*combtype.QueueStats, combtype.PageInfo, error) {
	info := combtype.PageInfo{Total: -1}
	col, byTotals := "", false
	switch f.Sort {
	case "", "created":
		col = "created_at"
	case "name", "namespace", "task":
		col = f.Sort
	case "partitions", "total", "pending", "processing":
		byTotals = true
	default:
		return nil, info, fmt.Errorf("%w: sort %q is not one of %s", combtype.ErrInvalid, f.Sort, strings.Join(combtype.QueueSorts, ", "))
	}
	if byTotals {
		return s.queuePageByTotals(ctx, tenant, f)
	}
	// Newest first unless asked otherwise, as Queen lists.
	dir := "ASC"
	if f.Desc != (f.Sort == "") {
		dir = "DESC"
	}
	args := []any{tenant, f.Namespace, f.Task, f.Name, asciiLower(f.Search)}
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM queues WHERE `+queuePageWhere, args...).Scan(&info.Total); err != nil {
		return nil, info, fmt.Errorf("count queues: %w", err)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = -1
	}
	offset := max(f.Offset, 0)
	queues, err := listQueues(ctx, s.r, queuePageQuery(col, dir), append(args, limit, offset)...)
	if err != nil {
		return nil, info, err
	}
	totals, err := s.totals(ctx, s.r, tenant, queues, false)
	if err != nil {
		return nil, info, err
	}
	out := make([]*combtype.QueueStats, len(queues))
	for i, q := range queues {
		out[i] = totals[q.ID]
	}
	info.More = int64(offset+len(out)) < info.Total
	return out, info, nil
}

// queuePageWhere is the filter of QueuePage: tenant, namespace, task,
// name, search.
const queuePageWhere = `tenant = ?1 AND (?2 = '' OR namespace = ?2) AND (?3 = '' OR task = ?3) AND (?4 = '' OR name = ?4)
	AND (?5 = '' OR instr(lower(name || char(10) || namespace || char(10) || task), ?5) > 0)`

// queuePageQuery is the statement of a QueuePage in column col's order,
// dir ASC or DESC; its last two parameters are the limit and offset.
// Newest first, it reads the queues through queues_created_order, a page
// costing the queues up to its end: sorted whole, 50,000 queues took
// 70-160 ms a page of 10, and 206-292 ms at offset 40,000 (15-24 ms).
func queuePageQuery(col, dir string) string {
	return `SELECT ` + queueColumns + ` FROM queues WHERE ` + queuePageWhere + `
		ORDER BY ` + col + ` ` + dir + `, id ` + dir + ` LIMIT ?6 OFFSET ?7`
}

// queuePageByTotals is QueuePage in the order of a total, over the
// tenant's Summary.
func (s *Store) queuePageByTotals(ctx context.Context, tenant string, f combtype.QueueFilter) ([]*combtype.QueueStats, combtype.PageInfo, error) {
	info := combtype.PageInfo{Total: -1}
	sum, err := s.Summary(ctx, tenant)
	if err != nil {
		return nil, info, err
	}
	search := asciiLower(f.Search)
	var kept []*combtype.QueueStats
	for _, qs := range sum.Queues {
		if (f.Namespace == "" || qs.Namespace == f.Namespace) && (f.Task == "" || qs.Task == f.Task) &&
			(f.Name == "" || qs.Name == f.Name) &&
			(search == "" || strings.Contains(asciiLower(qs.Name+"\n"+qs.Namespace+"\n"+qs.Task), search)) {
			kept = append(kept, qs)
		}
	}
	key := func(qs *combtype.QueueStats) int64 {
		switch f.Sort {
		case "partitions":
			return int64(qs.PartitionCount)
		case "total":
			return qs.Counts.Total
		case "pending":
			return qs.Counts.Pending
		}
		return qs.Counts.Processing
	}
	// Ties keep the Summary's order, newest first.
	slices.SortStableFunc(kept, func(a, b *combtype.QueueStats) int {
		c := cmp.Compare(key(a), key(b))
		if f.Desc {
			return -c
		}
		return c
	})
	info.Total = int64(len(kept))
	lo := min(max(f.Offset, 0), len(kept))
	hi := len(kept)
	if f.Limit > 0 {
		hi = min(lo+f.Limit, hi)
	}
	out := make([]*combtype.QueueStats, hi-lo)
	for i, qs := range kept[lo:hi] {
		c := *qs
		if sum.Summarized {
			c.Summarized, c.StatsAge = true, max(c.StatsAge, sum.StatsAge)
		}
		out[i] = &c
	}
	info.More = hi < len(kept)
	return out, info, nil
}

// groupSummary groups sum's queues by key, leaving out those whose key
// is empty, and returns the page pg of the groups in name order, and how
// many there are.
func groupSummary(sum *combtype.Summary, key func(*combtype.Queue) string, pg combtype.Page) ([]combtype.GroupedStats, combtype.PageInfo) {
	by := map[string]*combtype.GroupedStats{}
	for _, qs := range sum.Queues {
		if k := key(&qs.Queue); k != "" {
			addToGroup(by, k, qs)
		}
	}
	names := slices.Sorted(maps.Keys(by))
	info := combtype.PageInfo{Total: int64(len(names))}
	lo := min(max(pg.Offset, 0), len(names))
	hi := len(names)
	if pg.Limit > 0 {
		hi = min(lo+pg.Limit, hi)
	}
	out := make([]combtype.GroupedStats, 0, hi-lo)
	for _, n := range names[lo:hi] {
		out = append(out, *by[n])
	}
	info.More = hi < len(names)
	return out, info
}

// addToGroup counts queue qs into the group named k of by.
func addToGroup(by map[string]*combtype.GroupedStats, k string, qs *combtype.QueueStats) {
	g := by[k]
	if g == nil {
		g = &combtype.GroupedStats{Name: k}
		by[k] = g
	}
	g.Queues++
	g.Partitions += int64(qs.PartitionCount)
	addCounts(&g.Counts, qs.Counts)
}

// asciiLower lower-cases ASCII letters only, as SQLite's lower() does.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// ingestedSince counts the tenant's retained messages committed after
// since (µs): the frames of the segments committed since, found through
// the segments_time index, so it costs the segments of that last stretch.
func (s *Store) ingestedSince(ctx context.Context, tenant string, since int64) (int64, error) {
	var n int64
	err := s.r.QueryRowContext(ctx, `SELECT `+sumOf("s.frame_count")+` FROM segments s INDEXED BY segments_time
		WHERE s.created_at > ?1 AND s.partition_id IN (SELECT p.id FROM partitions p
			WHERE p.last_segment_at > ?1 AND p.queue_id IN (SELECT id FROM queues WHERE tenant = ?2))`, since, tenant).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count recent messages: %w", err)
	}
	return n, nil
}

// NamespaceStats groups tenant's queues by namespace, by name; queues
// without a namespace are left out.
func (s *Store) NamespaceStats(ctx context.Context, tenant string) ([]combtype.GroupedStats, error) {
	out, _, err := s.NamespacePage(ctx, tenant, combtype.Page{})
	return out, err
}

// NamespacePage is the page pg of NamespaceStats (Limit 0: all of it),
// and how many namespaces there are.
func (s *Store) NamespacePage(ctx context.Context, tenant string, pg combtype.Page) ([]combtype.GroupedStats, combtype.PageInfo, error) {
	return s.groupedStats(ctx, tenant, "namespace", func(q *combtype.Queue) string { return q.Namespace }, pg)
}

// TaskStats groups tenant's queues by task, by name; queues without a task
// are left out.
func (s *Store) TaskStats(ctx context.Context, tenant string) ([]combtype.GroupedStats, error) {
	out, _, err := s.TaskPage(ctx, tenant, combtype.Page{})
	return out, err
}

// TaskPage is the page pg of TaskStats (Limit 0: all of it), and how many
// tasks there are.
func (s *Store) TaskPage(ctx context.Context, tenant string, pg combtype.Page) ([]combtype.GroupedStats, combtype.PageInfo, error) {
	return s.groupedStats(ctx, tenant, "task", func(q *combtype.Queue) string { return q.Task }, pg)
}

// groupedStats reads a large queue's totals from the background sums, as
// the queue listing does: one not summed yet counts no partitions and no
// messages until the refresher's next round (docs/wire.md). col is the
// queues' column key reads (namespace or task, never a caller's text).
// Only the queues of the page's names are read and summed: at 10,000
// queues with no task, the task listing summed them all to answer
// nothing (0.1-0.23 s), and at 10,000 namespaces every request summed
// every queue.
//
// A tenant the background sums whole (a large one) is grouped from that
// sum, as the queue listing pages it: reading and summing the queues of a
// page of names read every queue when a few names held them all (50,000
// queues in 7 namespaces and one task: 1.7-2.7 s a listing).
func (s *Store) groupedStats(ctx context.Context, tenant, col string, key func(*combtype.Queue) string, pg combtype.Page) ([]combtype.GroupedStats, combtype.PageInfo, error) {
	s.tot.mu.Lock()
	_, summed := s.tot.tenants[tenant]
	s.tot.mu.Unlock()
	if summed {
		sum, err := s.Summary(ctx, tenant)
		if err != nil {
			return nil, combtype.PageInfo{}, err
		}
		out, info := groupSummary(sum, key, pg)
		return out, info, nil
	}
	info := combtype.PageInfo{}
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(DISTINCT `+col+`) FROM queues WHERE tenant = ? AND `+col+` != ''`,
		tenant).Scan(&info.Total); err != nil {
		return nil, info, fmt.Errorf("count %ss: %w", col, err)
	}
	limit, offset := pg.Limit, max(pg.Offset, 0)
	if limit <= 0 {
		limit = -1
	}
	queues, err := listQueues(ctx, s.r, `SELECT `+queueColumns+` FROM queues WHERE tenant = ?1 AND `+col+` IN
		(SELECT DISTINCT `+col+` FROM queues WHERE tenant = ?1 AND `+col+` != '' ORDER BY `+col+` LIMIT ?2 OFFSET ?3)`,
		tenant, limit, offset)
	if err != nil {
		return nil, info, err
	}
	totals, err := s.totals(ctx, s.r, tenant, queues, false)
	if err != nil {
		return nil, info, err
	}
	by := map[string]*combtype.GroupedStats{}
	for _, q := range queues {
		addToGroup(by, key(q), totals[q.ID])
	}
	out := make([]combtype.GroupedStats, 0, len(by))
	for _, g := range by {
		out = append(out, *g)
	}
	// SQLite orders names by bytes, as strings.Compare does.
	slices.SortFunc(out, func(a, b combtype.GroupedStats) int { return strings.Compare(a.Name, b.Name) })
	info.More = int64(offset+len(out)) < info.Total
	return out, info, nil
}
