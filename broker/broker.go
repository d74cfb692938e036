// Package broker is comb's embeddable engine: durable queues with
// partitions, consumer groups, leases, retries, a dead-letter queue and
// replay, on one SQLite file. comb's HTTP server is an adapter over it; a
// Go program can import it and skip HTTP entirely.
//
// The values a program passes and gets back (items, requests, results,
// statuses, limits and the errors to test for with errors.Is) are declared
// in package combtype, which imports nothing of the engine. The engine
// behind broker is not part of the API.
//
// A Broker acts for one tenant: the one Open returns for the default
// tenant (""), and Tenant returns a handle for any other, with the same
// methods. Methods that act on the whole database (Close, the database,
// maintenance and retention methods, QueueDepths) do so from any handle.
//
// Method names start with the noun they act on (Queue…, Group…, DLQ…,
// Snapshot…, Message…, Trace…, Stream…, Lease…), so related calls sit
// together here; Push, Pop, Ack and Transaction are the message flow.
//
// # What every call promises
//
// Unless its own comment says otherwise:
//
//   - A read (a method that returns figures, a listing or one record) runs
//     on its own reader connection, never waits for writes, and stops when
//     ctx ends, returning an error that wraps ctx.Err().
//   - A write goes through the database's single writer, which fuses
//     concurrent writes into one commit. If ctx ends before the write is
//     handed to the writer it returns an error wrapping ctx.Err() and
//     writes nothing; once handed over it waits for the commit whatever ctx
//     does, so a write that returns has either committed or failed whole.
//     A nil error means committed and synced: with Options.Synchronous
//     "FULL" it survives power loss. The one exception is the lease a Pop
//     takes, which may be committed without a sync (power lost then only
//     makes the batch delivered again earlier; no message is lost).
//   - A write refused for its input (combtype.ErrInvalid, *InputError,
//     *RangeError) changed nothing. A write that found the disk or
//     Options.MaxDBBytes full fails with combtype.ErrFull and changed
//     nothing. A write that met another program's write transaction on
//     the file for longer than Options.BusyTimeout fails with
//     combtype.ErrFileBusy and changed nothing (a Pop with Wait waits it
//     out instead, within its timeout). A write that would create a queue
//     past Options.MaxQueues, subscribe a group past Options.MaxGroups,
//     or store a forwarder past Options.MaxForwarders, fails with
//     combtype.ErrQueueLimit, combtype.ErrGroupLimit or
//     combtype.ErrForwarderLimit and changed nothing; so does a snapshot
//     past Options.MaxSnapshots (combtype.ErrSnapshotLimit) and a
//     streaming query past Options.MaxStreamQueries
//     (combtype.ErrStreamQueryLimit).
//   - Listings and counts of names that do not exist (a queue, a group, a
//     tenant) are empty or zero, not errors; a call that reads or changes
//     one named record returns that record's not-found sentinel, as its
//     comment says. A tenant exists by being used: a handle of a new
//     tenant lists nothing.
//   - Nothing blocks longer than its reads and its commit, except Pop with
//     Wait (until a message, the timeout, Drain or ctx) and DatabaseBackup.
//   - After Close, writes and pushes fail with combtype.ErrClosed; reads
//     fail with the database's "sql: database is closed".
package broker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/retention"
	"github.com/comb-broker/comb/store"
)

// Clock tells the time. The broker reads every timestamp it writes through
// it, so a test can move time instead of sleeping.
type Clock interface {
	Now() time.Time
}

// Options configure Open.
type Options struct {
	// Path of the database file, created (mode 0600) if missing. Required.
	Path string
	// Synchronous is "FULL" (default; every answered write survives power
	// loss) or "NORMAL" (survives a crash of the process only).
	Synchronous string
	// MaxBatchOps caps how many pending writes one commit fuses; 0 means
	// the engine's default (256), 1 turns group commit off (for measuring
	// it).
	MaxBatchOps int
	// DefaultSubscriptionMode applies when a group's first pop names no
	// mode: "all" (default) or "new".
	DefaultSubscriptionMode string
	// LiveTotalsPartitions is the most partitions a queue may have for its
	// totals to be summed on every read; above it they are summed in the
	// background and replies carry statsAge. Default
	// store.DefaultLiveTotalsPartitions.
	LiveTotalsPartitions int
	// LiveGroupPositions is the most positions (partitions times groups)
	// a queue may have for its totals and group figures to be summed on
	// every read, however few its partitions; above it they are summed in
	// the background too. Default store.DefaultLiveGroupPositions.
	LiveGroupPositions int
	// LiveSummaryPartitions is the most partitions a tenant may have for
	// the status and overview figures (StatsSummary) to be summed on every
	// read; above it they are summed in the background and replies carry
	// statsAge. Default store.DefaultLiveSummaryPartitions.
	LiveSummaryPartitions int
	// Clock is read for every timestamp. Default the wall clock.
	Clock Clock
	// RetentionInterval is how often the retention service sweeps.
	// Default 5 minutes; negative disables the periodic sweep
	// (RetentionSweep still works).
	RetentionInterval time.Duration
	// SnapshotSweepInterval is the least time between deletions of expired
	// snapshots, which run within retention sweeps. Default an hour.
	SnapshotSweepInterval time.Duration
	// MaxDBBytes caps the database file (0 = only the disk's size); a
	// write past it fails with combtype.ErrFull.
	MaxDBBytes int64
	// MaxQueues bounds how many queues the database holds, every
	// tenant's together (0 = no bound); a write that would create one
	// more fails with combtype.ErrQueueLimit. comb serve sets
	// DefaultMaxQueues. Each queue costs memory for as long as the broker
	// runs (docs/limits.md), so a broker serving clients it does not
	// trust should set it.
	MaxQueues int
	// MaxGroups bounds how many subscriptions of a consumer group to a
	// queue the database holds, every tenant's together (0 = no bound);
	// a pop or seek that would subscribe a group to one more queue fails
	// with combtype.ErrGroupLimit. comb serve sets DefaultMaxGroups. Every
	// listing of groups, a queue's detail and the status read each one
	// (docs/limits.md).
	MaxGroups int
	// MaxForwarders bounds how many forwarders the database holds, every
	// tenant's together (0 = no bound); storing one more fails with
	// combtype.ErrForwarderLimit. comb serve sets DefaultMaxForwarders.
	MaxForwarders int
	// MaxSnapshots bounds how many live (unexpired) snapshots the
	// database holds, every tenant's together (0 = no bound); creating
	// one more fails with combtype.ErrSnapshotLimit. comb serve sets
	// DefaultMaxSnapshots.
	MaxSnapshots int
	// MaxStreamQueries bounds how many streaming queries are registered,
	// every tenant's together (0 = no bound); registering one more fails
	// with combtype.ErrStreamQueryLimit. comb serve sets
	// DefaultMaxStreamQueries.
	MaxStreamQueries int
	// EncryptionKey is the combtype.EncryptionKeySize-byte AES-256 key
	// sealing the payloads of queues with encryptionEnabled (see
	// ParseEncryptionKey). Nil stores them in clear.
	EncryptionKey []byte
	// Logger receives the background services' logs. Default slog.Default().
	Logger *slog.Logger
	// MaxPushBytesInFlight bounds the payload bytes of pushes and
	// transactions accepted but not yet committed; past it they fail with
	// combtype.ErrBusy. Default DefaultMaxPushBytesInFlight.
	MaxPushBytesInFlight int64
	// BusyTimeout is how long a write waits for another program's write
	// transaction on the database file (a sqlite3 session or DB browser
	// that began writing) before it fails with combtype.ErrFileBusy.
	// Default store.DefaultBusyTimeout (10 s).
	BusyTimeout time.Duration
}

// Broker is an open comb database, acting for one tenant. It is safe for
// concurrent use; Tenant handles share the database and its lifecycle.
type Broker struct {
	*engine
	tenant string
}

// engine is what every tenant handle of one database shares.
type engine struct {
	st         *store.Store
	clock      Clock
	drainOnce  sync.Once
	draining   chan struct{} // closed by Drain: parked pops return at once
	parked     atomic.Int64  // pops waiting right now
	metrics    *Metrics
	log        *slog.Logger
	maint      maintenance        // maintenance switches (maintenance.go)
	ret        *retention.Service // started by Open, stopped by Close
	resumeStop context.CancelFunc // stops the resumed queue deletes
	resumeDone chan struct{}      // closed when they have returned
	inFlight   byteGate           // payload bytes of pushes not yet committed
	backups    backups            // online backups running (backup.go)
}

// realClock is the wall clock.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// Open opens or creates the database at opts.Path and starts its
// background services. The Broker returned acts for the default tenant.
// It fails with combtype.ErrLocked when another process has the file open,
// combtype.ErrNotComb or combtype.ErrSchemaTooNew when the file is not one
// this comb can open (leaving it untouched), and combtype.ErrInvalid for a
// key of the wrong size.
func Open(ctx context.Context, opts Options) (*Broker, error) {
	clk := cmp.Or[Clock](opts.Clock, realClock{})
	m := newMetrics(clk)
	st, err := store.Open(ctx, store.Options{Path: opts.Path, Synchronous: opts.Synchronous, Clock: clk,
		MaxBatchOps: opts.MaxBatchOps, OnCommit: m.observeCommit, EncryptionKey: opts.EncryptionKey, Logger: opts.Logger,
		MaxDBBytes: opts.MaxDBBytes, MaxQueues: opts.MaxQueues, MaxGroups: opts.MaxGroups,
		MaxForwarders: opts.MaxForwarders, MaxSnapshots: opts.MaxSnapshots, MaxStreamQueries: opts.MaxStreamQueries,
		DefaultSubscriptionMode: opts.DefaultSubscriptionMode,
		LiveTotalsPartitions:    opts.LiveTotalsPartitions, LiveGroupPositions: opts.LiveGroupPositions,
		LiveSummaryPartitions: opts.LiveSummaryPartitions,
		BusyTimeout:           opts.BusyTimeout})
	if err != nil {
		return nil, fmt.Errorf("open broker: %w", err)
	}
	e := &engine{st: st, clock: clk, draining: make(chan struct{}), metrics: m, log: cmp.Or(opts.Logger, slog.Default())}
	e.inFlight.max = cmp.Or(opts.MaxPushBytesInFlight, DefaultMaxPushBytesInFlight)
	b := &Broker{engine: e}
	if err := b.startBackground(ctx, opts); err != nil {
		st.Close()
		return nil, fmt.Errorf("open broker: %w", err)
	}
	return b, nil
}

// Tenant returns a handle acting for tenant name, with the same methods;
// "" is the default tenant. Tenants share nothing but the database file:
// one tenant's queues, groups, snapshots and DLQ are invisible to another.
func (b *Broker) Tenant(name string) *Broker {
	if name == b.tenant {
		return b
	}
	return &Broker{engine: b.engine, tenant: name}
}

// TenantName is the tenant b acts for; "" is the default tenant.
func (b *Broker) TenantName() string { return b.tenant }

// Drain makes every parked pop, and every later one, return without waiting,
// and stops a running DatabaseBackup, so a server can stop without holding
// long-polls to their timeout. Writes keep working until Close.
func (b *Broker) Drain() { b.drainOnce.Do(func() { close(b.draining) }) }

// Close stops the running backups (waiting until they have removed their
// partial copies) and the background services, commits every write
// already submitted and closes the database, for every tenant handle.
// Writes made afterwards fail with combtype.ErrClosed; reads fail with
// the database's "sql: database is closed".
func (b *Broker) Close() error {
	b.backups.close()
	b.stopBackground()
	return b.st.Close()
}

// Ping reports whether the database answers a read: nil, or why not (an
// error after Close).
func (b *Broker) Ping(ctx context.Context) error { return b.st.Ping(ctx) }

// Health is Ping, and whether the broker is fit to serve its file: an
// error wrapping combtype.ErrReplaced once the file's path names another
// file (Replaced), or combtype.ErrDamaged once a read or write has met a
// damaged page of the file, though what does not read through it is
// still served.
func (b *Broker) Health(ctx context.Context) error { return b.st.Health(ctx) }

// Replaced is closed once the database file's path no longer names the
// file the broker opened (a backup restored over it, or removed while
// served): every write then fails with combtype.ErrReplaced, and the
// file now at the path is served by a broker opened anew.
func (b *Broker) Replaced() <-chan struct{} { return b.st.Replaced() }

// Parked is the number of pops, of every tenant, waiting for something to
// deliver.
func (b *Broker) Parked() int64 { return b.parked.Load() }

// Push appends items to their queues (each created, with
// combtype.DefaultQueueOptions, on its first push) and returns once they
// are durable, one result per item in order. Items that break a rule of
// CheckPushItems are refused, all of them, with an *InputError naming the
// first: what HTTP refuses, the package refuses. An item whose transactionId
// is already stored in its partition is not stored again and answers
// combtype.StatusDuplicate with the original's offset; during push
// maintenance every item answers combtype.StatusBuffered. Past
// Options.MaxPushBytesInFlight the push fails with combtype.ErrBusy.
func (b *Broker) Push(ctx context.Context, items []combtype.PushItem) ([]combtype.PushResult, error) {
	if err := CheckPushItems(items); err != nil {
		return nil, err
	}
	if results, ok, err := b.pushBuffered(ctx, items); ok {
		return results, err // push maintenance: parked, not in the log yet
	}
	n := pushBytes(items)
	if !b.inFlight.acquire(n) {
		return nil, combtype.ErrBusy
	}
	defer b.inFlight.release(n)
	results, err := b.st.Push(ctx, b.tenant, items)
	if err == nil {
		b.metrics.countPush(b.tenant, results)
	}
	return results, err
}

// Ack acknowledges delivered messages, each on its item's group, and
// answers one result per item in order: an ack refused (a stale lease, a
// message not found) says why in its result's Err, and the others still
// apply. A completed ack moves the group's cursor; a failed one counts a
// retry or, past the queue's retryLimit, dead-letters the message. More
// than MaxAckItems items are refused with a *RangeError.
func (b *Broker) Ack(ctx context.Context, items []combtype.AckItem) ([]combtype.AckResult, error) {
	if err := CheckRange("acknowledgments", int64(len(items)), 0, MaxAckItems); err != nil {
		return nil, err
	}
	if err := checkAckItems("", items); err != nil {
		return nil, err
	}
	results, err := b.st.Ack(ctx, b.tenant, "", items)
	for i := range results {
		b.metrics.countAck(b.tenant, &items[i], &results[i])
	}
	return results, err
}

// Transaction applies acks and pushes all or nothing: a refused operation
// fails the whole with a *combtype.TxError and nothing is written. More
// than MaxTransactionOps acks and pushed items are refused with a
// *RangeError; its pushes count against Options.MaxPushBytesInFlight.
func (b *Broker) Transaction(ctx context.Context, ops []combtype.TxOp) ([]combtype.TxOpResult, error) {
	var count, n int64
	for i := range ops {
		count += 1 + int64(max(len(ops[i].Items)-1, 0))
		n += pushBytes(ops[i].Items)
	}
	if err := CheckRange("operations", count, 0, MaxTransactionOps); err != nil {
		return nil, err
	}
	if err := checkTxOps(ops); err != nil {
		return nil, err
	}
	if !b.inFlight.acquire(n) {
		return nil, combtype.ErrBusy
	}
	defer b.inFlight.release(n)
	results, err := b.st.Transaction(ctx, b.tenant, ops)
	if err == nil {
		b.metrics.countTransaction(b.tenant, ops, results)
	}
	return results, err
}

// LeaseExtend pushes the expiry of every batch leaseID holds to at least
// now+d. A lease unknown or already expired is reported in the result's
// Err. A d outside [1s, MaxLeaseSeconds] is refused with a *RangeError.
func (b *Broker) LeaseExtend(ctx context.Context, leaseID string, d time.Duration) (combtype.LeaseExtension, error) {
	if d < time.Second || d > MaxLeaseSeconds*time.Second {
		return combtype.LeaseExtension{}, &RangeError{Name: "seconds", Value: int64(d / time.Second), Min: 1, Max: MaxLeaseSeconds}
	}
	return b.st.ExtendLease(ctx, b.tenant, leaseID, d)
}

// LeaseRelease gives back every batch leaseID still holds, at once and
// without charging a retry: for a pop whose reply could not be delivered.
// It returns how many (partition, group) leases it released: 0, and no
// error, for a lease unknown, expired or already released.
func (b *Broker) LeaseRelease(ctx context.Context, leaseID string) (int64, error) {
	return b.st.ReleaseLease(ctx, b.tenant, leaseID)
}

// Pop delivers up to req.Batch messages under a lease (or, with AutoAck,
// consumed at once). With Wait it parks until a push, a released or
// expired lease or a seek makes something deliverable, the timeout passes,
// or ctx ends; it never polls the database in a loop. With Wait, another
// program's write transaction on the file is waited out within the
// timeout rather than failing with combtype.ErrFileBusy: the pop is
// answered once it ends, or empty at the timeout. An unknown queue is
// nothing to deliver, not an error. A Timeout outside [0, MaxPopTimeout]
// is refused with a *RangeError.
func (b *Broker) Pop(ctx context.Context, req combtype.PopRequest) (*combtype.PopResult, error) {
	// This frame, and those of its callers up to net/http's, stay on the
	// goroutine's stack while the pop is parked. The collector halves a
	// stack only when less than a quarter of it is used (counting 800
	// bytes of guard), so what needs room only before or after the wait
	// (the checks, the copies of req the store's calls take; in httpd,
	// reading the request and writing the reply) is done in functions of
	// their own: a parked pop then uses about 3.1 KB, and its stack, grown
	// to 16 KB by its first look, shrinks to 8 KB (docs/limits.md).
	if err := checkPopTimeout(&req); err != nil {
		return nil, err
	}
	if res, bad, err := b.popBadNames(ctx, &req); bad {
		return res, err
	}
	deadline := time.Now().Add(req.Timeout)
	woken := false
	var anyq *queuesLook // a pop of a namespace or task's
	if req.Queue == "" {
		anyq = &queuesLook{seq: -1}
	}
	for {
		if b.maint.popOn() {
			return pausedPop(req.Group), nil // pop maintenance: nothing, at once
		}
		if req.Wait && b.st.FileBusy() {
			// Another program holds the file's write lock: a claim would
			// only wait it out inside a commit (store/fileprobe.go).
			if res, err := b.outwaitLock(ctx, &req, deadline); res != nil || err != nil {
				return res, err
			}
			woken = false
		}
		// Watch before looking, so a change in between is not missed.
		changed, release := b.watch(req.Queue, anyq)
		res, err := b.look(ctx, &req, woken, anyq)
		if req.Wait && fileBusy(err) {
			// The claim met the lock and wrote nothing; a long-poll has
			// its own timeout to wait it out in, as it waits out an empty
			// queue.
			release()
			woken = false
			continue
		}
		if err != nil || len(res.Messages) > 0 || !req.Wait {
			release()
			b.metrics.countPop(b.tenant, res, req.AutoAck)
			return res, err
		}
		wait := time.Until(deadline)
		if d := res.WakeAt.Sub(b.st.Now()); !res.WakeAt.IsZero() && d > 0 {
			// Held-back data (a lease, a delay, a window) is due then.
			wait = min(wait, d+time.Millisecond)
		}
		if wait <= 0 {
			release()
			return res, nil
		}
		if req.OnPark != nil {
			req.OnPark()
			req.OnPark = nil
		}
		if req.Queue != "" && !req.AutoAck {
			// Parked for the writer to claim for, at the next change.
			p := b.st.Park(b.tenant, &req, changed, wait)
			if p == nil {
				// The queue changed since the look.
				release()
				woken = true
				continue
			}
			got, again, err := b.parkHanded(ctx, p, wait)
			release()
			if fileBusy(err) {
				woken = false
				continue // the claim made for it met the lock, as above
			}
			if err != nil {
				return nil, err
			}
			if got != nil {
				b.metrics.countPop(b.tenant, got, req.AutoAck)
				return got, nil
			}
			if !again {
				return &combtype.PopResult{Group: res.Group}, nil
			}
		} else {
			woke := b.park(ctx, changed, wait)
			release()
			if !woke || ctx.Err() != nil {
				// A caller that left as the wake came gets no claim: with
				// autoAck it would consume what nobody reads.
				return &combtype.PopResult{Group: res.Group}, nil
			}
		}
		if time.Until(deadline) <= 0 {
			// One last look: the wake may have come right at the deadline.
			return b.lastLook(ctx, &req)
		}
		woken = true
	}
}

// lastLook is the look of a long-poll pop at its deadline. Not into the
// lock of another program: its time is up, and it is answered as a
// long-poll that got nothing (outwaitLock says why).
func (b *Broker) lastLook(ctx context.Context, req *combtype.PopRequest) (*combtype.PopResult, error) {
	if b.st.FileBusy() {
		return emptyPop(req), nil
	}
	res, err := b.look(ctx, req, false, nil)
	if fileBusy(err) {
		return emptyPop(req), nil
	}
	b.metrics.countPop(b.tenant, res, req.AutoAck)
	return res, err
}

// fileBusy reports whether a look failed on another program's write lock.
func fileBusy(err error) bool { return err != nil && errors.Is(err, combtype.ErrFileBusy) }

// outwaitLock waits, for a long-poll pop, until the writer can take the
// file's write lock again (nil, nil: look again), or until the pop must
// answer empty (its result): its deadline passed, its caller left, the
// broker is draining or pop maintenance began. The pop waits parked,
// holding nothing: each of
// the writer's attempts at the lock is a commit of nothing shared by every
// pop waiting (store.Store.ProbeFile), so the pop can stop at its deadline
// with no claim in flight. Its deadline passing is answered 204, as any
// long-poll that got nothing: Queen's clients long-poll again at once on
// a 204, where a 503 counts as a failed attempt (docs/operations.md).
func (b *Broker) outwaitLock(ctx context.Context, req *combtype.PopRequest, deadline time.Time) (*combtype.PopResult, error) {
	wait := time.Until(deadline)
	if wait <= 0 {
		return emptyPop(req), nil
	}
	if req.OnPark != nil {
		req.OnPark()
		req.OnPark = nil
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	b.parked.Add(1)
	defer b.parked.Add(-1)
	for {
		probe := b.st.ProbeFile()
		select {
		case <-probe.Done():
			switch err := probe.Err(); {
			case errors.Is(err, combtype.ErrFileBusy):
				continue // still held: the next attempt
			case errors.Is(err, combtype.ErrClosed):
				return nil, err
			}
			return nil, nil
		case <-timer.C:
		case <-ctx.Done():
		case <-b.draining:
		case <-b.maint.popPaused():
		}
		return emptyPop(req), nil
	}
}

// emptyPop is the answer of a pop that got nothing.
func emptyPop(req *combtype.PopRequest) *combtype.PopResult {
	return &combtype.PopResult{Group: cmp.Or(req.Group, combtype.QueueModeGroup)}
}

// checkPopTimeout refuses a Pop's timeout out of range.
func checkPopTimeout(req *combtype.PopRequest) error {
	if req.Timeout < 0 || req.Timeout > MaxPopTimeout {
		return &RangeError{Name: "timeout", Value: req.Timeout.Milliseconds(), Min: 0, Max: MaxPopTimeout.Milliseconds()}
	}
	return nil
}

// popBadNames answers a Pop naming what no queue, partition or group can
// have (CheckName), with bad set; bad is false for a Pop whose names are
// well formed. A queue, partition, namespace or task that cannot exist is
// answered as a queue that does not exist is: nothing, after the pop's
// wait. A pop must never answer 4xx for a queue it cannot find
// (docs/wire.md): Queen's JS consumer rethrows the error and stops, where
// Queen itself answers such a pop empty. A group name no group can have
// is refused: the client's own mistake, about a queue that may well
// exist. Not inlined: its frame would stay on the stack of every parked
// pop (see Pop).
//
//go:noinline
func (b *Broker) popBadNames(ctx context.Context, req *combtype.PopRequest) (_ *combtype.PopResult, bad bool, _ error) {
	if err := CheckName("consumerGroup", req.Group); err != nil {
		return nil, true, err
	}
	why := checkNames("queue", req.Queue, "partition", req.Partition, "namespace", req.Namespace, "task", req.Task)
	if why == nil {
		return nil, false, nil
	}
	b.log.Debug("a pop names what no queue can have: answered empty", "err", why)
	if req.Wait && req.Timeout > 0 {
		t := time.NewTimer(req.Timeout)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, true, ctx.Err()
		}
	}
	return emptyPop(req), true, nil
}

// look is one look of a Pop for something to deliver. A woken pop goes
// straight to the writer, where the claims of the pops one change woke
// are made together.
func (b *Broker) look(ctx context.Context, req *combtype.PopRequest, woken bool, anyq *queuesLook) (*combtype.PopResult, error) {
	if anyq != nil {
		return anyq.look(ctx, b.st, b.tenant, req)
	}
	if woken {
		return b.st.PopWoken(ctx, b.tenant, *req)
	}
	return b.st.Pop(ctx, b.tenant, *req)
}

// parkHanded waits, parked as p, until the writer has claimed for p (the
// messages it was handed), wait passes or the queue changed without a
// claim (again: look again), or the pop must answer empty at once (nil
// and not again): its caller left, the broker is draining, or pop
// maintenance began. A claim the writer made for a pop that answers
// empty is released at once, without charging a retry, so the group's
// next pop gets its messages instead of waiting out the lease.
func (b *Broker) parkHanded(ctx context.Context, p *store.ParkedPop, wait time.Duration) (res *combtype.PopResult, again bool, err error) {
	// No defer: each keeps a record in this frame, which stays on the
	// stack while the pop is parked (see Pop).
	timer := time.NewTimer(wait)
	b.parked.Add(1)
	var done error
	left, timedOut := false, false
	select {
	case done = <-p.Done():
	case <-timer.C:
		timedOut = true
	case <-ctx.Done():
		left = true
	case <-b.draining:
		left = true
	case <-b.maint.popPaused():
		left = true
	}
	timer.Stop()
	b.parked.Add(-1)
	if timedOut {
		if p.Leave() {
			return nil, true, nil
		}
		done = <-p.Done() // the claim was taken as the time ran out
	}
	if left {
		if p.Leave() {
			return nil, false, nil
		}
		done = <-p.Done()
	}
	res, claimed, err := p.Result(done)
	if left || ctx.Err() != nil {
		if err == nil && res != nil && len(res.Messages) > 0 {
			b.releaseHanded(ctx, res.LeaseID)
		}
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if !claimed || len(res.Messages) == 0 {
		return nil, true, nil
	}
	return res, false, nil
}

// releaseHanded gives back the lease of a claim made for a pop that left.
// Should that fail, the lease expires as any unacknowledged one does: the
// messages are delivered again then, never lost.
func (b *Broker) releaseHanded(ctx context.Context, leaseID string) {
	if _, err := b.st.ReleaseLease(context.WithoutCancel(ctx), b.tenant, leaseID); err != nil {
		b.log.Error("releasing the lease of a pop that left", "leaseId", leaseID, "err", err)
	}
}

// watch returns what a parked pop of queue (or, for "", of any queue,
// looking with anyq) waits on, and the release to call when it stops
// waiting.
func (b *Broker) watch(queue string, anyq *queuesLook) (<-chan struct{}, func()) {
	if queue == "" {
		return anyq.watch(b.st, b.tenant), func() {}
	}
	return b.st.Watch(b.tenant, queue)
}

// queuesLook is how a pop of a namespace or task looks, from one wait to
// the next. Its first look, and one after a wait that ended without a
// change (its time, or a time-based wake), reads every queue of its
// namespace or task; one woken by a commit reads only the queues changed
// since its last look began (store.WatchChanges), which are all that can
// have become due since then, unless something held back by time (a
// lease, a delay, a window) that its last look at every queue found is
// due by now.
type queuesLook struct {
	// seq is the change the last look's watch began after (-1: none),
	// and changed that watch's channel.
	seq     int64
	changed <-chan struct{}
	// among is what the next look reads: nil for every queue.
	among []string
	// wake is when something held back by time, which the last look at
	// every queue found, is due: a look at some queues keeps it.
	wake time.Time
}

// watch begins this look's watch and decides what the look reads.
func (l *queuesLook) watch(st *store.Store, tenant string) <-chan struct{} {
	// Woken by a change, or not since the last look (its time, a
	// time-based wake, another program's lock): then it reads everything.
	since := int64(-1)
	select {
	case <-l.changed:
		since = l.seq
	default:
	}
	changed, seq, queues, all := st.WatchChanges(tenant, since)
	l.seq, l.changed, l.among = seq, changed, nil
	if !all && (l.wake.IsZero() || st.Now().Before(l.wake)) {
		l.among = queues
	}
	return changed
}

// look reads what watch decided.
func (l *queuesLook) look(ctx context.Context, st *store.Store, tenant string, req *combtype.PopRequest) (*combtype.PopResult, error) {
	if l.among == nil {
		res, err := st.Pop(ctx, tenant, *req)
		if err == nil {
			l.wake = res.WakeAt
		}
		return res, err
	}
	res, err := st.PopAmong(ctx, tenant, *req, l.among)
	if err == nil && !l.wake.IsZero() && (res.WakeAt.IsZero() || l.wake.Before(res.WakeAt)) {
		res.WakeAt = l.wake
	}
	return res, err
}

// park waits until changed closes or wait passes (true: look again), or
// until the pop must answer empty at once (false): its caller left, the
// broker is draining, or pop maintenance began.
func (b *Broker) park(ctx context.Context, changed <-chan struct{}, wait time.Duration) bool {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	b.parked.Add(1)
	defer b.parked.Add(-1)
	select {
	case <-changed:
	case <-timer.C:
	case <-ctx.Done():
		return false
	case <-b.draining:
		return false
	case <-b.maint.popPaused():
		return false
	}
	return true
}
