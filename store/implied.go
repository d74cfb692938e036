package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/comb-broker/comb/combtype"
)

// Implied cursors. A group's subscription does not write a cursor on every
// partition of the queue: a partition the group never claimed, acked or
// sought on has no row, and its committed offset is what the subscription
// implies (seek.Implied). Every reader of cursors takes a missing row's
// committed from impliedExpr, the one spelling of that rule in SQL; a
// test holds it to seek.Implied and to what seeding used to write.
//
// What the rule needs of the subscription (alias s, LEFT JOINed on the
// partition's queue and the group, so NULL columns when there is none):
//
//   - start_seq, start_partition, start_mode, start_from: the registration
//     of a group subscribed without seeding. Partitions up to
//     start_partition existed then and start as start_mode said, from the
//     partition's head at registration: the end of its last segment whose
//     id is at most start_seq (segment ids follow commit order, store-wide:
//     see segmentSeq).
//   - mode, from_time, after_partition: where partitions met later start,
//     as before lazy cursors, and for every partition of a group that
//     subscribed before them (start_seq NULL; those have rows for the
//     partitions that existed when they subscribed): from the oldest
//     retained, or from a time when from_time is set and the partition is
//     not past after_partition.

// headAtSeqExpr is p's last offset when the segment sequence was seq, -1
// when it had no segment then (or retention removed all of those): the end
// of its newest segment whose id is at most seq. A partition not written
// since (its newest segment's id, last_segment_id, at most seq) is where it
// was. Otherwise segment ids grow with base_offset within a partition, so
// that segment is the first with an id at most seq walking back from the
// first mark written after seq (a segment holding a multiple of 64,
// segments_partition_mark, migrations/00018; the partition's end when none
// is): a walk over at most 63 segments, where from the newest segment it
// was one over every segment written since. The mark's rule is the index's
// WHERE, which the planner must see to use it.
func headAtSeqExpr(seq string) string {
	return `(CASE WHEN p.last_segment_id <= ` + seq + ` THEN p.last_offset ELSE
	COALESCE((SELECT h.base_offset + h.frame_count - 1 FROM segments h
		WHERE h.partition_id = p.id AND h.id <= ` + seq + ` AND h.base_offset < COALESCE(
			(SELECT m.base_offset FROM segments m INDEXED BY segments_partition_mark
				WHERE m.partition_id = p.id AND m.id > ` + seq + ` AND ` + segmentMarkExpr + `
				ORDER BY m.id LIMIT 1), p.last_offset + 1)
		ORDER BY h.base_offset DESC LIMIT 1), -1) END)`
}

// segmentMarkExpr is the WHERE of segments_partition_mark for alias m: the
// segment holds an offset that is a multiple of 64.
const segmentMarkExpr = `(m.base_offset + 63) / 64 * 64 < m.base_offset + m.frame_count`

// headAtStartExpr is p's last offset when s registered (headAtSeqExpr of
// its start_seq).
var headAtStartExpr = headAtSeqExpr("s.start_seq")

// placeTimeExpr is seek.Place's time branch on p for the time column t:
// just below the first retained segment committed at or after t (never
// below the floor), or the last offset when none is that recent. created_at
// never decreases with base_offset within a partition, so that segment is
// the first committed at or after t walking on from the last mark committed
// before t (segments_partition_mark_time, migrations/00018; the partition's
// start when none is): at most 63 segments, where from the partition's
// start the walk read every segment older than t.
func placeTimeExpr(t string) string {
	return `(CASE WHEN p.last_segment_at < ` + t + ` THEN p.last_offset ELSE COALESCE(
		(SELECT MAX(l.base_offset - 1, p.log_start - 1) FROM segments l INDEXED BY segments_partition_offset
			WHERE l.partition_id = p.id AND l.created_at >= ` + t + ` AND l.base_offset >= COALESCE(
				(SELECT m.base_offset FROM segments m INDEXED BY segments_partition_mark_time
					WHERE m.partition_id = p.id AND m.created_at < ` + t + ` AND ` + segmentMarkExpr + `
					ORDER BY m.created_at DESC LIMIT 1), 0)
			ORDER BY l.base_offset LIMIT 1),
		p.last_offset) END)`
}

// impliedExpr is the committed value a missing cursor of s's group on p is
// read as (seek.Implied, and the seeding of partitions met later).
var impliedExpr = impliedExprAt(headAtStartExpr)

// impliedExprAt is impliedExpr with head, an SQL value, as p's last offset
// when s registered (headAtStartExpr): for a reader that works the heads
// out once per partition and start_seq (headsAt), not once per group.
func impliedExprAt(head string) string {
	return `(CASE
	WHEN s.start_seq IS NOT NULL AND p.id <= s.start_partition THEN (CASE s.start_mode
		WHEN 'new' THEN MAX(` + head + `, p.log_start - 1)
		WHEN 'timestamp' THEN MAX(MIN(` + placeTimeExpr("s.start_from") + `, ` + head + `), p.log_start - 1)
		ELSE p.log_start - 1 END)
	WHEN s.from_time IS NULL OR s.after_partition < p.id THEN p.log_start - 1
	ELSE ` + placeTimeExpr("s.from_time") + ` END)`
}

// headsAt is a CTE, heads(pid, seq, head), of the head of each partition
// p of from (an SQL FROM item naming it p) that parts holds for (an SQL
// condition on p and r.seq) at each start_seq (r.seq) of the
// subscriptions subs holds for (an SQL condition on s) that start from
// new messages or a time. Groups that subscribe while nothing is written
// share a start_seq, and each one's head was walked to (headAtStartExpr)
// once per group: at 10,000 groups subscribed to new messages on 10
// partitions written since, 100,000 walks, most of a status read's or a
// queue detail's time (bench/results/heads-once-2026-12-03.md). A
// subscription's own from_time and start_from are its own: only the head
// is shared. Only the start_seqs two or more subscriptions share are
// worked out first: a group with a start_seq of its own walks to its
// heads beside its pairs, as before (sharedHead). Made for every
// start_seq, the heads of 1,000 groups each registered apart cost 40%
// more than the walks they replaced; made for the shared ones, 5-9%
// (BenchmarkListMessagesNewGroupsApartBehindWrites).
func headsAt(from, parts, subs string) string {
	return `heads(pid, seq, head) AS MATERIALIZED (SELECT p.id, r.seq, ` + headAtSeqExpr("r.seq") + `
		FROM (SELECT s.queue_id AS qid, s.start_seq AS seq FROM subscriptions s
				WHERE ` + subs + ` AND s.start_seq IS NOT NULL AND s.start_mode IN ('new', 'timestamp')
				GROUP BY 1, 2 HAVING COUNT(*) > 1) r
			CROSS JOIN ` + from + ` ON p.queue_id = r.qid AND ` + parts + `)`
}

// sharedHead is p's head when s registered, from the heads of headsAt
// LEFT JOINed as hs on (p.id, s.start_seq), else walked to
// (headAtStartExpr). A head is never NULL (-1 for none), and COALESCE
// reads its second argument only when the first is NULL.
var sharedHead = `COALESCE(hs.head, ` + headAtStartExpr + `)`

// mayBePendingExpr is false for a missing cursor that cannot have
// anything pending past the position its subscription implies, told from
// p's own columns without working the position out: a partition that
// existed at registration and was not written since, subscribed to new
// messages or from a time no segment of it reaches. The claim scan
// tests it first, so an idle group reads each partition's row and no
// segment.
var mayBePendingExpr = `(c.committed IS NOT NULL OR s.start_seq IS NULL OR p.id > s.start_partition
	OR s.start_mode = 'all' OR p.last_segment_id > s.start_seq
	OR (s.start_mode = 'timestamp' AND p.last_segment_at >= s.start_from))`

// committedExpr is the committed offset of the group of cursor c (LEFT
// JOINed, maybe NULL) and subscription s on p: the row's, else implied.
var committedExpr = `COALESCE(c.committed, ` + impliedExpr + `)`

// The lag figures of lag.go over committedExpr instead of c.committed.
var (
	groupNextExpr    = `MAX(` + committedExpr + ` + 1, p.log_start)`
	groupLagExpr     = `MAX(p.last_offset - ` + groupNextExpr + ` + 1, 0)`
	groupPendingExpr = `p.last_offset >= ` + groupNextExpr
	groupOldestExpr  = `CASE WHEN ` + groupPendingExpr + ` THEN (SELECT o.created_at FROM segments o
		WHERE o.partition_id = p.id AND o.base_offset <= ` + groupNextExpr + ` ORDER BY o.base_offset DESC LIMIT 1) END`
)

// groupPositionsIn is every position of a group on a partition, for the
// readers that list them: each (group, queue) pair that has a subscription
// or a cursor row gives one position on each partition of the queue that
// has a row or that the subscription implies a cursor on (all of them,
// when there is one). Aliases: gq (columns g, the group name, and qid), q,
// p, c (LEFT JOINed cursor) and s (LEFT JOINed subscription). With
// seeding, these were exactly the cursor rows.
//
// Only the pairs of the queues whose id is in queues (an SQL list or
// subquery, such as (SELECT id FROM queues WHERE tenant = ?1)) are read,
// and, unless group is "", of the group that is group (an SQL value, such
// as ?2). The pairs come from a UNION, and SQLite does not push a
// condition written outside a UNION into it: given outside, the pairs of
// every queue of the file were found first, through every cursor row, and
// a lag page of a one-partition queue beside a queue of a million took
// 0.2-0.8 s (bench/results/scoped-pairs-2026-12-03.md).
func groupPositionsIn(queues, group string) string {
	subs := `SELECT group_name AS g, queue_id AS qid FROM subscriptions WHERE queue_id IN ` + queues
	rows := `SELECT DISTINCT c.group_name, p.queue_id FROM partitions p INDEXED BY partitions_queue_id
			JOIN cursors c ON c.partition_id = p.id WHERE p.queue_id IN ` + queues
	if group != "" {
		subs += ` AND group_name = ` + group
		// A group's rows through cursors_group: as many as it has, where
		// the queues' partitions may be many more.
		rows = `SELECT DISTINCT c.group_name, p.queue_id FROM cursors c INDEXED BY cursors_group
			JOIN partitions p ON p.id = c.partition_id WHERE c.group_name = ` + group + ` AND p.queue_id IN ` + queues
	}
	// The pairs lead, and each brings its queue's partitions: led by a
	// condition on q (a tenant), SQLite walked every partition of the
	// tenant's queues and asked for the pairs of each.
	return `(` + subs + ` UNION ` + rows + `) gq
	CROSS JOIN queues q ON q.id = gq.qid
	CROSS JOIN partitions p ON p.queue_id = gq.qid
	LEFT JOIN cursors c ON c.partition_id = p.id AND c.group_name = gq.g
	LEFT JOIN subscriptions s ON s.queue_id = gq.qid AND s.group_name = gq.g
	WHERE (c.committed IS NOT NULL OR s.group_name IS NOT NULL)`
}

// tenantQueues is the subquery of the ids of the queues of the tenant
// given by the SQL value tenant, for groupPositionsIn.
func tenantQueues(tenant string) string {
	return `(SELECT id FROM queues WHERE tenant = ` + tenant + `)`
}

// segmentSeq is where the numbering of segments resumes at open: past
// every segment id and every registered start_seq. Segment ids are
// handed out in commit order by the writer, so a segment committed after
// a group registered has an id above its start_seq, even when the
// segment holding the highest id was deleted since (SQLite would hand its
// id out again).
func segmentSeq(ctx context.Context, db interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}) (int64, error) {
	var seq int64
	if err := db.QueryRowContext(ctx, `SELECT MAX(COALESCE((SELECT MAX(id) FROM segments), 0),
		COALESCE((SELECT MAX(start_seq) FROM subscriptions), 0))`).Scan(&seq); err != nil {
		return 0, fmt.Errorf("read segment sequence: %w", err)
	}
	return seq, nil
}

// idFloor is the least id a new queue and a new partition may take.
type idFloor struct{ queue, partition int64 }

// idFloors reads them: past the highest id that names a queue or a
// partition anywhere in the file. SQLite gives a new row the highest id
// of its table plus one, so a queue or partition row another program
// deleted by hand, the newest, left rows that named it (partitions,
// segments, cursors, subscriptions, which have no foreign keys) to the
// next one created: its pushes met the old segments' offsets and were
// answered 500, and a queue took over the deleted one's partitions and
// messages. comb's own deletes remove those rows with theirs. Each
// figure is the end of an index that leads with the id.
func idFloors(ctx context.Context, db interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}) (idFloor, error) {
	var f idFloor
	if err := db.QueryRowContext(ctx, `SELECT
		MAX(COALESCE((SELECT MAX(id) FROM queues), 0), COALESCE((SELECT MAX(queue_id) FROM partitions), 0),
			COALESCE((SELECT MAX(queue_id) FROM subscriptions), 0)) + 1,
		MAX(COALESCE((SELECT MAX(id) FROM partitions), 0), COALESCE((SELECT MAX(partition_id) FROM segments), 0),
			COALESCE((SELECT MAX(partition_id) FROM cursors), 0), COALESCE((SELECT MAX(partition_id) FROM tombstones), 0)) + 1`).
		Scan(&f.queue, &f.partition); err != nil {
		return idFloor{}, fmt.Errorf("read id floors: %w", err)
	}
	return f, nil
}

// groupCommittedExpr is the committed offset on p of the group that the
// SQL expression group names: its row's, else what its subscription
// implies; NULL when it has neither.
func groupCommittedExpr(group string) string {
	return `COALESCE((SELECT c.committed FROM cursors c WHERE c.partition_id = p.id AND c.group_name = ` + group + `),
		(SELECT ` + impliedExpr + ` FROM subscriptions s WHERE s.queue_id = p.queue_id AND s.group_name = ` + group + `))`
}

// leastCommittedExpr is the least committed offset on p over every group
// with a position on it, rows and implied; NULL when none has.
// A query that reads it defines heads (headsAt) for p: queuesHeads or
// one of its own.
var leastCommittedExpr = `(SELECT MIN(v) FROM (SELECT c.committed AS v FROM cursors c WHERE c.partition_id = p.id
	UNION ALL SELECT ` + impliedExprAt(sharedHead) + ` FROM subscriptions s
		LEFT JOIN heads hs ON hs.pid = p.id AND hs.seq = s.start_seq
		WHERE s.queue_id = p.queue_id
		AND NOT EXISTS (SELECT 1 FROM cursors x WHERE x.partition_id = p.id AND x.group_name = s.group_name)))`

// queuesHeads is headsAt for the partitions of the queues of the JSON
// array ?1 of ids, written since the start_seq (the others are at their
// last offset, which headAtStartExpr tells without a walk).
var queuesHeads = headsAt(`partitions p INDEXED BY partitions_queue_last_segment`, `p.last_segment_id > r.seq`,
	`s.queue_id IN (SELECT value FROM json_each(?1))`)

// lagOfCommitted is lagExpr for the committed offset expression committed.
func lagOfCommitted(committed string) string {
	return `MAX(p.last_offset - MAX(` + committed + ` + 1, p.log_start) + 1, 0)`
}

// pidsHeads is headsAt for the partitions of the JSON array ?1 of ids.
var pidsHeads = headsAt(`partitions p`, `p.id IN (SELECT value FROM json_each(?1))`,
	`s.queue_id IN (SELECT queue_id FROM partitions WHERE id IN (SELECT value FROM json_each(?1)))`)

// impliedOfPids is the FROM and WHERE of the cursors the subscriptions of
// subs (a table of subscriptions' columns) imply on the partitions of the
// JSON array ?1 of ids, where the group has no row: aliases p and s, and
// hs, the heads of pidsHeads, for impliedExprAt(sharedHead).
func impliedOfPids(subs string) string {
	return ` FROM partitions p JOIN ` + subs + ` s ON s.queue_id = p.queue_id
			LEFT JOIN heads hs ON hs.pid = p.id AND hs.seq = s.start_seq
		WHERE p.id IN (SELECT value FROM json_each(?1))
			AND NOT EXISTS (SELECT 1 FROM cursors c WHERE c.partition_id = p.id AND c.group_name = s.group_name)`
}

// impliedCursorsQuery is every implied cursor of the partitions ?1
// (eachImpliedCursor).
var impliedCursorsQuery = `WITH ` + pidsHeads + `
	SELECT p.id, s.group_name, ` + impliedExprAt(sharedHead) + impliedOfPids("subscriptions")

// impliedAboveFloorQuery is impliedCursorsQuery less the named groups
// (not ?2) that imply the floor everywhere (eachImpliedAboveFloor).
var impliedAboveFloorQuery = `WITH others AS MATERIALIZED (SELECT * FROM subscriptions s
		WHERE queue_id IN (SELECT queue_id FROM partitions WHERE id IN (SELECT value FROM json_each(?1)))
			AND (group_name = ?2 OR NOT ` + floorEverywhereExpr + `)), ` + pidsHeads + `
	SELECT p.id, s.group_name, ` + impliedExprAt(sharedHead) + impliedOfPids("others")

// eachImpliedCursor calls fn with each cursor that subscriptions imply on
// the partitions pids, where the group has no row, as a cursor not yet in
// the table (created); fn must not keep c.
func eachImpliedCursor(ctx context.Context, db querier, pids []int64, fn func(c *cursor)) error {
	return eachImpliedCursorOf(ctx, db, impliedCursorsQuery, pids, fn)
}

// eachImpliedAboveFloor is eachImpliedCursor less the named groups'
// cursors that impliedFloorCounts counts, left out before they meet a
// partition: a queue of 10 partitions read by 10,000 groups that start at
// the oldest message is 100,000 pairs otherwise.
func eachImpliedAboveFloor(ctx context.Context, db querier, pids []int64, fn func(c *cursor)) error {
	return eachImpliedCursorOf(ctx, db, impliedAboveFloorQuery, pids, fn, combtype.QueueModeGroup)
}

func eachImpliedCursorOf(ctx context.Context, db querier, query string, pids []int64, fn func(c *cursor), args ...any) error {
	rows, err := db.QueryContext(ctx, query, append([]any{jsonInts(pids)}, args...)...)
	if err != nil {
		return fmt.Errorf("read implied cursors: %w", err)
	}
	defer rows.Close()
	c := cursor{created: true}
	for rows.Next() {
		if err := rows.Scan(&c.partitionID, &c.group, &c.committed); err != nil {
			return fmt.Errorf("scan implied cursor: %w", err)
		}
		fn(&c)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read implied cursors: %w", err)
	}
	return nil
}

// floorImplied is, per partition of pids, how many named groups without
// a row there are at its floor by floorEverywhereExpr (counted, not read
// a row each), with the floor; eachImpliedAboveFloor reads every other
// implied cursor, the queue-mode group's included. Together they are
// every implied cursor.
type floorImplied struct{ n, floor int64 }

// impliedFloorCounts counts the implied cursors at the floor everywhere
// of pids: the subscriptions of each queue that floorEverywhereExpr holds
// for, counted once a queue, less those whose group has a row on the
// partition (the rows read first, each subscription found by its key:
// the other way round probes cursors once a group).
func impliedFloorCounts(ctx context.Context, db querier, pids []int64) (map[int64]floorImplied, error) {
	rows, err := db.QueryContext(ctx, `WITH everywhere AS MATERIALIZED (SELECT queue_id, COUNT(*) AS n FROM subscriptions s
				WHERE queue_id IN (SELECT queue_id FROM partitions WHERE id IN (SELECT value FROM json_each(?1)))
					AND group_name != ?2 AND `+floorEverywhereExpr+`
				GROUP BY queue_id)
		SELECT p.id, p.log_start - 1, e.n - (SELECT COUNT(*) FROM cursors c
				CROSS JOIN subscriptions s ON s.queue_id = p.queue_id AND s.group_name = c.group_name
				WHERE c.partition_id = p.id AND c.group_name != ?2 AND `+floorEverywhereExpr+`)
		FROM partitions p JOIN everywhere e ON e.queue_id = p.queue_id
		WHERE p.id IN (SELECT value FROM json_each(?1))`, jsonInts(pids), combtype.QueueModeGroup)
	if err != nil {
		return nil, fmt.Errorf("count implied cursors at the floor: %w", err)
	}
	defer rows.Close()
	out := map[int64]floorImplied{}
	for rows.Next() {
		var pid int64
		var f floorImplied
		if err := rows.Scan(&pid, &f.floor, &f.n); err != nil {
			return nil, fmt.Errorf("scan implied cursors at the floor: %w", err)
		}
		if f.n > 0 {
			out[pid] = f
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count implied cursors at the floor: %w", err)
	}
	return out, nil
}

// impliedLeast is, per partition of pids, what the cursors subscriptions
// imply there (where the group has no row) add to its counts: the least
// committed offset of the named groups' and their number, and the
// queue-mode group's, summed by SQLite rather than returned a row each (a
// queue of 10 partitions read by 10,000 groups has 90,000 of them).
type impliedLeast struct {
	named, qm          int64
	least, qmCommitted int64
}

// impliedFloorExpr holds for a subscription s that implies p's floor
// (log_start - 1) on p, where impliedExpr takes one of its branches that
// give the floor: a start at the oldest message, a partition made after
// the registration. False where it cannot tell at once (a start from new
// messages or a time, a NULL), never where the floor is not implied.
// Nothing implies less than the floor.
const impliedFloorExpr = `((s.start_seq IS NOT NULL AND p.id <= s.start_partition
		AND COALESCE(s.start_mode, '') NOT IN ('new', 'timestamp'))
	OR ((s.start_seq IS NULL OR p.id > s.start_partition) AND (s.from_time IS NULL OR s.after_partition < p.id)))`

// floorEverywhereExpr holds for a subscription s that implies the floor
// on every partition of its queue, told from s alone: one that neither
// started from new messages or a time (impliedExpr's first branch) nor
// has a time for partitions met later (its second and third).
const floorEverywhereExpr = `(COALESCE(s.start_mode, '') NOT IN ('new', 'timestamp') AND s.from_time IS NULL)`

// impliedLeasts sums the implied cursors of pids. Where a partition's
// subscriptions are many, working each one's position out cost a probe
// and the position rule a pair: 90,000 pairs, about 90 ms, at 10,000
// groups on 10 partitions. So the groups are counted (subscriptions less
// those with a row on the partition), and a partition where any group
// without a row is at the floor has the floor for its least, which one
// probe finds when most groups start at the oldest message; only the
// others are worked out pair by pair (impliedLeastsByPair), and so are
// the partitions of a queue whose groups mostly start from new messages
// or a time, where the probe would read every subscription to find none
// (at 10,000 such groups, 1.2 times the cost of the pairs alone).
func impliedLeasts(ctx context.Context, db querier, pids []int64) (map[int64]impliedLeast, error) {
	var rest, probe []int64
	rows, err := db.QueryContext(ctx, `SELECT p.id, q.later * 2 > q.subs
		FROM partitions p JOIN (SELECT s.queue_id, COUNT(*) AS subs,
				SUM(COALESCE(s.start_mode, '') IN ('new', 'timestamp')) AS later
			FROM subscriptions s WHERE s.queue_id IN (SELECT queue_id FROM partitions WHERE id IN (SELECT value FROM json_each(?1)))
			GROUP BY s.queue_id) q ON q.queue_id = p.queue_id
		WHERE p.id IN (SELECT value FROM json_each(?1))`, jsonInts(pids))
	if err != nil {
		return nil, fmt.Errorf("count subscriptions: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var pid int64
		var later bool
		if err := rows.Scan(&pid, &later); err != nil {
			return nil, fmt.Errorf("scan subscriptions: %w", err)
		}
		if later {
			rest = append(rest, pid)
		} else {
			probe = append(probe, pid)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count subscriptions: %w", err)
	}
	rows.Close()
	out := map[int64]impliedLeast{}
	if len(probe) == 0 {
		if len(rest) == 0 {
			return out, nil
		}
		return impliedLeastsByPair(ctx, db, rest)
	}
	// The probe only where some group has no row: where every one has
	// (a partition each group has claimed on), it would read every
	// subscription to find none, as long again as the count (100,000
	// groups: 0.1 s).
	rows, err = db.QueryContext(ctx, `WITH n AS MATERIALIZED (SELECT p.id, p.log_start,
			(SELECT COUNT(*) FROM subscriptions s WHERE s.queue_id = p.queue_id AND s.group_name != ?2)
			- (SELECT COUNT(*) FROM cursors c JOIN subscriptions s ON s.queue_id = p.queue_id AND s.group_name = c.group_name
				WHERE c.partition_id = p.id AND c.group_name != ?2) AS named
			FROM partitions p WHERE p.id IN (SELECT value FROM json_each(?1)))
		SELECT n.id, n.log_start, n.named, CASE WHEN n.named > 0 THEN
			EXISTS (SELECT 1 FROM subscriptions s WHERE s.queue_id = p.queue_id AND s.group_name != ?2 AND `+impliedFloorExpr+`
				AND NOT EXISTS (SELECT 1 FROM cursors c WHERE c.partition_id = p.id AND c.group_name = s.group_name))
			ELSE 0 END
		FROM n CROSS JOIN partitions p ON p.id = n.id`, jsonInts(probe), combtype.QueueModeGroup)
	if err != nil {
		return nil, fmt.Errorf("count implied cursors: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var pid, logStart, named int64
		var floor bool
		if err := rows.Scan(&pid, &logStart, &named, &floor); err != nil {
			return nil, fmt.Errorf("scan implied cursors: %w", err)
		}
		switch {
		case named > 0 && !floor:
			rest = append(rest, pid)
		case named > 0:
			out[pid] = impliedLeast{named: named, least: logStart - 1}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count implied cursors: %w", err)
	}
	rows.Close()
	// The queue-mode group's, one row at most a partition.
	rows, err = db.QueryContext(ctx, `SELECT p.id, `+impliedExpr+`
		FROM partitions p JOIN subscriptions s ON s.queue_id = p.queue_id AND s.group_name = ?2
		WHERE p.id IN (SELECT value FROM json_each(?1))
			AND NOT EXISTS (SELECT 1 FROM cursors c WHERE c.partition_id = p.id AND c.group_name = s.group_name)`,
		jsonInts(probe), combtype.QueueModeGroup)
	if err != nil {
		return nil, fmt.Errorf("read the implied queue-mode cursors: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var pid, v int64
		if err := rows.Scan(&pid, &v); err != nil {
			return nil, fmt.Errorf("scan implied cursors: %w", err)
		}
		il := out[pid]
		il.qm, il.qmCommitted = 1, v
		out[pid] = il
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the implied queue-mode cursors: %w", err)
	}
	rows.Close()
	if len(rest) == 0 {
		return out, nil
	}
	byPair, err := impliedLeastsByPair(ctx, db, rest)
	if err != nil {
		return nil, err
	}
	for pid, il := range byPair {
		out[pid] = il
	}
	return out, nil
}

// impliedLeastsByPair is impliedLeasts worked out for every pair of
// partition and subscription without a row.
// impliedLeastsQuery sums the implied cursors of the partitions ?1, the
// queue-mode group ?2's apart (impliedLeastsByPair).
var impliedLeastsQuery = `WITH ` + pidsHeads + `
	SELECT pid, SUM(NOT qm), SUM(qm),
		COALESCE(MIN(CASE WHEN qm THEN NULL ELSE v END), 0), COALESCE(MIN(CASE WHEN qm THEN v END), 0)
	FROM (SELECT p.id AS pid, s.group_name = ?2 AS qm, ` + impliedExprAt(sharedHead) + ` AS v` + impliedOfPids("subscriptions") + `)
	GROUP BY pid`

func impliedLeastsByPair(ctx context.Context, db querier, pids []int64) (map[int64]impliedLeast, error) {
	rows, err := db.QueryContext(ctx, impliedLeastsQuery, jsonInts(pids), combtype.QueueModeGroup)
	if err != nil {
		return nil, fmt.Errorf("sum implied cursors: %w", err)
	}
	defer rows.Close()
	out := map[int64]impliedLeast{}
	for rows.Next() {
		var pid int64
		var il impliedLeast
		if err := rows.Scan(&pid, &il.named, &il.qm, &il.least, &il.qmCommitted); err != nil {
			return nil, fmt.Errorf("scan implied cursors: %w", err)
		}
		out[pid] = il
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sum implied cursors: %w", err)
	}
	return out, nil
}
