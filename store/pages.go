package store

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// Paged listings. Each reads one page through an index in the listing's
// stable order, so its cost is the page, not the set: partitions by id
// through partitions_queue_id (queue_id, then rowid), a group's cursors by
// partition id through cursors_group (group_name, partition_id). A page
// asks for one row more than its limit to know whether another follows.
//
// Next tokens are the id of the last row, as a decimal string; they are
// opaque to clients, which only hand them back.

// afterID reads an After token; "" is the start.
func afterID(after string) (int64, error) {
	if after == "" {
		return 0, nil
	}
	id, err := strconv.ParseInt(after, 10, 64)
	if err != nil || id < 0 {
		return 0, fmt.Errorf("%w: after %q is not a position this listing handed out", combtype.ErrInvalid, after)
	}
	return id, nil
}

// pageBounds returns the LIMIT and OFFSET of pg's query: one row more than
// the page, and no offset when the page starts after a token.
func pageBounds(pg combtype.Page) (limit, offset int) {
	limit = pg.Limit
	if limit <= 0 || limit > combtype.MaxPageLimit {
		limit = combtype.MaxPageLimit
	}
	if pg.After != "" {
		return limit + 1, 0
	}
	return limit + 1, max(pg.Offset, 0)
}

// checkOffset refuses an offset past combtype.MaxPageOffset on a listing
// that hands out positions: the offset would walk every row before it
// (seconds at a million), where after costs the page.
func checkOffset(pg combtype.Page) error {
	if pg.After == "" && pg.Offset > combtype.MaxPageOffset {
		return fmt.Errorf("%w: offset %d is past %d: page on with after (pagination.next, or the next page in the Link header)",
			combtype.ErrInvalid, pg.Offset, combtype.MaxPageOffset)
	}
	return nil
}

// queueTotals sums the counts of every partition of each queue in ids
// without materialising the partitions: partitionCounts over a whole
// queue. Completed comes from each partition's status cursor (statusCursor:
// the queue-mode cursor, else the least advanced named one), read by
// primary-key seeks while walking the queue's partitions in id order.
// Processing needs the status cursor's live lease; leases are few, so the
// partitions holding one are found through cursors_lease and counted in
// Go. Dead letters are counted per queue through dlq_queue.
func queueTotals(ctx context.Context, db querier, tenant string, queues []*combtype.Queue, now int64) (map[int64]*combtype.QueueStats, error) {
	out := make(map[int64]*combtype.QueueStats, len(queues))
	if len(queues) == 0 {
		return out, nil
	}
	ids := make([]int64, len(queues))
	names := make([]string, len(queues))
	byName := map[string]*combtype.QueueStats{}
	for i, q := range queues {
		ids[i], names[i] = q.ID, q.Name
		out[q.ID] = &combtype.QueueStats{Queue: *q}
		byName[q.Name] = out[q.ID]
	}
	idList := jsonInts(ids)
	rows, err := db.QueryContext(ctx, `WITH `+queuesHeads+`
		SELECT queue_id, COUNT(*), `+sumOf("stored")+`,
		`+sumOf("CASE WHEN committed IS NULL THEN 0 ELSE MIN(MAX(committed - log_start + 1, 0), stored) END")+`, `+sumOf("log_start")+`
		FROM (SELECT p.queue_id, p.log_start, `+storedExpr+` AS stored,
			COALESCE(`+groupCommittedExpr("?2")+`, `+leastCommittedExpr+`) AS committed
			FROM partitions p WHERE p.queue_id IN (SELECT value FROM json_each(?1)))
		GROUP BY queue_id`, idList, combtype.QueueModeGroup)
	if err != nil {
		return nil, fmt.Errorf("sum queue counts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, n, evicted int64
		var c combtype.MessageCounts
		if err := rows.Scan(&id, &n, &c.Total, &c.Completed, &evicted); err != nil {
			return nil, fmt.Errorf("scan queue counts: %w", err)
		}
		if qs := out[id]; qs != nil {
			qs.PartitionCount, qs.Counts, qs.Evicted = int(n), c, evicted
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sum queue counts: %w", err)
	}
	rows.Close()
	leased, err := queryPartitions(ctx, db, `SELECT DISTINCT `+prefixed("p.", partitionColumns)+`
		FROM cursors c INDEXED BY cursors_lease JOIN partitions p ON p.id = c.partition_id
		WHERE c.lease_id IS NOT NULL AND c.lease_expires_at > ?2 AND p.queue_id IN (SELECT value FROM json_each(?1))`,
		idList, now)
	if err != nil {
		return nil, fmt.Errorf("sum queue counts: %w", err)
	}
	if len(leased) > 0 {
		pids := make([]int64, len(leased))
		for i, p := range leased {
			pids[i] = p.ID
		}
		// The status cursor may be one a subscription implies (implied.go).
		cursorsOf, err := readPartCursors(ctx, db, pids, now, impliedSummed, nil)
		if err != nil {
			return nil, fmt.Errorf("read leased cursors: %w", err)
		}
		for _, p := range leased {
			if qs := out[p.QueueID]; qs != nil {
				qs.Counts.Processing += partitionCounts(p, cursorsOf[p.ID].status(), now).Processing
			}
		}
	}
	for _, qs := range out {
		qs.Counts.Pending = qs.Counts.Total - qs.Counts.Completed - qs.Counts.Processing
	}
	live, err := dlqLive(ctx, db, tenant)
	if err != nil {
		return nil, err
	}
	dead, err := db.QueryContext(ctx, `SELECT queue_name, COUNT(*) FROM dlq
		WHERE tenant = ? AND queue_name IN (SELECT value FROM json_each(?))`+live+` GROUP BY queue_name`, tenant, jsonStrings(names))
	if err != nil {
		return nil, fmt.Errorf("count dead letters: %w", err)
	}
	defer dead.Close()
	for dead.Next() {
		var name string
		var n int64
		if err := dead.Scan(&name, &n); err != nil {
			return nil, fmt.Errorf("scan dead letter count: %w", err)
		}
		if qs := byName[name]; qs != nil {
			qs.Counts.DeadLetter = n
		}
	}
	return out, dead.Err()
}

// prefixed qualifies each column of a comma-separated list with prefix.
func prefixed(prefix, columns string) string {
	parts := strings.Split(columns, ",")
	for i, c := range parts {
		parts[i] = prefix + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}

// QueueSummaries returns the tenant's queues matching f, newest first,
// with their summed counts and partition counts but without their
// partitions: the queue listing, one aggregate per queue.
// A large queue not summed yet has zero counts and StatsAge NotSummed.
func (s *Store) QueueSummaries(ctx context.Context, tenant string, f combtype.QueueFilter) ([]*combtype.QueueStats, error) {
	return s.queueSummaries(ctx, tenant, f, false)
}

// queueSummaries is QueueSummaries, summing a large queue not summed yet
// now when wait is set (see totals).
func (s *Store) queueSummaries(ctx context.Context, tenant string, f combtype.QueueFilter, wait bool) ([]*combtype.QueueStats, error) {
	queues, err := filteredQueues(ctx, s.r, tenant, f)
	if err != nil {
		return nil, err
	}
	totals, err := s.totals(ctx, s.r, tenant, queues, wait)
	if err != nil {
		return nil, err
	}
	out := make([]*combtype.QueueStats, len(queues))
	for i, q := range queues {
		out[i] = totals[q.ID]
	}
	return out, nil
}

// QueueStatsPage returns one queue with the summed counts of all its
// partitions, and the page pg of its partitions (in creation order) with
// their own counts and segment times. PageInfo.Total is the queue's
// partition count. With pg.Limit 0 the page is the whole queue when it
// fits in MaxPageLimit, else DefaultQueuePageLimit partitions
// (PageInfo.Limit says which). An offset past MaxPageOffset is
// ErrInvalid. An unknown queue is ErrQueueNotFound.
func (s *Store) QueueStatsPage(ctx context.Context, tenant, name string, pg combtype.Page) (*combtype.QueueStats, combtype.PageInfo, error) {
	after, err := afterID(pg.After)
	if err != nil {
		return nil, combtype.PageInfo{}, err
	}
	if err := checkOffset(pg); err != nil {
		return nil, combtype.PageInfo{}, err
	}
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, combtype.PageInfo{}, fmt.Errorf("queue page: %w", err)
	}
	defer tx.Rollback()
	q, err := getQueue(ctx, tx, tenant, name)
	if err != nil {
		return nil, combtype.PageInfo{}, err
	}
	limit, offset := pageBounds(pg)
	parts, err := queryPartitions(ctx, tx, `SELECT `+partitionColumns+` FROM partitions
		WHERE queue_id = ? AND id > ? ORDER BY id LIMIT ? OFFSET ?`, q.ID, after, limit, offset)
	if err != nil {
		return nil, combtype.PageInfo{}, err
	}
	var info combtype.PageInfo
	if pg.Limit <= 0 {
		// No limit asked: the whole queue when it fits in one page (as
		// Queen answers), else a smaller page, since a page's cost is its
		// partitions' figures, not the rows read here.
		info.Limit = limit - 1
		if len(parts) == limit {
			info.Limit = combtype.DefaultQueuePageLimit
			parts = parts[:combtype.DefaultQueuePageLimit+1]
			limit = len(parts)
		}
	}
	if len(parts) == limit {
		parts = parts[:limit-1]
		info.More, info.Next = true, strconv.FormatInt(parts[len(parts)-1].ID, 10)
	}
	stats, _, err := s.statsOf(ctx, tx, []*combtype.Queue{q}, parts, true, false)
	if err != nil {
		return nil, combtype.PageInfo{}, err
	}
	totals, err := s.totals(ctx, tx, tenant, []*combtype.Queue{q}, false)
	if err != nil {
		return nil, combtype.PageInfo{}, err
	}
	qs := stats[0]
	t := totals[q.ID]
	qs.Counts, qs.PartitionCount, qs.Evicted, qs.Summarized, qs.StatsAge = t.Counts, t.PartitionCount, t.Evicted, t.Summarized, t.StatsAge
	info.Total = int64(qs.PartitionCount)
	if t.StatsAge < 0 {
		info.Total = -1 // not counted yet
	}
	return qs, info, nil
}

// GroupPage returns the page pg of one group's cursors, in partition
// creation order (across queues), with their lag and offsets. Total is
// not counted (-1).
func (s *Store) GroupPage(ctx context.Context, tenant, group string, pg combtype.Page) ([]combtype.PartitionLag, map[string]combtype.CursorOffsets, combtype.PageInfo, error) {
	info := combtype.PageInfo{Total: -1}
	after, err := afterID(pg.After)
	if err != nil {
		return nil, nil, info, err
	}
	if err := checkOffset(pg); err != nil {
		return nil, nil, info, err
	}
	limit, offset := pageBounds(pg)
	now := micros(s.clock.Now())
	// The group's positions are its rows and the cursors its subscriptions
	// imply (implied.go): partitions are walked in id order, and those it
	// has neither on are passed over. The walk follows the rowid (NOT
	// INDEXED, partitions first), so it stops once the page is full;
	// through the tenant's queues SQLite would read and figure every
	// partition of the tenant, then sort them (3.6 s for a page at a
	// million partitions). The walk starts at the group's first possible
	// position, the lowest of its first cursor row (cursors_group holds
	// the partition ids in order) and each subscribed queue's first
	// partition: a group on a queue made after 10,000 others passed their
	// partitions first (158–369 ms for the console's first page). It is
	// one bound, the larger of the two: given as two, SQLite started the
	// walk at the page's and tested the other on every partition it
	// passed (196 ms for a group whose only partition was the last of a
	// million).
	rows, err := s.r.QueryContext(ctx, `WITH first(id) AS (SELECT MIN(x) FROM (
			SELECT MIN(partition_id) AS x FROM cursors WHERE group_name = ?1
			UNION ALL SELECT (SELECT MIN(id) FROM partitions WHERE queue_id = s.queue_id)
				FROM subscriptions s WHERE s.group_name = ?1))
		SELECT p.id, ?1, q.name, p.name, p.uuid, c.lease_id,
		c.lease_expires_at, c.last_consumed_at, COALESCE(c.total_consumed, 0), `+groupLagExpr+`, `+groupOldestExpr+`,
		`+committedExpr+`, p.last_offset, p.log_start
		FROM partitions p NOT INDEXED CROSS JOIN queues q ON q.id = p.queue_id
		LEFT JOIN cursors c ON c.partition_id = p.id AND c.group_name = ?1
		LEFT JOIN subscriptions s ON s.queue_id = p.queue_id AND s.group_name = ?1
		WHERE p.id >= MAX(?2 + 1, (SELECT id FROM first)) AND q.tenant = ?3
			AND (c.committed IS NOT NULL OR s.group_name IS NOT NULL)
		ORDER BY p.id LIMIT ?4 OFFSET ?5`, group, after, tenant, limit, offset)
	if err != nil {
		return nil, nil, info, fmt.Errorf("read group page: %w", err)
	}
	defer rows.Close()
	var lags []combtype.PartitionLag
	var ids []int64
	offsets := map[string]combtype.CursorOffsets{}
	for rows.Next() {
		var l combtype.PartitionLag
		var c cursor
		var id int64
		var consumed, oldest sql.NullInt64
		var o combtype.CursorOffsets
		if err := rows.Scan(&id, &l.Group, &l.Queue, &l.Partition, &l.PartitionID, &c.leaseID, &c.leaseExpires,
			&consumed, &l.TotalConsumed, &l.OffsetLag, &oldest, &o.Committed, &o.LastOffset, &o.LogStart); err != nil {
			return nil, nil, info, fmt.Errorf("scan group page: %w", err)
		}
		l.LeaseID = c.leaseID.String
		l.LeaseActive = c.live(now)
		if consumed.Valid {
			l.LastConsumedAt = fromMicros(consumed.Int64)
		}
		if oldest.Valid {
			l.OldestUnconsumedAt = fromMicros(oldest.Int64)
			l.TimeLag = fromMicros(now).Sub(l.OldestUnconsumedAt)
			l.TimeLag = max(l.TimeLag, 0)
		}
		lags, ids = append(lags, l), append(ids, id)
		offsets[l.PartitionID] = o
	}
	if err := rows.Err(); err != nil {
		return nil, nil, info, fmt.Errorf("read group page: %w", err)
	}
	if len(lags) == limit {
		delete(offsets, lags[limit-1].PartitionID)
		lags = lags[:limit-1]
		info.More, info.Next = true, strconv.FormatInt(ids[limit-2], 10)
	}
	return lags, offsets, info, nil
}

// GroupsPage returns the page pg (Limit and Offset; After is refused) of
// the tenant's (group, queue) pairs, ordered by group then queue, with
// their lag; Total is the number of pairs. The pairs of a queue up to the
// live limit are found from its cursors and each pair of the page is
// summed for the reply; a larger queue's pairs and figures come from its
// background sum (groupstats.go), with StatsAge. Before that sum is made,
// a larger queue's pairs are its subscriptions and the groups with cursor
// rows on it, with zero figures and StatsAge NotSummed.
func (s *Store) GroupsPage(ctx context.Context, tenant string, pg combtype.Page) ([]combtype.GroupSummary, combtype.PageInfo, error) {
	return s.groupsPage(ctx, tenant, "", pg)
}

// groupPairSum sums one group's positions on one queue (?1 the group, ?2
// the queue): its cursors, those with lag, the lag, the oldest unconsumed
// message's time and what it consumed.
var groupPairSum = `SELECT COUNT(*), COALESCE(SUM(lag > 0), 0), ` + sumOf("lag") + `,
	COALESCE(MIN(oldest), 0), ` + sumOf("total_consumed") + `
	FROM (SELECT ` + groupLagExpr + ` AS lag, ` + groupOldestExpr + ` AS oldest, COALESCE(c.total_consumed, 0) AS total_consumed
		FROM partitions p LEFT JOIN cursors c ON c.partition_id = p.id AND c.group_name = ?1
		LEFT JOIN subscriptions s ON s.queue_id = p.queue_id AND s.group_name = ?1
		WHERE p.queue_id = ?2 AND (c.committed IS NOT NULL OR s.group_name IS NOT NULL))`

// groupsPage is GroupsPage over the queue named queue alone, or every
// queue when queue is "".
func (s *Store) groupsPage(ctx context.Context, tenant, queue string, pg combtype.Page) ([]combtype.GroupSummary, combtype.PageInfo, error) {
	info := combtype.PageInfo{Total: -1}
	if pg.After != "" {
		return nil, info, fmt.Errorf("%w: this listing pages with limit and offset only", combtype.ErrInvalid)
	}
	limit, offset := pageBounds(pg)
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, info, fmt.Errorf("groups page: %w", err)
	}
	defer tx.Rollback()
	var queues []*combtype.Queue
	if queue == "" {
		queues, err = s.tenantQueueKeys(ctx, tenant)
	} else {
		queues, err = queueKeys(ctx, tx, tenant, queue)
	}
	if err != nil {
		return nil, info, err
	}
	// A large queue not summed yet is not summed here (minutes at a
	// million cursors): its pairs are listed from the groups' own rows,
	// with no figures yet, and the refresher makes the sum.
	large, err := s.largeGroupStats(ctx, queues)
	if err != nil {
		return nil, info, err
	}
	type pair struct {
		group, queue string
		queueID      int64
		sum          *groupSum // nil: summed for this reply, unless unsummed
		age          time.Duration
		// unsummed: a large queue's pair before its first sum, answered
		// with zero figures. Its summary is made for the page only: one
		// each for 100,000 groups was 15 MB a listing.
		unsummed bool
	}
	n := 0
	for _, snap := range large {
		if snap.stats != nil {
			n += len(snap.stats.groups)
		}
	}
	pairs := make([]pair, 0, n)
	var small []int64
	names := map[int64]string{}
	for _, q := range queues {
		snap := large[q.ID]
		if snap == nil {
			small, names[q.ID] = append(small, q.ID), q.Name
			continue
		}
		if snap.stats == nil {
			groups, err := queueGroupNames(ctx, tx, q.ID)
			if err != nil {
				return nil, info, err
			}
			pairs = slices.Grow(pairs, len(groups))
			for _, g := range groups {
				pairs = append(pairs, pair{group: g, queue: q.Name, queueID: q.ID, unsummed: true})
			}
			continue
		}
		for i := range snap.stats.groups {
			pairs = append(pairs, pair{group: snap.stats.groups[i].Group, queue: q.Name, queueID: q.ID,
				sum: &snap.stats.groups[i], age: snap.age})
		}
	}
	if len(small) > 0 {
		// The pairs first, from the subscriptions and the cursors' primary
		// key (a subscribed group may have no row: implied.go), then the
		// figures of the page's pairs only.
		rows, err := tx.QueryContext(ctx, `SELECT group_name, queue_id FROM subscriptions
				WHERE queue_id IN (SELECT value FROM json_each(?1))
			UNION SELECT DISTINCT c.group_name, p.queue_id
			FROM partitions p INDEXED BY partitions_queue_id JOIN cursors c ON c.partition_id = p.id
			WHERE p.queue_id IN (SELECT value FROM json_each(?1))`, jsonInts(small))
		if err != nil {
			return nil, info, fmt.Errorf("list groups: %w", err)
		}
		for rows.Next() {
			var p pair
			if err := rows.Scan(&p.group, &p.queueID); err != nil {
				rows.Close()
				return nil, info, fmt.Errorf("scan group: %w", err)
			}
			p.queue = names[p.queueID]
			pairs = append(pairs, p)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, info, fmt.Errorf("list groups: %w", err)
		}
	}
	slices.SortFunc(pairs, func(a, b pair) int { return cmp.Or(cmp.Compare(a.group, b.group), cmp.Compare(a.queue, b.queue)) })
	info.Total = int64(len(pairs))
	page := pairs[min(offset, len(pairs)):min(offset+limit, len(pairs))]
	if len(page) == limit {
		page = page[:limit-1]
		info.More = true
	}
	now := micros(s.clock.Now())
	out := make([]combtype.GroupSummary, 0, len(page))
	// One statement for the page's sums: prepared for each pair, it was
	// most of a pair's cost (1 ms; a page of 1,000 pairs took a second).
	var pairSum *sql.Stmt
	defer func() {
		if pairSum != nil {
			pairSum.Close()
		}
	}()
	for _, pr := range page {
		if pr.unsummed {
			out = append(out, combtype.GroupSummary{Group: pr.group, Queue: pr.queue, Summarized: true,
				StatsAge: combtype.NotSummed})
			continue
		}
		if pr.sum != nil {
			g := pr.sum.GroupSummary
			if pr.sum.oldest > 0 {
				g.MaxTimeLag = max(fromMicros(now).Sub(fromMicros(pr.sum.oldest)), 0)
			}
			g.Summarized, g.StatsAge = true, pr.age
			out = append(out, g)
			continue
		}
		g := combtype.GroupSummary{Group: pr.group, Queue: pr.queue}
		if pairSum == nil {
			if pairSum, err = tx.PrepareContext(ctx, groupPairSum); err != nil {
				return nil, info, fmt.Errorf("prepare group sums: %w", err)
			}
		}
		var oldest int64
		err := pairSum.QueryRowContext(ctx, pr.group, pr.queueID).
			Scan(&g.Cursors, &g.PartitionsWithLag, &g.TotalLag, &oldest, &g.TotalConsumed)
		if err != nil {
			return nil, info, fmt.Errorf("sum group %q on %q: %w", pr.group, pr.queue, err)
		}
		if oldest > 0 {
			g.MaxTimeLag = max(fromMicros(now).Sub(fromMicros(oldest)), 0)
		}
		out = append(out, g)
	}
	return out, info, nil
}

// LaggingPage is LaggingPartitions a page at a time (Limit and Offset),
// oldest first. Finding the oldest rows of a queue up to the live limit
// reads every cursor's lag; a larger queue's come from the oldest pending
// cursors its background sum kept (groupstats.go), with StatsAge, unless
// the page reaches past them. A larger queue not summed yet has no rows
// in the page, and PageInfo.Unsummed counts it.
func (s *Store) LaggingPage(ctx context.Context, tenant string, minLag time.Duration, pg combtype.Page) ([]combtype.PartitionLag, combtype.PageInfo, error) {
	info := combtype.PageInfo{Total: -1}
	if pg.After != "" {
		return nil, info, fmt.Errorf("%w: this listing pages with limit and offset only", combtype.ErrInvalid)
	}
	limit, offset := pageBounds(pg)
	need := offset + limit // the rows each queue may contribute
	now := micros(s.clock.Now())
	cutoff := addMicros(now, -minLag.Microseconds())
	queues, err := s.tenantQueueKeys(ctx, tenant)
	if err != nil {
		return nil, info, err
	}
	// As in groupsPage, a large queue not summed yet is not summed here:
	// its rows are left out of the page until the refresher has made its
	// sum, and the page says how many queues it left out (Unsummed).
	large, err := s.largeGroupStats(ctx, queues)
	if err != nil {
		return nil, info, err
	}
	var rows []lagRow
	var live []int64
	for _, q := range queues {
		snap := large[q.ID]
		if snap == nil {
			live = append(live, q.ID)
			continue
		}
		if snap.stats == nil {
			info.Unsummed++
			continue
		}
		kept := snap.stats.lagging
		n, _ := slices.BinarySearchFunc(kept, cutoff, func(r lagRow, t int64) int { return cmp.Compare(r.oldest, t) })
		if n == len(kept) && !snap.stats.lagAll && n < need {
			live = append(live, q.ID) // the page reaches past the rows kept
			continue
		}
		for _, r := range kept[:min(n, need)] {
			r.Summarized, r.StatsAge = true, snap.age
			r.TimeLag = max(fromMicros(now).Sub(r.OldestUnconsumedAt), 0)
			rows = append(rows, r)
		}
	}
	if len(live) > 0 {
		lags, err := s.queryPartitionLags(ctx, laggingLiveQuery, tenant, cutoff, need, jsonInts(live))
		if err != nil {
			return nil, info, err
		}
		for _, l := range lags {
			rows = append(rows, lagRow{PartitionLag: l, oldest: micros(l.OldestUnconsumedAt)})
		}
	}
	slices.SortFunc(rows, func(a, b lagRow) int { return lagLess(&a, &b) })
	page := rows[min(offset, len(rows)):min(offset+limit, len(rows))]
	if len(page) == limit {
		page = page[:limit-1]
		info.More = true
	}
	out := make([]combtype.PartitionLag, len(page))
	for i := range page {
		out[i] = page[i].PartitionLag
	}
	return out, info, nil
}

// laggingLiveQuery is the oldest ?3 positions of tenant ?1 older than ?2
// on the queues of ?4, a JSON array of ids, for LaggingPage.
var laggingLiveQuery = `SELECT * FROM (` + partitionLagQuery(`(SELECT value FROM json_each(?4))`, "") + `
	AND q.tenant = ?1) WHERE oldest < ?2 ORDER BY oldest, 1, 2, 3 LIMIT ?3`

// queueKeys lists tenant's queues, or its queue named name when name is
// not "", with what the group listings read of them (id, uuid, tenant,
// name): scanning every column of 10,000 queues was most of the groups
// listing's time.
func queueKeys(ctx context.Context, db querier, tenant, name string) ([]*combtype.Queue, error) {
	return listQueueKeys(ctx, db, `SELECT id, uuid, tenant, name FROM queues WHERE tenant = ?1 AND (?2 = '' OR name = ?2)`,
		tenant, name)
}

// listQueueKeys is listQueues for a query of id, uuid, tenant and name.
func listQueueKeys(ctx context.Context, db querier, query string, args ...any) ([]*combtype.Queue, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	defer rows.Close()
	var out []*combtype.Queue
	for rows.Next() {
		q := &combtype.Queue{}
		if err := rows.Scan(&q.ID, &q.UUID, &q.Tenant, &q.Name); err != nil {
			return nil, fmt.Errorf("scan queue: %w", err)
		}
		out = append(out, q)
	}
	return out, rows.Err()
}
