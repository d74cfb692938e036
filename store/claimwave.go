package store

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/seek"
)

// Claim waves. One push to a queue wakes every pop parked on it, and with
// each pop in its own consumer group each claims the new message in its
// own group: thousands of claims reach the writer at once. One by one,
// each paid a look on a reader and five or so statements in the writer,
// in its own savepoint. Fused, the claims of one queue in one commit cost
// a few set-based statements for all of them: subscribe the groups that
// have no subscription, read every group's cursors (a missing row as its
// subscription implies: implied.go), lease what each is due, writing the
// cursor rows of the partitions it claims, in that order. What each claim
// takes is decided in Go exactly as claimOnce decides it, from the same
// rows; what would make a claim leave that path (a delay or window on the
// queue, a start from a time, autoAck) sends it to claimOnce on its own,
// after the wave.

// claimOp is one pop's claim, as the writer applies it alone (apply) or
// fused with the others of its queue (claimWaves).
type claimOp struct {
	// The queue: q when the pop looked it up, else by name (a woken pop).
	q             *combtype.Queue
	tenant, queue string
	req           *popReq

	// The outcome, set by whichever applied it.
	res   *combtype.PopResult // nil: nothing was due
	wake  time.Time           // when to look again, with nothing due
	found bool                // the queue exists: the group is subscribed once this commits
}

// apply claims alone, inside the op's own savepoint.
func (c *claimOp) apply(w *wtx) error {
	c.res, c.wake, c.found = nil, time.Time{}, false
	q, err := c.resolve(w)
	if err != nil || q == nil {
		return err
	}
	c.res, c.wake, err = w.claim(q, c.req)
	c.found = err == nil
	return err
}

// resolve returns the claim's queue, nil when there is none.
func (c *claimOp) resolve(w *wtx) (*combtype.Queue, error) {
	if c.q != nil {
		return c.q, nil
	}
	q, err := w.queue(c.tenant, c.queue, false)
	if errors.Is(err, combtype.ErrQueueNotFound) {
		return nil, nil
	}
	return q, err
}

// waveRamp sizes the commits of a wake. One push wakes every pop parked
// on its queue and their claims reach the writer together: taken a
// maxOps batch at a time, the first thousand replies waited for the whole
// first thousand claims to commit while the other processor, which
// sends them, had nothing to send. The first commit of a run of claims
// takes firstWaveClaims of them and each next one waveGrowth times as
// many, up to the batch bound, so replies start within a small commit's
// time and are sent while the larger ones commit. A commit that leaves
// nothing waiting ends the run.
type waveRamp struct{ limit int }

const (
	firstWaveClaims = 64
	waveGrowth      = 4
	maxWaveClaims   = 1 << 20 // beyond any batch bound
)

// claims is how many claims the next commit takes at most.
func (r *waveRamp) claims() int { return cmp.Or(r.limit, firstWaveClaims) }

// committed records a commit of batch with waiting ops queued behind it.
func (r *waveRamp) committed(batch []*writeOp, waiting int) {
	if waiting == 0 {
		r.limit = 0
		return
	}
	claims := 0
	for _, op := range batch {
		if op.claim != nil {
			claims++
		}
	}
	if claims >= r.claims() {
		r.limit = min(r.claims()*waveGrowth, maxWaveClaims)
	}
}

// maxWavePartitions bounds the queues a wave serves: it reads the cursor
// of every group it serves on every partition of the queue, where a claim
// alone stops its scan at the partitions it needs.
const maxWavePartitions = 64

// claimWaves applies the claims of run, a run of claim ops of a batch,
// that can be fused, two or more of one queue, as one wave per queue, and
// marks in done the ops it applied. The claims of a run were all pending
// at once and no other write comes between them, so applying them by
// queue rather than one after another is an order their callers could
// have seen. A wave that fails rolls back alone and its claims are
// applied one by one, as if it had not been tried. fresh: nothing was
// written yet in the writer's transaction (the run starts the batch).
func (w *wtx) claimWaves(run []*writeOp, done []bool, fresh bool) error {
	if w.s.noWaves {
		return nil
	}
	batch := run
	type wave struct {
		q   *combtype.Queue
		ops []int
	}
	var waves []*wave
	byQueue := map[int64]*wave{}
	for i, op := range batch {
		c := op.claim
		if c == nil || !op.isolated || c.req.AutoAck || c.req.Start.Mode == seek.ModeTimestamp {
			continue
		}
		q, err := c.resolve(w)
		if err != nil || q == nil || q.Options.DelayedProcessing > 0 || q.Options.WindowBuffer > 0 {
			continue // its own apply meets the error, the missing queue or the delay
		}
		wv := byQueue[q.ID]
		if wv == nil {
			wv = &wave{q: q}
			byQueue[q.ID] = wv
			waves = append(waves, wv)
		}
		wv.ops = append(wv.ops, i)
	}
	for _, wv := range waves {
		if len(wv.ops) < 2 {
			continue
		}
		cs := make([]*claimOp, len(wv.ops))
		for j, i := range wv.ops {
			cs[j] = batch[i].claim
		}
		applied, err := w.applyWave(wv.q, cs, fresh)
		if err != nil {
			return err
		}
		// A wave rolled back on a fresh transaction left it fresh.
		fresh = fresh && !slices.Contains(applied, true)
		for j, ok := range applied {
			done[wv.ops[j]] = ok
			if ok {
				w.s.stats.WaveClaims.Add(1)
			}
		}
	}
	return nil
}

// applyWave runs one wave in its own savepoint and reports which of cs it
// applied. Only the savepoint's own statements failing is an error.
//
// A wave that is the first write of its transaction (fresh) runs without
// a savepoint, and one that fails rolls the whole transaction back and
// begins it again: that undoes what rolling back to a savepoint would.
// SQLite copies every page a savepoint changes, as it was before, into
// the savepoint's journal, for a wake's wave a few hundred pages, each
// allocated anew and often faulted in. A wake's claims start their
// commits, which carry little else (the writer takes the claims it is
// handed first: gather).
func (w *wtx) applyWave(q *combtype.Queue, cs []*claimOp, fresh bool) ([]bool, error) {
	staged, groups := w.stagedMark(), w.groupMark()
	if !fresh {
		if _, err := w.s.execControl(w.ctx, "SAVEPOINT wave"); err != nil {
			return nil, fmt.Errorf("savepoint: %w", err)
		}
	}
	out, werr := w.claimWave(q, cs)
	if werr != nil {
		if err := w.undoWave(fresh); err != nil {
			return nil, err
		}
		w.forgetResolved(staged)
		w.groupUndo(groups)
		w.s.log.Debug("claim wave rolled back; its claims are applied one by one", "queue", q.Name, "err", werr)
	}
	if !fresh {
		if _, err := w.s.execControl(w.ctx, "RELEASE wave"); err != nil {
			return nil, fmt.Errorf("release savepoint: %w", err)
		}
	}
	if werr != nil {
		return make([]bool, len(cs)), nil
	}
	out.finish(w, q)
	return out.done, nil
}

// undoWave undoes what a failed wave wrote: back to its savepoint, or,
// for a wave that began a fresh transaction, the transaction, begun again.
func (w *wtx) undoWave(fresh bool) error {
	if !fresh {
		if _, err := w.s.execControl(w.ctx, "ROLLBACK TO wave"); err != nil {
			return fmt.Errorf("rollback to savepoint: %w", err)
		}
		return nil
	}
	// SQLite may have rolled it back itself (a full disk: noTransaction).
	if _, err := w.s.execControl(w.ctx, "ROLLBACK"); err != nil && !noTransaction(err) {
		return fmt.Errorf("rollback wave: %w", err)
	}
	if _, err := w.s.execControl(w.ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("begin after wave: %w", err)
	}
	// Another program may have committed between the two, as before any
	// transaction the writer begins (outside.go).
	if err := w.s.noticeOutsideCommits(w.ctx); err != nil {
		return fmt.Errorf("begin after wave: %w", err)
	}
	return nil
}

// waveOut is what a wave decided for each of its claims.
type waveOut struct {
	cs     []*claimOp
	done   []bool
	claims []waveClaim // by index in cs; for done ones only
}

type waveClaim struct {
	spans   []claimSpan
	msgs    []combtype.Message
	leaseID string
	wake    time.Time
}

// finish records what claimOnce records as it claims, once the wave holds:
// the partitions' turns, the leases handed out, frames evicted; and sets
// each claim's outcome.
func (o *waveOut) finish(w *wtx, q *combtype.Queue) {
	for i, c := range o.cs {
		if !o.done[i] {
			continue
		}
		wc := &o.claims[i]
		c.found = true
		if len(wc.spans) == 0 {
			c.res, c.wake = nil, wc.wake
			continue
		}
		res := &combtype.PopResult{Queue: q.Name, Group: c.req.Group, LeaseID: wc.leaseID, PartitionsClaimed: len(wc.spans),
			Partition: wc.spans[0].part.Name, PartitionID: wc.spans[0].part.UUID, Messages: wc.msgs}
		for _, sp := range wc.spans {
			w.s.turn.served(q.ID, c.req.Group, sp.part.Name)
			res.FramesEvicted += sp.evicted
			if sp.evicted > 0 {
				w.s.stats.FramesEvicted.Add(sp.evicted)
				w.s.log.Warn("retention removed frames a consumer group had not consumed",
					"queue", q.Name, "partition", sp.part.Name, "group", c.req.Group, "frames", sp.evicted)
			}
		}
		w.s.leased.put(wc.leaseID, wc.msgs)
		c.res, c.wake = res, time.Time{}
	}
}

// errWaveAside is a wave that met what only a claim alone handles.
var errWaveAside = errors.New("claim wave met a damaged segment")

// claimWave decides and writes the claims of cs, all on q and none of
// them autoAck or from a time. A claim it leaves undone is applied alone
// after it; an error rolls the whole wave back.
func (w *wtx) claimWave(q *combtype.Queue, cs []*claimOp) (*waveOut, error) {
	out := &waveOut{cs: cs, done: make([]bool, len(cs)), claims: make([]waveClaim, len(cs))}
	parts, err := w.waveParts(q.ID)
	if err != nil || parts == nil {
		return out, err // nil: too many partitions for a wave
	}
	now := micros(w.now)
	var groups []string
	first := make(map[string]*claimOp, len(cs))
	for _, c := range cs {
		if first[c.req.Group] == nil {
			first[c.req.Group] = c
			groups = append(groups, c.req.Group)
		}
	}
	if err := w.subscribeWave(q, groups, first); err != nil {
		return nil, err
	}
	due, err := w.waveCandidates(q.ID, parts, groups, now)
	if err != nil {
		return nil, err
	}
	quarantined := w.quarantined
	// The claims of one group take turns as they would one after another:
	// what one leased is not due for the next, which starts after it, and
	// sees the cursors it moved past deleted messages.
	// The maps of a wave are sized for it at once: grown one claim at a
	// time, each rehash wrote a larger table into memory the process had
	// never touched, which costs a page fault per page.
	taken := make(map[groupPartition]bool, len(cs))
	turn := make(map[string]string, len(groups))
	aside := map[string]bool{} // groups whose later claims go alone
	var leases []waveLease
	expires := addMicros(now, q.LeaseDuration().Microseconds())
	var idle []int // claims with nothing due: they need their wake time
	for i, c := range cs {
		g := c.req.Group
		if aside[g] {
			continue
		}
		after, ok := turn[g]
		if !ok {
			after = w.s.turn.next(q.ID, g)
		}
		limit := c.req.Partitions + 8
		cands := waveDue(due[g], taken, g, c.req.Partition, limit, after)
		spans, rowless, err := w.waveSpans(cands, c.req)
		if err != nil {
			return nil, err
		}
		if len(spans) == 0 {
			out.done[i] = true
			idle = append(idle, i)
			continue
		}
		leaseID := newLeaseID()
		msgs, kept, err := w.readSpans(q, c.req, spans, leaseID)
		if err != nil {
			return nil, err
		}
		if w.quarantined != quarantined {
			// A damaged segment moved cursors the rows read above hold.
			return nil, errWaveAside
		}
		for _, sp := range kept {
			taken[groupPartition{g, sp.part.ID}] = true
			turn[g] = sp.part.Name
			l := waveLease{Partition: sp.part.ID, Group: g, Lease: leaseID, From: sp.from, To: sp.to}
			for j, rc := range rowless {
				if rc != nil && rc.part.ID == sp.part.ID {
					l.Committed, l.New = rc.committed, true
					rowless[j] = nil
				}
			}
			leases = append(leases, l)
		}
		// A span chosen but not read (past the size limit, or sealed by
		// a missing key) still has its row written, as claimOnce writes
		// it before reading.
		for _, rc := range rowless {
			if rc == nil {
				continue
			}
			if err := w.materializeCursor(rc); err != nil {
				return nil, err
			}
		}
		if len(kept) == 0 {
			aside[g] = true
			continue
		}
		out.done[i] = true
		out.claims[i] = waveClaim{spans: kept, msgs: msgs, leaseID: leaseID}
	}
	if len(idle) > 0 {
		if err := w.waveWakes(q.ID, out, idle, expires, now); err != nil {
			return nil, err
		}
	}
	if len(leases) > 0 {
		if err := w.leaseWave(leases, expires); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// subscribeWave does for groups what subscribe does for each with a start
// at the oldest message or at the end (as the first claim of each asks):
// records a subscription for those with none, with the same registration
// (start_*) a claim alone records. It writes no cursor: as for a claim
// alone, a missing cursor is read as the subscription implies
// (implied.go), and the wave writes the rows of the partitions it claims.
func (w *wtx) subscribeWave(q *combtype.Queue, groups []string, first map[string]*claimOp) error {
	now := micros(w.now)
	type sub struct {
		group, mode string
		from        any // nil: from the oldest message
		// after: the registration point is recorded (a start from now).
		after bool
	}
	// A group known to be subscribed (subscribedSet: what a commit or a
	// read showed, forgotten by every delete of subscriptions, which also
	// runs in this writer) has its row: the insert would only find it.
	// The pops one push wakes are mostly such groups, parked by an earlier
	// pop that subscribed them.
	subs := make([]sub, 0, len(groups))
	for _, g := range groups {
		if w.s.subs.has(subKey{first[g].req.Tenant, q.Name, g}) {
			continue
		}
		e := sub{group: g, mode: seek.ModeAll}
		if first[g].req.Start.Mode == seek.ModeNew && g != combtype.QueueModeGroup {
			e = sub{group: g, mode: seek.ModeNew, from: now, after: true}
		}
		subs = append(subs, e)
	}
	// The columns subscribe writes, from the same values: start_seq is the
	// segment sequence now (this commit's pushes are flushed after every
	// op), start_partition the highest partition id. The rows are bound,
	// and the statement kept from a statement journal, as leaseWave does.
	for rows := range waveChunks(subs) {
		args := make([]any, 0, 3+4*len(rows))
		args = append(args, q.ID, now, w.s.segSeq)
		for _, e := range rows {
			args = append(args, e.group, e.mode, e.from, e.after)
		}
		res, err := w.ExecContext(w.ctx, `INSERT OR FAIL INTO subscriptions (queue_id, group_name, mode, from_time, created_at,
				after_partition, start_mode, start_from, start_seq, start_partition)
			SELECT ?, column1, column2, column3, ?,
				CASE WHEN column4 THEN (SELECT COALESCE(MAX(id), 0) FROM partitions) END,
				column2, column3, ?, (SELECT COALESCE(MAX(id), 0) FROM partitions)
			FROM (`+valuesList(len(rows), 4)+`) WHERE true
			ON CONFLICT (queue_id, group_name) DO NOTHING`, args...)
		if err != nil {
			return fmt.Errorf("insert subscriptions: %w", err)
		}
		// Past Options.MaxGroups the wave is rolled back and its claims
		// applied alone: each of a new group is refused by itself, and
		// those of subscribed groups are served.
		if err := w.countSubscriptions(res); err != nil {
			return err
		}
	}
	if len(subs) > 0 {
		w.s.groupJoined(q.ID)
	}
	return nil
}

// waveParts reads the partitions of queueID, by id, once for the whole
// wave; nil if there are more than maxWavePartitions.
func (w *wtx) waveParts(queueID int64) (map[int64]*combtype.Partition, error) {
	rows, err := w.QueryContext(w.ctx, `SELECT id, uuid, queue_id, name, last_offset, log_start, last_segment_at, created_at
		FROM partitions WHERE queue_id = ? LIMIT `+strconv.Itoa(maxWavePartitions+1), queueID)
	if err != nil {
		return nil, fmt.Errorf("read partitions: %w", err)
	}
	defer rows.Close()
	parts := map[int64]*combtype.Partition{}
	for rows.Next() {
		p := &combtype.Partition{}
		var created int64
		if err := rows.Scan(&p.ID, &p.UUID, &p.QueueID, &p.Name, &p.LastOffset, &p.LogStart, &p.LastSegmentAt, &created); err != nil {
			return nil, fmt.Errorf("read partition: %w", err)
		}
		p.CreatedAt = fromMicros(created)
		parts[p.ID] = p
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read partitions: %w", err)
	}
	if len(parts) > maxWavePartitions {
		return nil, nil
	}
	return parts, nil
}

// waveCandidates is scanCandidates for every group of a wave at once, all
// of each: the partitions of queueID (parts, as waveParts read them in
// this transaction) due for it, by group, in name order. Each row is a
// group's position on a partition, not the partition again: the
// partition's columns, the same for every group, were scanned, and its
// uuid and name copied, once per group and partition, and the group's
// name once per row; a row now names them by id and by index.
func (w *wtx) waveCandidates(queueID int64, parts map[int64]*combtype.Partition, groups []string, now int64) (map[string][]candidate, error) {
	arg, err := json.Marshal(groups)
	if err != nil {
		return nil, fmt.Errorf("encode groups: %w", err)
	}
	// As scanCandidates reads them: a missing row at the position the
	// group's subscription implies (implied.go), due when something is
	// pending past it.
	rows, err := w.QueryContext(w.ctx, `SELECT j.key, p.id, c.committed IS NOT NULL, `+committedExpr+`, c.lease_id,
		c.lease_expires_at, COALESCE(c.retry_count, 0)
		FROM json_each(?1) j JOIN partitions p ON p.queue_id = ?2
		LEFT JOIN cursors c ON c.partition_id = p.id AND c.group_name = j.value
		LEFT JOIN subscriptions s ON s.queue_id = p.queue_id AND s.group_name = j.value
		WHERE `+mayBePendingExpr+` AND `+groupPendingExpr+`
			AND (c.committed IS NULL OR NOT (`+liveLeaseAt+`?3))`, string(arg), queueID, now)
	if err != nil {
		return nil, fmt.Errorf("scan partitions: %w", err)
	}
	defer rows.Close()
	due := make(map[string][]candidate, len(groups))
	for rows.Next() {
		var c candidate
		var g int
		if err := rows.Scan(&g, &c.partitionID, &c.hasCursor, &c.committed, &c.leaseID, &c.leaseExpires, &c.retry); err != nil {
			return nil, fmt.Errorf("scan partition: %w", err)
		}
		p := parts[c.partitionID]
		if g < 0 || g >= len(groups) || p == nil {
			return nil, fmt.Errorf("scan partitions: row of group %d, partition %d not in the wave", g, c.partitionID)
		}
		c.part, c.group = *p, groups[g]
		due[c.group] = append(due[c.group], c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("scan partitions: %w", err)
	}
	for _, cs := range due {
		slices.SortFunc(cs, func(a, b candidate) int { return strings.Compare(a.part.Name, b.part.Name) })
	}
	return due, nil
}

// groupPartition is a partition of a group's, taken by a claim of the wave.
type groupPartition struct {
	group     string
	partition int64
}

// waveDue is what scanCandidates returns from cands, a group's due
// partitions in name order, less those taken earlier in the wave or moved
// past their end: those of partition only, if named; after the name given,
// wrapping around; at most limit unless a partition is named.
func waveDue(cands []candidate, taken map[groupPartition]bool, group, partition string, limit int, after string) []*candidate {
	var later, wrapped []*candidate
	for i := range cands {
		c := &cands[i]
		if taken[groupPartition{group, c.part.ID}] || (partition != "" && c.part.Name != partition) || c.next() > c.part.LastOffset {
			continue
		}
		if after == "" || c.part.Name > after {
			later = append(later, c)
		} else {
			wrapped = append(wrapped, c)
		}
	}
	due := append(later, wrapped...)
	if partition == "" && len(due) > limit {
		due = due[:limit]
	}
	return due
}

// waveSpans is the choice of spans claimOnce makes from due, for a queue
// without delay or window. A run of deleted messages where a span would
// start is skipped as claimOnce skips it, and the candidate in due (the
// group's own, shared by its later claims in the wave) moves with it.
//
// The group's first claim on a partition writes its cursor row, as
// claimOnce does (materializeCursor); a span's row is left to leaseWave,
// which writes it with its lease in the same statement, and such spans'
// candidates are returned in rowless.
func (w *wtx) waveSpans(due []*candidate, req *popReq) ([]claimSpan, []*candidate, error) {
	var spans []claimSpan
	var rowless []*candidate
	budget := int64(req.Batch)
	for _, c := range due {
		if len(spans) == req.Partitions || budget == 0 {
			break
		}
		committed := c.committed
		from := c.next()
		last := c.part.LastOffset
		var sp *claimSpan
		for from <= last && sp == nil {
			var skipTo int64
			var err error
			if sp, skipTo, err = w.trimTombstones(c, from, last, budget); err != nil {
				return nil, nil, err
			}
			if sp == nil {
				if !c.hasCursor {
					if err := w.materializeCursor(c); err != nil {
						return nil, nil, err
					}
				}
				if _, err := w.ExecContext(w.ctx, `UPDATE cursors SET committed = MAX(committed, ?)
					WHERE partition_id = ? AND group_name = ?`, skipTo, c.part.ID, req.Group); err != nil {
					return nil, nil, fmt.Errorf("skip deleted messages: %w", err)
				}
				c.committed = max(c.committed, skipTo)
				from = skipTo + 1
			}
		}
		if sp == nil {
			if !c.hasCursor {
				if err := w.materializeCursor(c); err != nil {
					return nil, nil, err
				}
			}
			continue
		}
		if !c.hasCursor {
			rowless = append(rowless, c)
		}
		if gap := c.part.LogStart - (committed + 1); gap > 0 {
			sp.evicted = gap
		}
		spans = append(spans, *sp)
		budget -= sp.to - sp.from + 1 - int64(len(sp.dead))
	}
	return spans, rowless, nil
}

// waveLease is one cursor a wave leases.
type waveLease struct {
	Partition int64
	Group     string
	Lease     string
	From      int64
	To        int64
	// New: the cursor has no row yet; it is written at Committed, the
	// position its subscription implies, with the lease.
	New       bool
	Committed int64
}

// leaseWave writes the leases of a wave, as claimOnce writes each: a
// lease still recorded has expired and makes this a redelivery; deleted
// messages before the span count as consumed. The rows a group's first
// claim on a partition must write (materializeCursor, then the lease) are
// inserted leased: one statement writes every cursor, where a row
// inserted and then updated cost a statement per row and each row twice.
//
// The rows are bound as parameters of a VALUES list, a chunk of them per
// statement: passed as one JSON array, SQLite turned each element into
// text and parsed it again for every field it read, and that was more
// than half of the wave's time in the writer (BenchmarkWakeManyGroups).
//
// The statements of a wave (these and subscribeWave's) call no SQL
// function and FAIL rather than ABORT on a broken constraint. Either a
// function call or ABORT makes SQLite open a statement journal around the
// statement, into which it copies every page the statement changes that
// existed before it: again for each statement, although the wave's
// savepoint, or the transaction when the wave runs first in it
// (applyWave), already holds them. A statement that fails part way
// leaves nothing behind either way, as its wave rolls back whole.
func (w *wtx) leaseWave(leases []waveLease, expires int64) error {
	var fresh, old []waveLease
	for _, l := range leases {
		if l.New {
			fresh = append(fresh, l)
		} else {
			old = append(old, l)
		}
	}
	var n int64
	for rows := range waveChunks(fresh) {
		// What materializeCursor and the update below together write: a
		// new row has redelivered nothing, and consumed up to its
		// implied position or, past deleted messages, the span's start.
		args := make([]any, 0, 2+6*len(rows))
		args = append(args, micros(w.now), expires)
		for _, l := range rows {
			args = append(args, l.Partition, l.Group, l.Lease, l.From, l.To, max(l.Committed, l.From-1))
		}
		res, err := w.ExecContext(w.ctx, `INSERT OR FAIL INTO cursors (partition_id, group_name, committed, created_at,
				lease_id, lease_from, lease_to, lease_expires_at)
			SELECT column1, column2, column6, ?, column3, column4, column5, ?
			FROM (`+valuesList(len(rows), 6)+`) WHERE true`, args...)
		if err != nil {
			return fmt.Errorf("claim partitions: %w", err)
		}
		m, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("claim partitions: %w", err)
		}
		n += m
	}
	for rows := range waveChunks(old) {
		args := make([]any, 0, 1+5*len(rows))
		args = append(args, expires)
		for _, l := range rows {
			args = append(args, l.Partition, l.Group, l.Lease, l.From, l.To)
		}
		res, err := w.ExecContext(w.ctx, `UPDATE OR FAIL cursors SET lease_id = v.column3, lease_from = v.column4,
			lease_to = v.column5, lease_expires_at = ?, redelivery_count = redelivery_count + (lease_id IS NOT NULL),
			committed = CASE WHEN committed >= v.column4 - 1 THEN committed ELSE v.column4 - 1 END
			FROM (`+valuesList(len(rows), 5)+`) AS v
			WHERE cursors.partition_id = v.column1 AND cursors.group_name = v.column2`, args...)
		if err != nil {
			return fmt.Errorf("claim partitions: %w", err)
		}
		m, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("claim partitions: %w", err)
		}
		n += m
	}
	if n != int64(len(leases)) {
		return fmt.Errorf("claim partitions: %d cursors leased, want %d", n, len(leases))
	}
	return nil
}

// maxWaveChunk bounds the rows of one statement of a wave. Every size a
// wave uses stays prepared in the writer's cache, and a statement holds a
// slot for each of its parameters: 1,024 rows saved little over 256.
const maxWaveChunk = 256

// waveChunks yields rows in chunks of maxWaveChunk and, for the rest, of
// falling powers of two, so the statements of every wave are of a few
// sizes and each is prepared once (the writer's statement cache is keyed
// by the text).
func waveChunks[T any](rows []T) iter.Seq[[]T] {
	return func(yield func([]T) bool) {
		for size := maxWaveChunk; len(rows) > 0; size /= 2 {
			for len(rows) >= size {
				if !yield(rows[:size]) {
					return
				}
				rows = rows[size:]
			}
		}
	}
}

// valuesList is a VALUES list of rows rows of cols parameters. They are
// anonymous: the driver asks SQLite for the name of every parameter it
// binds, and for numbered ones SQLite finds it by a walk of all the
// statement's names, which made binding a chunk quadratic in its size.
func valuesList(rows, cols int) string {
	row := "(?" + strings.Repeat(",?", cols-1) + ")"
	return "VALUES " + row + strings.Repeat(","+row, rows-1)
}

// waveWakes sets the wake time of the claims in idle, which found nothing
// due: leaseWake as each would have read it on its turn. The query runs
// before the wave's leases are written; the leases earlier claims of the
// same group took in the wave, which all expire at expires, are added.
func (w *wtx) waveWakes(queueID int64, out *waveOut, idle []int, expires, now int64) error {
	var groups []string
	seenGroup := map[string]bool{}
	for _, i := range idle {
		if g := out.cs[i].req.Group; !seenGroup[g] {
			seenGroup[g] = true
			groups = append(groups, g)
		}
	}
	arg, err := json.Marshal(groups)
	if err != nil {
		return fmt.Errorf("encode groups: %w", err)
	}
	rows, err := w.QueryContext(w.ctx, `SELECT j.value, p.name, c.lease_expires_at
		FROM json_each(?1) j JOIN partitions p ON p.queue_id = ?2
		JOIN cursors c ON c.partition_id = p.id AND c.group_name = j.value
		WHERE `+liveLeaseAt+`?3 AND `+pendingExpr, string(arg), queueID, now)
	if err != nil {
		return fmt.Errorf("find lease expiry: %w", err)
	}
	defer rows.Close()
	type key struct{ group, partition string } // partition "": any
	wakes := map[key]time.Time{}
	for rows.Next() {
		var k key
		var at int64
		if err := rows.Scan(&k.group, &k.partition, &at); err != nil {
			return fmt.Errorf("find lease expiry: %w", err)
		}
		wakes[k] = earliest(wakes[k], fromMicros(at))
		wakes[key{k.group, ""}] = earliest(wakes[key{k.group, ""}], fromMicros(at))
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("find lease expiry: %w", err)
	}
	leased := map[key]bool{} // by the claims of the wave so far
	for i, c := range out.cs {
		g, wc := c.req.Group, &out.claims[i]
		if out.done[i] && len(wc.spans) == 0 {
			wc.wake = wakes[key{g, c.req.Partition}]
			if leased[key{g, c.req.Partition}] {
				wc.wake = earliest(wc.wake, fromMicros(expires))
			}
		}
		for _, sp := range wc.spans {
			leased[key{g, sp.part.Name}] = true
			leased[key{g, ""}] = true
		}
	}
	return nil
}

// subscribedSet remembers which groups are known to be subscribed to a
// queue, by name, so a woken pop can tell whether its claim may be lazy
// without a look on a reader, and a wave which groups it need not offer
// the subscription insert. An entry is added only from what a commit or a
// read showed, and only if no subscription was deleted since that was
// taken (gen): every delete of subscriptions forgets them all, once as it
// runs and again when its transaction has ended (settle), since a read
// that began between the two still saw the rows it deletes.
type subscribedSet struct {
	mu      sync.Mutex
	gen     uint64
	m       map[subKey]struct{}
	pending bool // forgotten in the writer's open transaction
}

type subKey struct{ tenant, queue, group string }

// maxSubscribed bounds the set; past it, it starts over.
const maxSubscribed = 1 << 16

func (s *subscribedSet) generation() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}

func (s *subscribedSet) has(k subKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[k]
	return ok
}

// add records k, if nothing was forgotten since gen was read.
func (s *subscribedSet) add(k subKey, gen uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if gen != s.gen {
		return
	}
	if s.m == nil || len(s.m) >= maxSubscribed {
		s.m = map[subKey]struct{}{}
	}
	s.m[k] = struct{}{}
}

// forget is called by whatever deletes subscriptions, before it commits.
func (s *subscribedSet) forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	s.m = nil
	s.pending = true
}

// settle is called by the writer when a transaction has committed or
// rolled back: if it deleted subscriptions, what was added since it did,
// from reads that may have begun before its commit, is forgotten.
func (s *subscribedSet) settle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending {
		s.gen++
		s.m = nil
		s.pending = false
	}
}
