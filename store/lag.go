package store

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// Lag arithmetic. A partition stores last_offset - log_start + 1 messages.
// A cursor wants next = max(committed+1, log_start): frames evicted by
// retention are not lag. Offset lag is last_offset-next+1 when positive;
// time lag is the age of the segment holding next, the one segment a lag
// figure ever reads, found by the unique (partition_id, base_offset) index.
// Nothing here scans messages.
//
// Each figure is spelled once in SQL, over partition alias p and cursor
// alias c, and the ones Go computes too have their twin next to them.
const (
	// storedExpr is the number of messages p stores (storedCount).
	storedExpr = `MAX(p.last_offset - p.log_start + 1, 0)`
	// nextExpr is the first offset c still wants (nextOffset).
	nextExpr = `MAX(c.committed + 1, p.log_start)`
	// lagExpr is c's offset lag on p.
	lagExpr = `MAX(p.last_offset - ` + nextExpr + ` + 1, 0)`
	// pendingExpr is true when p holds something c still wants.
	pendingExpr = `p.last_offset >= ` + nextExpr
	// oldestExpr is the created_at of the oldest unconsumed segment, NULL
	// when nothing is pending.
	oldestExpr = `CASE WHEN ` + pendingExpr + ` THEN (SELECT s.created_at FROM segments s
		WHERE s.partition_id = p.id AND s.base_offset <= ` + nextExpr + ` ORDER BY s.base_offset DESC LIMIT 1) END`
)

// storedCount is storedExpr in Go.
func storedCount(p *combtype.Partition) int64 { return max(p.LastOffset-p.LogStart+1, 0) }

// nextOffset is nextExpr in Go: a cursor left below the retention
// watermark resumes at the first offset that exists.
func nextOffset(committed, logStart int64) int64 { return max(committed+1, logStart) }

func summarise(vals []float64) combtype.LagSummary {
	if len(vals) == 0 {
		return combtype.LagSummary{}
	}
	slices.Sort(vals)
	var sum float64
	for _, v := range vals {
		sum += v
	}
	median := vals[len(vals)/2]
	if len(vals)%2 == 0 {
		median = (vals[len(vals)/2-1] + vals[len(vals)/2]) / 2
	}
	return combtype.LagSummary{Avg: sum / float64(len(vals)), Median: median, Min: vals[0], Max: vals[len(vals)-1]}
}

// exactLagValues is how many figures a lagSummer keeps one by one
// (512 KiB) before it counts them in buckets.
const exactLagValues = 1 << 16

// lagSubBuckets is the number of buckets per power of two: a bucket's
// middle is within 1/512 of every value in it.
const lagSubBuckets = 256

// lagSummer summarises a lag figure over every cursor in bounded memory.
// A tenant's cursors, implied ones included, are partitions × groups: a
// million partitions read by 42 groups held 670 MB of figures to sort
// for an exact median. Avg, Min and Max stay exact; the median is exact
// up to exactLagValues figures and past them the middle of the
// logarithmic bucket holding it (within 0.2%, and within [Min, Max]).
type lagSummer struct {
	// whole is set for figures that are whole numbers (offsets): a bucket
	// middle is rounded, which gives back the figure itself below 512.
	whole         bool
	n             int64
	sum, min, max float64
	vals          []float64       // every figure while n <= exactLagValues
	buckets       map[int32]int64 // figures per bucket (lagBucket) once past it
}

func (l *lagSummer) add(v float64) { l.addN(v, 1) }

func (l *lagSummer) summary() combtype.LagSummary {
	if l.buckets == nil {
		return summarise(l.vals)
	}
	keys := make([]int32, 0, len(l.buckets))
	for k := range l.buckets {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	// at returns the bucket middle of the figure of rank r (0-based).
	at := func(r int64) float64 {
		for _, k := range keys {
			if r < l.buckets[k] {
				v := lagBucketMiddle(k)
				if l.whole {
					v = math.Round(v)
				}
				return min(max(v, l.min), l.max)
			}
			r -= l.buckets[k]
		}
		return l.max
	}
	median := at(l.n / 2)
	if l.n%2 == 0 {
		median = (at(l.n/2-1) + median) / 2
	}
	return combtype.LagSummary{Avg: l.sum / float64(l.n), Median: median, Min: l.min, Max: l.max}
}

// lagBucket is the bucket of a figure: lagSubBuckets per power of two,
// in the order of the figures; every figure at or below zero (lags are
// never negative) shares the first.
func lagBucket(v float64) int32 {
	if v <= 0 || math.IsNaN(v) {
		return math.MinInt32
	}
	frac, exp := math.Frexp(v) // v = frac × 2^exp, frac in [0.5, 1)
	return int32(exp)*lagSubBuckets + int32((frac-0.5)*2*lagSubBuckets)
}

// lagBucketMiddle is the middle of bucket k's range of figures.
func lagBucketMiddle(k int32) float64 {
	if k == math.MinInt32 {
		return 0
	}
	exp, sub := k/lagSubBuckets, k%lagSubBuckets
	if sub < 0 { // Go's / truncates: keep sub in [0, lagSubBuckets)
		exp, sub = exp-1, sub+lagSubBuckets
	}
	frac := 0.5 + (float64(sub)+0.5)/(2*lagSubBuckets)
	return math.Ldexp(frac, int(exp))
}

// addN adds the figure v w times, as w calls of add would, but for the
// rounding of the sum.
func (l *lagSummer) addN(v float64, w int64) {
	if w <= 0 {
		return
	}
	if l.n == 0 || v < l.min {
		l.min = v
	}
	if l.n == 0 || v > l.max {
		l.max = v
	}
	l.n += w
	l.sum += v * float64(w)
	if l.buckets == nil {
		if int64(len(l.vals))+w <= exactLagValues {
			for range w {
				l.vals = append(l.vals, v)
			}
			return
		}
		l.buckets = make(map[int32]int64)
		for _, x := range l.vals {
			l.buckets[lagBucket(x)]++
		}
		l.vals = nil
	}
	l.buckets[lagBucket(v)] += w
}

// Classes of a position without a cursor row (an implied one), told from
// the subscription s and p's own columns as impliedExpr's CASE tells
// them, NULLs included. In the start region (a partition that existed
// at registration) a new or timestamp group reads the head then, or a
// time; past it a group subscribed from a time (from_time) reads that
// time on partitions up to after_partition; every other implied position
// starts at p's oldest retained (allLikeExpr), so its figures are p's
// own, whatever the group.
const (
	inStartExpr = `(s.start_seq IS NOT NULL AND p.id <= s.start_partition)`
	allLikeExpr = `(CASE WHEN ` + inStartExpr + ` THEN COALESCE(s.start_mode NOT IN ('new', 'timestamp'), 1)
		ELSE COALESCE(s.from_time IS NULL OR s.after_partition < p.id, 0) END)`
	// storedOldestExpr is oldestExpr for a cursor at p's oldest retained.
	storedOldestExpr = `CASE WHEN p.last_offset >= p.log_start THEN (SELECT o.created_at FROM segments o
		WHERE o.partition_id = p.id AND o.base_offset <= p.log_start ORDER BY o.base_offset DESC LIMIT 1) END`
)

// lagOfNext and oldestOfNext are lagExpr and oldestExpr over the columns
// of impliedColumnsAt.
var (
	lagOfNext    = `MAX(l - n + 1, 0)`
	oldestOfNext = `CASE WHEN l >= n THEN (SELECT o.created_at FROM segments o
		WHERE o.partition_id = i AND o.base_offset <= n ORDER BY o.base_offset DESC LIMIT 1) END`
)

// sumLag summarises the offset and time lag of every position of the
// tenant's groups (groupPositionsIn) at now, reading only the positions
// that may lag. The rest are counted, not listed:
//
//   - a cursor row with nothing pending, and an implied position on a
//     partition that stores nothing, lags 0 on both figures;
//   - an implied position of a new or timestamp group on a partition that
//     existed at registration and was not written since (through
//     partitions_queue_last_segment), nor from the group's time (through
//     partitions_queue_last_segment_at), lags 0 (mayBePendingExpr is false
//     there);
//   - every other implied position that starts at p's oldest retained
//     lags what p stores, by the age of p's oldest segment: p is read
//     once and its figures added once per such group.
//
// Only cursor rows with something pending, new and timestamp positions
// on partitions written since, and positions placed by a time are read one
// by one. All reads share one snapshot, so the counts and the figures
// agree.
func (s *Store) sumLag(ctx context.Context, tenant string, now time.Time) (offsets, ages lagSummer, err error) {
	offsets, ages = lagSummer{whole: true}, lagSummer{}
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return offsets, ages, fmt.Errorf("begin lag read: %w", err)
	}
	defer tx.Rollback()
	nowUS := micros(now)
	add := func(lag int64, oldest sql.NullInt64, w int64) {
		offsets.addN(float64(lag), w)
		age := 0.0
		if oldest.Valid {
			age = max(float64(nowUS-oldest.Int64)/1e6, 0)
		}
		ages.addN(age, w)
	}
	// each adds the figures of every row of query, and counts them.
	each := func(what, query string, args ...any) (int64, error) {
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return 0, fmt.Errorf("read %s: %w", what, err)
		}
		defer rows.Close()
		var n int64
		for rows.Next() {
			var lag int64
			var oldest sql.NullInt64
			if err := rows.Scan(&lag, &oldest); err != nil {
				return 0, fmt.Errorf("scan %s: %w", what, err)
			}
			add(lag, oldest, 1)
			n++
		}
		if err := rows.Err(); err != nil {
			return 0, fmt.Errorf("read %s: %w", what, err)
		}
		return n, nil
	}

	// Positions, and the implied ones: every cursor row is one, and each
	// subscription has one on every partition of its queue where its
	// group has no row.
	var rowsN, rowsSubscribed, subscribed int64
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*), COUNT(s.group_name)
		FROM cursors c CROSS JOIN partitions p ON p.id = c.partition_id CROSS JOIN queues q ON q.id = p.queue_id
		LEFT JOIN subscriptions s ON s.queue_id = p.queue_id AND s.group_name = c.group_name
		WHERE q.tenant = ?`, tenant).Scan(&rowsN, &rowsSubscribed); err != nil {
		return offsets, ages, fmt.Errorf("count cursor rows: %w", err)
	}
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(n * (SELECT COUNT(*) FROM partitions p WHERE p.queue_id = qid)), 0)
		FROM (SELECT s.queue_id AS qid, COUNT(*) AS n FROM subscriptions s JOIN queues q ON q.id = s.queue_id
			WHERE q.tenant = ? GROUP BY s.queue_id)`, tenant).Scan(&subscribed); err != nil {
		return offsets, ages, fmt.Errorf("count implied positions: %w", err)
	}
	implied := subscribed - rowsSubscribed

	pending, err := each("lag of cursor rows", `SELECT `+lagExpr+`, `+oldestExpr+`
		FROM cursors c CROSS JOIN partitions p ON p.id = c.partition_id CROSS JOIN queues q ON q.id = p.queue_id
		WHERE q.tenant = ? AND `+pendingExpr, tenant)
	if err != nil {
		return offsets, ages, err
	}
	zeros := rowsN - pending

	placed, err := each("lag of implied positions", impliedLagQuery, tenant)
	if err != nil {
		return offsets, ages, err
	}

	// The rest start at p's oldest retained: p's figures, once for each
	// subscription allLikeExpr holds for on p (summed over id intervals,
	// not group by group), less its cursor rows of those groups.
	subs, err := tx.QueryContext(ctx, `SELECT s.queue_id, s.start_seq IS NOT NULL AND s.start_partition IS NOT NULL,
			COALESCE(s.start_partition, 0), COALESCE(s.start_mode IN ('new', 'timestamp'), 0),
			s.from_time IS NOT NULL, s.after_partition IS NOT NULL, COALESCE(s.after_partition, 0)
		FROM subscriptions s JOIN queues q ON q.id = s.queue_id WHERE q.tenant = ? ORDER BY s.queue_id`, tenant)
	if err != nil {
		return offsets, ages, fmt.Errorf("read subscriptions: %w", err)
	}
	spans := map[int64][]idSpan{}
	var qids []int64
	for subs.Next() {
		var qid, start, after int64
		var seqd, keyed, timed, hasAfter bool
		if err := subs.Scan(&qid, &seqd, &start, &keyed, &timed, &hasAfter, &after); err != nil {
			subs.Close()
			return offsets, ages, fmt.Errorf("scan subscription: %w", err)
		}
		if _, ok := spans[qid]; !ok {
			qids = append(qids, qid)
			spans[qid] = nil
		}
		spans[qid] = append(spans[qid], allLikeSpans(seqd, start, keyed, timed, hasAfter, after)...)
	}
	subs.Close()
	if err := subs.Err(); err != nil {
		return offsets, ages, fmt.Errorf("read subscriptions: %w", err)
	}
	var allLike int64
	for _, qid := range qids {
		n, err := s.sumStoredLag(ctx, tx, qid, spans[qid], add)
		if err != nil {
			return offsets, ages, err
		}
		allLike += n
	}
	offsets.addN(0, zeros+implied-placed-allLike)
	ages.addN(0, zeros+implied-placed-allLike)
	return offsets, ages, nil
}

// impliedLagQuery reads the figures of the tenant's (?1) implied
// positions that are not allLikeExpr and may lag: new and timestamp ones
// on partitions written since registration (partitions_queue_last_segment),
// timestamp ones on partitions last written from its time until then
// (partitions_queue_last_segment_at: the partitions written from the time
// on, not every partition that existed then), and those a from_time
// places past the start region. A partition's head at a registration is
// worked out once per start_seq (headsAt) where it was written since; in
// the second part it was not, so the head is its last offset
// (headAtSeqExpr), and the third is past the start region, where the rule
// takes no head.
var impliedLagQuery = `WITH ` + headsAt(`partitions p INDEXED BY partitions_queue_last_segment`, `p.last_segment_id > r.seq`,
	`s.queue_id IN `+tenantQueues("?1")) + `
	SELECT ` + lagOfNext + `, ` + oldestOfNext + ` FROM (SELECT ` + impliedColumnsAt(sharedHead) + `
		FROM subscriptions s JOIN queues q ON q.id = s.queue_id
			CROSS JOIN partitions p INDEXED BY partitions_queue_last_segment ON p.queue_id = s.queue_id AND p.last_segment_id > s.start_seq
		` + impliedJoin + ` LEFT JOIN heads hs ON hs.pid = p.id AND hs.seq = s.start_seq
		` + impliedWhere + ` AND s.start_seq IS NOT NULL AND p.id <= s.start_partition AND s.start_mode IN ('new', 'timestamp')
		UNION ALL SELECT ` + impliedColumnsAt("p.last_offset") + `
		FROM subscriptions s JOIN queues q ON q.id = s.queue_id
			CROSS JOIN partitions p INDEXED BY partitions_queue_last_segment_at ON p.queue_id = s.queue_id
				AND p.last_segment_at >= s.start_from
		` + impliedFrom + ` AND s.start_seq IS NOT NULL AND s.start_mode = 'timestamp'
			AND p.id <= s.start_partition AND p.last_segment_id <= s.start_seq
		UNION ALL SELECT ` + impliedColumnsAt("NULL") + `
		FROM subscriptions s JOIN queues q ON q.id = s.queue_id
			CROSS JOIN partitions p INDEXED BY partitions_queue_id ON p.queue_id = s.queue_id
				AND p.id > (CASE WHEN s.start_seq IS NOT NULL AND s.start_partition IS NOT NULL THEN s.start_partition ELSE -1 END)
				AND p.id <= COALESCE(s.after_partition, 9223372036854775807)
		` + impliedFrom + ` AND s.from_time IS NOT NULL
		LIMIT -1 OFFSET 0)`

// impliedFrom is where impliedLagQuery's positions come from: s's
// implied position on p, p storing something.
const (
	impliedFrom  = impliedJoin + impliedWhere
	impliedJoin  = ` LEFT JOIN cursors c ON c.partition_id = p.id AND c.group_name = s.group_name`
	impliedWhere = ` WHERE q.tenant = ?1 AND c.partition_id IS NULL AND p.last_offset >= p.log_start`
)

// impliedColumnsAt are, for the implied position of s on p, p's id (i),
// last offset (l) and the first offset the position wants (n), with head
// as p's head when s registered (impliedExprAt): the subscription's rule
// is worked out once per position, not once per figure. The OFFSET of
// impliedLagQuery keeps SQLite from flattening the subquery, which would
// copy the rule into each figure again.
func impliedColumnsAt(head string) string {
	return `p.id AS i, p.last_offset AS l, MAX(` + impliedExprAt(head) + ` + 1, p.log_start) AS n`
}

// idSpan is the partition ids from lo to hi, both included.
type idSpan struct{ lo, hi int64 }

// allLikeSpans is where allLikeExpr holds for a subscription, as spans of
// partition ids: seqd (start_seq and start_partition set), start
// (start_partition), keyed (start_mode new or timestamp), timed (from_time
// set), hasAfter and after (after_partition).
func allLikeSpans(seqd bool, start int64, keyed, timed, hasAfter bool, after int64) []idSpan {
	var out []idSpan
	past := int64(math.MinInt64) // the first id past the start region
	if seqd {
		if !keyed {
			out = append(out, idSpan{math.MinInt64, start})
		}
		if start == math.MaxInt64 {
			return out
		}
		past = start + 1
	}
	switch {
	case !timed:
		out = append(out, idSpan{past, math.MaxInt64})
	case hasAfter && after < math.MaxInt64:
		out = append(out, idSpan{max(past, after+1), math.MaxInt64})
	}
	return out
}

// sumStoredLag adds the figures of queue qid's partitions that store
// something, each weighted by the spans holding its id less its cursor
// rows whose group's subscription is allLikeExpr there, and returns the
// number of positions added. Only the ids the spans reach are read: new
// groups alone reach only the partitions created after them.
func (s *Store) sumStoredLag(ctx context.Context, tx *sql.Tx, qid int64, spans []idSpan, add func(int64, sql.NullInt64, int64)) (int64, error) {
	if len(spans) == 0 {
		return 0, nil
	}
	los, his := make([]int64, len(spans)), make([]int64, len(spans))
	for i, sp := range spans {
		los[i], his[i] = sp.lo, sp.hi
	}
	slices.Sort(los)
	slices.Sort(his)
	// The cursor rows of those groups on the queue, counted per partition
	// in id order and walked beside the partitions (SQLite steps both at
	// once): one pass over the rows, not a look-up per partition. A
	// group's rows are found through cursors_group, which holds them in
	// partition order, within the queue's span of ids.
	held, err := tx.QueryContext(ctx, `SELECT c.partition_id, COUNT(*) FROM subscriptions s
			CROSS JOIN cursors c INDEXED BY cursors_group ON c.group_name = s.group_name
				AND c.partition_id BETWEEN (SELECT MIN(id) FROM partitions WHERE queue_id = ?1)
					AND (SELECT MAX(id) FROM partitions WHERE queue_id = ?1)
			CROSS JOIN partitions p ON p.id = c.partition_id
		WHERE s.queue_id = ?1 AND p.queue_id = ?1 AND `+allLikeExpr+`
		GROUP BY c.partition_id ORDER BY c.partition_id`, qid)
	if err != nil {
		return 0, fmt.Errorf("read cursor rows: %w", err)
	}
	defer held.Close()
	heldID, heldN, more := int64(math.MinInt64), int64(0), true
	rows, err := tx.QueryContext(ctx, `SELECT p.id, `+storedExpr+`, `+storedOldestExpr+`
		FROM partitions p INDEXED BY partitions_queue_id WHERE p.queue_id = ?1 AND p.id BETWEEN ?2 AND ?3
			AND p.last_offset >= p.log_start ORDER BY p.id`, qid, los[0], slices.Max(his))
	if err != nil {
		return 0, fmt.Errorf("read stored lag: %w", err)
	}
	defer rows.Close()
	var total int64
	li, hi := 0, 0 // spans begun at or before id, spans ended before it
	for rows.Next() {
		var id, stored int64
		var oldest sql.NullInt64
		if err := rows.Scan(&id, &stored, &oldest); err != nil {
			return 0, fmt.Errorf("scan stored lag: %w", err)
		}
		for li < len(los) && los[li] <= id {
			li++
		}
		for hi < len(his) && his[hi] < id {
			hi++
		}
		for more && heldID < id {
			if more = held.Next(); more {
				if err := held.Scan(&heldID, &heldN); err != nil {
					return 0, fmt.Errorf("scan cursor rows: %w", err)
				}
			}
		}
		rowsThere := int64(0)
		if heldID == id {
			rowsThere = heldN
		}
		if w := int64(li-hi) - rowsThere; w > 0 {
			add(stored, oldest, w)
			total += w
		}
	}
	if err := held.Err(); err != nil {
		return 0, fmt.Errorf("read cursor rows: %w", err)
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("read stored lag: %w", err)
	}
	return total, nil
}

// sumOf is SUM(expr) for the figures listings and metrics add up, which
// never fails: SUM stops its statement with "integer overflow" past
// 2^63, which offsets or counts another program edited to extremes
// reach, and then every listing that added them answered 500. TOTAL adds
// in floating point, exactly up to 2^53, far beyond any count of
// messages, and CAST brings the sum back to an integer, clamped to
// int64's range. It is 0, not NULL, over no rows.
func sumOf(expr string) string { return `CAST(TOTAL(` + expr + `) AS INTEGER)` }
