package store

// The single writer: one goroutine owns the write connection, fuses the
// pending writes of all callers into one transaction, isolates each op that
// asks for it in a savepoint, retries a failed batch op by op, and answers
// every caller only once the commit is durable. What a commit does with the
// pushes it fused (one segment per partition) is in flush.go.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// A writeOp is one caller's write. The writer applies it inside the shared
// transaction and answers on done only after the commit is durable (for a
// lazy op, committed).
type writeOp struct {
	// apply runs inside the writer's transaction. An error from an isolated
	// op rolls back only that op; from any other op it fails the commit,
	// after which every op is retried alone so one bad op cannot fail its
	// neighbours.
	apply    func(w *wtx) error
	isolated bool
	// lazy ops are answered once their commit is visible, without waiting
	// for it to be durable: a commit of lazy ops only is not synced, and
	// the next commit that is syncs it with its own (one WAL, written in
	// order). Power lost in between undoes a suffix of lazy commits and
	// nothing else. Only claims are lazy: losing a lease means an earlier
	// redelivery, never a lost message.
	lazy bool
	// smallUndo ops change few rows that existed before them: a commit of
	// only such ops keeps its savepoints' undo in memory (setUndo).
	smallUndo bool
	// claim is set for a pop's claim, which the writer may apply fused
	// with the other claims of its queue in the batch (claimWaves).
	claim *claimOp
	// parked is the parked pop a handed claim is made for (handed.go).
	parked *ParkedPop
	// probe is set on the commit of nothing that tries the file's write
	// lock for the callers waiting out another program's (fileprobe.go).
	probe *FileProbe
	bytes int
	done  chan error
}

// submit hands op to the writer and waits for its committed outcome. The wait
// cannot be abandoned: once queued, the op will be committed or failed, and
// an answer to a caller who left is harmless.
func (s *Store) submit(ctx context.Context, op *writeOp) error {
	op.done = make(chan error, 1)
	select {
	case s.ops <- op:
	case <-s.ctx.Done():
		return combtype.ErrClosed
	case <-ctx.Done():
		return fmt.Errorf("queue write: %w", ctx.Err())
	}
	select {
	case err := <-op.done:
		return err
	case <-s.stopped:
		// The writer drains the channel before it stops, so an op still
		// unanswered here was never taken.
		select {
		case err := <-op.done:
			return err
		default:
			return combtype.ErrClosed
		}
	}
}

func (s *Store) runWriter() {
	defer close(s.stopped)
	defer s.stopProbes()
	batch := make([]*writeOp, 0, s.maxOps)
	// idle fires while the writer has nothing to do: every fileLookEvery
	// to look at the file and its -wal and -shm, and once idleDue has
	// passed without a commit, to shrink the WAL, or to make room on a
	// full disk.
	idle := time.NewTimer(fileLookEvery)
	defer idle.Stop()
	idleDue := time.Now().Add(walIdleAfter)
	var lg linger
	defer lg.stop()
	var ramp waveRamp
	for {
		// A claim handed to the writer (handed.go) needs no caller to
		// come: the writer takes it as it takes a queued op.
		first := s.nextHanded()
		if first == nil {
			select {
			case first = <-s.ops:
			case <-s.probes.ask:
				if first = s.probeOp(); first == nil {
					continue // a commit since it was asked answered it
				}
			case <-idle.C:
				now := time.Now()
				if !s.replaced.Load() && s.fileReplaced() {
					s.noteReplaced()
				}
				if !s.replaced.Load() && now.Before(idleDue) {
					idle.Reset(min(fileLookEvery, idleDue.Sub(now)))
					continue
				}
				// Planner statistics are looked for while idle too: the
				// readers plan with them whether or not anything is
				// written.
				s.lookOutside(now)
				if s.replaced.Load() {
					idle.Reset(statsCheckEvery) // nothing to tidy in a file no longer served
					continue
				}
				again := s.idleWork()
				if again <= 0 || again > statsCheckEvery {
					again = statsCheckEvery
				}
				idleDue = now.Add(again)
				idle.Reset(min(fileLookEvery, again))
				continue
			case <-s.ctx.Done():
				// Commit what callers already handed over, then stop.
				for {
					batch = batch[:0]
					s.gather(&batch, s.maxOps)
					if len(batch) == 0 {
						return
					}
					if batch = s.admit(batch); len(batch) > 0 {
						s.commit(batch)
					}
				}
			}
		}
		batch = append(batch[:0], first)
		s.gather(&batch, ramp.claims())
		s.lingerFor(&lg, &batch)
		start := time.Now()
		if admitted := s.admit(s.spareWaiters(batch)); len(admitted) > 0 {
			s.commit(admitted)
		}
		lg.expect(batch, len(s.ops), time.Since(start))
		ramp.committed(batch, len(s.ops)+len(s.handed))
		// The ops answered are dropped, or the array would hold the last
		// ones, and through them their requests' bodies (a 64 MiB push),
		// until later ops took their places.
		clear(batch)
		now := time.Now()
		s.lookOutside(now)
		idleDue = now.Add(walIdleAfter)
		idle.Reset(fileLookEvery)
	}
}

// gather takes whatever else is pending without waiting, up to maxClaims
// claims (waveRamp): the time the last commit took is what fills the next
// batch.
func (s *Store) gather(batch *[]*writeOp, maxClaims int) {
	size, claims := 0, 0
	for _, op := range *batch {
		size += op.bytes
		if op.claim != nil {
			claims++
		}
	}
	// The handed claims first, up to maxClaims: taken after the queued
	// ops, a commit carried few of them beside the acks of the consumers
	// already answered, and, below the ramp's size, never let it grow: a
	// wake of 10,000 took 150 commits of 64 claims. The queued ops then
	// fill the rest of the batch, so a producer's push waits for one
	// commit of claims, not for all of them.
	for len(*batch) < s.maxOps && size < s.maxBytes && claims < maxClaims {
		op := s.nextHanded()
		if op == nil {
			break
		}
		*batch = append(*batch, op)
		size += op.bytes
		claims++
	}
	for len(*batch) < s.maxOps && size < s.maxBytes {
		var op *writeOp
		select {
		case op = <-s.ops:
		default:
			return
		}
		*batch = append(*batch, op)
		size += op.bytes
		if op.claim != nil {
			if claims++; claims >= maxClaims {
				return
			}
		}
	}
}

// linger is what the writer knows, between commits, about the callers it
// just answered. A caller that writes again as soon as it is answered (a
// producer pushing one message at a time) comes back within a round trip,
// while the next commit would otherwise start with only the ops that came
// during the last one. With many such callers the commits then alternate
// between two halves of them, each commit paying its sync and its pages for
// half of the callers: 50 producers made commits of 22 ops. Waiting a
// little for the callers just answered merges the halves, so that one
// commit carries them all, for half the syncs. The wait is at most
// lingerCommits times what the last commit took, and at most maxLinger; a
// lone caller is never waited for, as it is the one op the writer expects.
type linger struct {
	want   int           // ops the next commit waits for
	budget time.Duration // the longest it waits for them
	timer  *time.Timer
}

// maxLinger bounds the wait however slow commits are: beyond it, a caller's
// own latency matters more than the commit it could share.
const maxLinger = 4 * time.Millisecond

// lingerCommits is how many times the last commit's duration the writer
// waits, within maxLinger, for the callers it answered. Their way back (the
// reply, the client's next request, its parsing) takes CPU time per caller,
// not per commit: on a busy machine the last of fifty producers came back
// after more than one commit's time, and a wait of one commit's time cut
// commits to about 36 of the 50 ops, each commit paying its sync and its
// pages for fewer messages. Waiting up to four commit times carried 43-46.
const lingerCommits = 4

// expect records a commit of batch that took took, with waiting ops
// already queued behind it. Only the callers of durable ops are waited
// for: a claim is answered without a sync, and its caller (a consumer, who
// acknowledges next) must not wait for other callers' syncs.
func (l *linger) expect(batch []*writeOp, waiting int, took time.Duration) {
	answered := 0
	for _, op := range batch {
		if !op.lazy {
			answered++
		}
	}
	l.want, l.budget = answered+waiting, min(lingerCommits*took, maxLinger)
}

func (l *linger) stop() {
	if l.timer != nil {
		l.timer.Stop()
	}
}

// lingerFor adds to batch the ops that arrive, within the linger budget,
// until it holds as many as the last commit answered and left waiting, or
// until a claim arrives, which is not kept waiting.
func (s *Store) lingerFor(l *linger, batch *[]*writeOp) {
	want := min(l.want, s.maxOps)
	if len(*batch) >= want || l.budget <= 0 {
		return
	}
	size := 0
	for _, op := range *batch {
		if op.lazy || op.claim != nil {
			return
		}
		size += op.bytes
	}
	if size >= s.maxBytes {
		return
	}
	if l.timer == nil {
		l.timer = time.NewTimer(l.budget)
	} else {
		l.timer.Reset(l.budget)
	}
	defer l.timer.Stop()
	for len(*batch) < want && size < s.maxBytes {
		select {
		case op := <-s.ops:
			*batch = append(*batch, op)
			size += op.bytes
			if op.lazy || op.claim != nil {
				return
			}
		case <-l.timer.C:
			return
		case <-s.ctx.Done():
			return
		}
	}
}

func (s *Store) commit(batch []*writeOp) {
	if s.replaced.Load() {
		// The path names another file now (replaced.go): nothing more is
		// written to this one.
		s.probed(batch, combtype.ErrReplaced)
		for _, op := range batch {
			op.apply = nil
			op.done <- combtype.ErrReplaced
		}
		return
	}
	if s.sideCut() {
		// SQLite would write past the gap of a cut WAL, or checkpoint it
		// into the file (sidecut.go).
		s.noteReplaced()
		s.commit(batch)
		return
	}
	errs, notify, err := s.runBatch(batch)
	if err != nil && isFull(err) && s.onFull(batch) {
		// The disk filled and the reserve was just given back: what
		// carries payloads is refused, the rest (deletes, retention, acks)
		// is tried again in the room that made.
		if batch = s.admit(batch); len(batch) == 0 {
			return
		}
		errs, notify, err = s.runBatch(batch)
	}
	if err == nil && s.fileReplaced() {
		// Committed to a file the path no longer names: not kept, for
		// whoever reads the path, so not answered as kept. Unless only a
		// -wal or -shm was removed: the commit is then in the WAL at the
		// path, or copied out of the removed one into the file.
		s.noteReplaced()
		if !s.keptBesideRemoved() {
			s.commit(batch)
			return
		}
	}
	s.noteFileBusy(err)
	s.noteUnwritable(err)
	if err == nil || isBusy(err) || len(batch) == 1 {
		s.probed(batch, err)
	}
	if err != nil && len(batch) > 1 && !isBusy(err) && !isUnwritable(err) {
		// Find the op that broke the batch by giving each its own commit.
		for _, op := range batch {
			s.commit([]*writeOp{op})
		}
		return
	}
	var reparked []bool
	if err == nil {
		// A parked pop whose claim found nothing waits on, unwoken; then
		// the pops parked on the queues this commit changed are taken
		// before anyone is answered (whoever pushed finds them taken),
		// and the writer makes their claims next (handed.go).
		for i, op := range batch {
			if op.parked != nil && errs[i] == nil && s.reparked(op) {
				if reparked == nil {
					reparked = make([]bool, len(batch))
				}
				reparked[i] = true
			}
		}
		s.handed = append(s.handed, s.watch.notify(notify)...)
	}
	for i, op := range batch {
		if reparked != nil && reparked[i] {
			op.apply = nil
			continue
		}
		// The closure holds the request (a 32 MiB payload, say): drop it
		// before the answer, since the caller may go on and the writer's
		// own references go only after the whole batch is answered.
		op.apply = nil
		// A full disk fails the write, not the writer: SQLite has rolled
		// the transaction back, and the next commit starts clean.
		if err != nil {
			op.done <- classify(err)
		} else {
			op.done <- classify(errs[i])
		}
	}
}

// noteFileBusy logs when another program's write transaction begins to
// keep the writer out of the file, and when it ends, once each: while it
// lasts every commit waits out the busy timeout and fails whole, having
// written nothing (there is no op to blame, so the batch is not split
// into commits of one op, each of which would wait as long again).
func (s *Store) noteFileBusy(err error) {
	busy := err != nil && isBusy(err)
	switch {
	case busy && !s.fileBusy:
		s.log.Warn("another program holds a write transaction on the database file (a sqlite3 session or DB browser that has not committed?); writes are refused until it ends",
			"path", s.path, "err", err)
	case !busy && s.fileBusy && err == nil:
		s.log.Info("the other program's write transaction on the database file ended; writes go on", "path", s.path)
	}
	s.fileBusy = busy || (s.fileBusy && err != nil)
	s.fileBusyNow.Store(s.fileBusy)
}

// noteUnwritable logs when commits begin to fail because the file system
// refuses the file (read-only, immutable, a disk error) and when one
// succeeds again, once each, and keeps Health unhealthy meanwhile. Such a
// failure is no op's fault, so the batch is not split to find one.
func (s *Store) noteUnwritable(err error) {
	failing := err != nil && isUnwritable(err)
	switch {
	case failing && !s.unwritable.Load():
		s.log.Warn("the database file cannot be written (a read-only file system, an immutable file, permissions taken away, a disk error?): writes are refused until it can",
			"path", s.path, "err", err)
		s.unwritable.Store(true)
	case err == nil && s.unwritable.Load():
		s.log.Info("the database file can be written again; writes go on", "path", s.path)
		s.unwritable.Store(false)
	}
}

// runBatch applies batch in one transaction and commits it.
// errWriterPanic is the error of a commit that panicked (runBatch).
var errWriterPanic = errors.New("writer fault")

func (s *Store) runBatch(batch []*writeOp) (errs []error, notify []watchChange, err error) {
	// Settled when the transaction has ended and before any caller is
	// answered: a caller that goes on at once must find the set as its
	// write left it, not cleared under it a moment later.
	defer s.subs.settle()
	start := time.Now()
	ctx := context.Background() // a commit in progress is never abandoned
	tx := s.wconn
	if err := s.setSync(ctx, batch); err != nil {
		return nil, nil, err
	}
	if err := s.setUndo(ctx, batch); err != nil {
		return nil, nil, err
	}
	if _, err := s.execControl(ctx, "BEGIN IMMEDIATE"); err != nil {
		return nil, nil, fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if r := recover(); r != nil {
			// A fault in comb's own code for one op (a value another
			// program wrote that nothing expected: a slice sized by an
			// edited frame count panicked here) is that commit's failure,
			// not the process's: rolled back like any failed commit, its
			// ops retried alone, the culprit answered with an error and
			// every other client served on.
			s.stats.WriterPanics.Add(1)
			s.log.Error("the writer's commit panicked; rolled back", "panic", r, "stack", string(debug.Stack()))
			errs, notify, err = nil, nil, fmt.Errorf("%w: the commit panicked: %v", errWriterPanic, r)
		}
		if err != nil {
			s.rows.forget()
			if _, rerr := s.execControl(ctx, "ROLLBACK"); rerr != nil && !noTransaction(rerr) {
				err = errors.Join(err, fmt.Errorf("rollback: %w", rerr))
			}
		}
	}()
	if err := s.noticeOutsideCommits(ctx); err != nil {
		return nil, nil, err
	}
	w := newWtx(ctx, s, tx)
	errs = make([]error, len(batch))
	// Each run of claims is fused by queue as it comes (claimWaves);
	// waved marks the claims a wave applied.
	waved := make([]bool, len(batch))
	runEnd := 0
	for i, op := range batch {
		if i >= runEnd && op.claim != nil {
			for runEnd = i; runEnd < len(batch) && batch[runEnd].claim != nil; runEnd++ {
			}
			if err := w.claimWaves(batch[i:runEnd], waved[i:runEnd], i == 0); err != nil {
				return nil, nil, err
			}
		}
		if waved[i] {
			continue
		}
		if !op.isolated {
			if err := op.apply(w); err != nil {
				return nil, nil, err
			}
			continue
		}
		staged, counted, groups := w.stagedMark(), w.nqueues, w.groupMark()
		if _, err := s.execControl(ctx, "SAVEPOINT op"); err != nil {
			return nil, nil, fmt.Errorf("savepoint: %w", err)
		}
		if opErr := op.apply(w); opErr != nil {
			errs[i] = opErr
			if _, err := s.execControl(ctx, "ROLLBACK TO op"); err != nil {
				return nil, nil, fmt.Errorf("rollback to savepoint: %w", err)
			}
			w.forgetResolved(staged)
			w.nqueues = counted
			w.groupUndo(groups)
		}
		if _, err := s.execControl(ctx, "RELEASE op"); err != nil {
			return nil, nil, fmt.Errorf("release savepoint: %w", err)
		}
	}
	if err := w.flush(); err != nil {
		return nil, nil, err
	}
	s.commitSeq.Add(1) // odd: readers may see the commit (idle.go)
	s.idle.changing(w.changed, w.changedParts, false)
	_, err = s.execControl(ctx, "COMMIT")
	s.idle.changing(w.changed, w.changedParts, true)
	s.commitSeq.Add(1)
	if err != nil {
		return nil, nil, fmt.Errorf("commit: %w", err)
	}
	s.idle.walked(w.idleWalks, w.changed, w.changedParts, micros(w.now))
	s.stats.Commits.Add(1)
	if s.syncNow != s.syncLevel {
		s.stats.LazyCommits.Add(1)
	}
	s.stats.CommitOps.Add(int64(len(batch)))
	s.stats.CommitMicros.Add(time.Since(start).Microseconds())
	if s.onCommit != nil {
		s.onCommit(len(batch), time.Since(start))
	}
	s.rows.keep(w)
	s.queues.commit(w.nqueues)
	s.groups.commit(w.ngroups)
	return errs, w.notifyKeys(), nil
}

// noTransaction reports whether a ROLLBACK failed only because SQLite had
// already rolled the transaction back itself, as it does when a statement
// or the COMMIT fails for lack of space (SQLITE_FULL): nothing is left to
// undo, and the error is SQLite saying so, not a second failure. The
// driver does not expose sqlite3_get_autocommit, so the message is what
// tells.
func noTransaction(err error) bool {
	return strings.Contains(err.Error(), "no transaction is active")
}

// setSync sets the writer's connection to the synchronous level batch
// needs: NORMAL, which commits without a sync, when every op in it is lazy;
// the store's level otherwise. SQLite refuses the change inside a
// transaction, so it is made before BEGIN.
func (s *Store) setSync(ctx context.Context, batch []*writeOp) error {
	level := "NORMAL"
	for _, op := range batch {
		if !op.lazy {
			level = s.syncLevel
			break
		}
	}
	if level == s.syncNow {
		return nil
	}
	if _, err := s.execControl(ctx, "PRAGMA synchronous = "+level); err != nil {
		return fmt.Errorf("set synchronous %s: %w", level, err)
	}
	s.syncNow = level
	return nil
}

// setUndo keeps the undo of the savepoints of batch (SQLite's statement
// journal) in memory when every op in it has a small one, and in a
// temporary file otherwise. SQLite keeps that journal in memory only up
// to 64 KiB and then moves it to a file for the rest of the transaction,
// so a commit of a thousand woken claims, each in its savepoint, wrote
// every page it first changed in each of them to that file, a system call
// each: a tenth of the writer's work. In memory it costs what one op's
// pages cost, as it is emptied at each savepoint's release. An op that
// may change many existing rows (a queue delete, retention) keeps it on
// disk. SQLite reads the setting when a transaction begins, and refuses
// to change it inside one, so it is set before BEGIN.
func (s *Store) setUndo(ctx context.Context, batch []*writeOp) error {
	inMemory := true
	for _, op := range batch {
		if !op.smallUndo {
			inMemory = false
			break
		}
	}
	if inMemory == s.undoInMemory {
		return nil
	}
	store := "DEFAULT"
	if inMemory {
		store = "MEMORY"
	}
	if _, err := s.execControl(ctx, "PRAGMA temp_store = "+store); err != nil {
		return fmt.Errorf("set temp_store %s: %w", store, err)
	}
	s.undoInMemory = inMemory
	return nil
}

// execControl runs a statement of the writer's own, with no arguments, such
// as BEGIN or COMMIT, prepared once: every commit runs several, and
// preparing each anew cost more than running it.
func (s *Store) execControl(ctx context.Context, query string) (sql.Result, error) {
	st, err := s.wstmts.get(ctx, query)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return s.wconn.ExecContext(ctx, query)
	}
	return st.ExecContext(ctx)
}

// wtx is the state of one fused transaction.
type wtx struct {
	ctx context.Context
	s   *Store
	// tx is the writer's connection with a transaction open on it. Prefer
	// w.ExecContext and friends, which reuse prepared statements.
	tx  *sql.Conn
	now time.Time
	// What the current op's acks copied into the dead-letter table
	// (deadLetterBound), counted from the op's ackAll.
	dlqCopies int
	dlqCopied int64
	// The segment the last dead letter was copied from (deadLetterFrame).
	dlqSegment *deadLetterSegment
	// Lookups made in this transaction, forgotten when a savepoint rolls back.
	queues     map[queueKey]*combtype.Queue
	partitions map[partKey]*combtype.Partition
	// The frames claims read, by range, once per commit (claimedFrames).
	claimed map[frameRange][]claimedFrame
	// The deleted offsets claims looked up, by range (trimTombstones),
	// forgotten when a message is deleted.
	claimedDead map[frameRange][]int64
	// Frames waiting to become one segment per partition at flush.
	pending []*pendingPart
	byPart  map[int64]*pendingPart
	touched map[watchChange]struct{}
	// changed is what of touched can make something due for a group other
	// than new segments: idle marks taken before it no longer hold
	// (idle.go).
	changed map[watchChange]struct{}
	// changedParts are the partitions changed for one group alone (a
	// lease ended with messages left): an idle mark of that group reads
	// them rather than walking its queue again.
	changedParts map[watchChange][]int64
	// idleWalks are the claims' walks that found nothing due, kept as idle
	// marks once the transaction has committed.
	idleWalks []idleWalk
	// stale is set once this transaction changed queue or partition rows
	// other than by pushing (rowsChanged).
	stale bool
	// quarantined counts the damaged segments claims met in it.
	quarantined int
	// nqueues is the count of queues as this transaction sees it (queuelimit.go).
	nqueues txCount
	// pastQueueBound lets the op under way create queues past
	// Options.MaxQueues (counted still): the drain of pushes already
	// acknowledged (DrainPushBuffer).
	pastQueueBound bool
	// ngroups is the count of group subscriptions as it sees it (grouplimit.go).
	ngroups txCount
	// groupsReserved counts the subscriptions its ops reserved (groupUndo).
	groupsReserved int64
}

type queueKey struct{ tenant, name string }

type partKey struct {
	queueID int64
	name    string
}

func newWtx(ctx context.Context, s *Store, tx *sql.Conn) *wtx {
	return &wtx{
		ctx: ctx, s: s, tx: tx, now: s.clock.Now(),
		queues:       map[queueKey]*combtype.Queue{},
		partitions:   map[partKey]*combtype.Partition{},
		claimed:      map[frameRange][]claimedFrame{},
		claimedDead:  map[frameRange][]int64{},
		byPart:       map[int64]*pendingPart{},
		touched:      map[watchChange]struct{}{},
		changed:      map[watchChange]struct{}{},
		changedParts: map[watchChange][]int64{},
		nqueues:      s.queues.begin(),
		ngroups:      s.groups.begin(),
	}
}

// touch records that tenant's queue changed, so parked pops wake after commit.
func (w *wtx) touch(tenant, queue string) {
	k := watchChange{key: watchKey(tenant, queue)}
	w.touched[k] = struct{}{}
	w.changed[k] = struct{}{}
}

// touchGroup records that tenant's queue changed in what only group can
// take (its lease on partitionID ended): only that group's pops parked
// with Park are taken after commit.
func (w *wtx) touchGroup(tenant, queue, group string, partitionID int64) {
	k := watchChange{key: watchKey(tenant, queue), group: group}
	w.touched[k] = struct{}{}
	w.changedParts[k] = append(w.changedParts[k], partitionID)
}

// touchAppend is touch for new segments of tenant's queue: a pop's idle
// mark finds those partitions itself, through their last segment id.
func (w *wtx) touchAppend(tenant, queue string) {
	w.touched[watchChange{key: watchKey(tenant, queue)}] = struct{}{}
}

func (w *wtx) notifyKeys() []watchChange {
	keys := make([]watchChange, 0, len(w.touched))
	for k := range w.touched {
		if k.group != "" {
			if _, all := w.touched[watchChange{key: k.key}]; all {
				continue // the whole queue is notified
			}
		}
		keys = append(keys, k)
	}
	return keys
}
