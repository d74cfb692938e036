// Package broker is comb's embeddable engine: durable queues with
// partitions, consumer groups, leases, retries, a dead-letter queue and
// replay, on one SQLite file. The HTTP server is a thin adapter over it; a
// Go program can import it and skip HTTP entirely.
//
// broker is the one package an embedder (and comb's own HTTP server and
// command) imports. Its request and result types are type aliases of the
// engine's (QueueOptions = store.QueueOptions and so on), and its error
// values are the engine's, so errors.Is holds whichever layer returned them;
// the engine packages behind it are not part of the API.
package broker

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/comb-broker/comb/internal/clock"
	"github.com/comb-broker/comb/retention"
	"github.com/comb-broker/comb/seek"
	"github.com/comb-broker/comb/store"
)

// Types shared with the store, re-exported so users import one package.
type (
	QueueOptions     = store.QueueOptions
	Queue            = store.Queue
	Partition        = store.Partition
	PushItem         = store.PushItem
	PushResult       = store.PushResult
	Message          = store.Message
	PopResult        = store.PopResult
	AckItem          = store.AckItem
	AckResult        = store.AckResult
	TxOp             = store.TxOp
	TxOpResult       = store.TxOpResult
	TxError          = store.TxError
	LeaseExtension   = store.LeaseExtension
	ConfigureRequest = store.ConfigureRequest
)

// Options configure Open.
type Options struct {
	// Path of the database file. Required.
	Path string
	// Synchronous is "FULL" (default; every answered write survives power
	// loss) or "NORMAL" (survives a crash of the process only).
	Synchronous string
	// MaxBatchOps caps how many pending writes one commit fuses; 0 means
	// store.DefaultMaxBatchOps, 1 turns group commit off (for measuring it).
	MaxBatchOps int
	// DefaultSubscriptionMode applies when a group's first pop names no
	// mode: "all" (default) or "new".
	DefaultSubscriptionMode string
	// Clock is read for every timestamp. Default the wall clock.
	Clock clock.Clock
	// RetentionInterval is how often the retention service sweeps.
	// Default retention.DefaultInterval (5 minutes); negative disables the
	// periodic sweep (Retention().RunOnce still works).
	RetentionInterval time.Duration
	// SnapshotSweepInterval is the least time between deletions of expired
	// snapshots, which run within retention sweeps. Default
	// retention.DefaultSnapshotInterval (an hour).
	SnapshotSweepInterval time.Duration
	// MaxDBBytes caps the database file (0 = only the disk's size); a
	// write past it fails with ErrFull.
	MaxDBBytes int64
	// EncryptionKey is the 32-byte AES-256 key sealing the payloads of
	// queues with encryptionEnabled. Nil stores them in clear.
	EncryptionKey []byte
	// Logger receives the background services' logs. Default slog.Default().
	Logger *slog.Logger
	// MaxPushBytesInFlight bounds the payload bytes of pushes and
	// transactions accepted but not yet committed; past it they fail with
	// ErrBusy. Default DefaultMaxPushBytesInFlight.
	MaxPushBytesInFlight int64
}

// Broker is an open comb database.
type Broker struct {
	st         *store.Store
	defaultSub string
	drainOnce  sync.Once
	draining   chan struct{} // closed by Drain: parked pops return at once
	parked     atomic.Int64  // pops waiting right now
	metrics    *Metrics
	maint      maintenance        // maintenance switches (maintenance.go)
	ret        *retention.Service // started by Open, stopped by Close
	resumeStop context.CancelFunc // stops the resumed queue deletes
	resumeDone chan struct{}      // closed when they have returned
	inFlight   byteGate           // payload bytes of pushes not yet committed
}

// Parked is the number of pops waiting for something to deliver.
func (b *Broker) Parked() int64 { return b.parked.Load() }

// Open opens or creates the database at opts.Path.
func Open(ctx context.Context, opts Options) (*Broker, error) {
	m := newMetrics(cmp.Or[clock.Clock](opts.Clock, clock.Real{}))
	st, err := store.Open(ctx, store.Options{Path: opts.Path, Synchronous: opts.Synchronous, Clock: opts.Clock, MaxBatchOps: opts.MaxBatchOps,
		OnCommit: m.observeCommit, EncryptionKey: opts.EncryptionKey, Logger: opts.Logger, MaxDBBytes: opts.MaxDBBytes})
	if err != nil {
		return nil, fmt.Errorf("open broker: %w", err)
	}
	b := &Broker{st: st, defaultSub: cmp.Or(opts.DefaultSubscriptionMode, store.ModeAll), draining: make(chan struct{}),
		metrics: m}
	b.inFlight.max = cmp.Or(opts.MaxPushBytesInFlight, DefaultMaxPushBytesInFlight)
	if err := b.startBackground(ctx, opts); err != nil {
		st.Close()
		return nil, fmt.Errorf("open broker: %w", err)
	}
	return b, nil
}

// Drain makes every parked pop, and every later one, return without waiting,
// so a server can stop without holding long-polls to their timeout. Writes
// keep working until Close.
func (b *Broker) Drain() { b.drainOnce.Do(func() { close(b.draining) }) }

// Close commits every write already submitted and closes the database.
func (b *Broker) Close() error {
	b.stopBackground()
	return b.st.Close()
}

// Ping reports whether the database answers.
func (b *Broker) Ping(ctx context.Context) error { return b.st.Ping(ctx) }

// Configure creates a queue or replaces all of its options.
// Options outside their ranges (see ValidateOptions) are refused with a
// *RangeError and nothing is written.
func (b *Broker) Configure(ctx context.Context, req ConfigureRequest) (*Queue, *Partition, error) {
	if err := ValidateOptions(req.Options); err != nil {
		return nil, nil, err
	}
	if err := checkConfigure(req); err != nil {
		return nil, nil, err
	}
	return b.st.Configure(ctx, req)
}

// Push appends items and returns once they are durable. Items that break
// a rule of CheckPushItems are refused, all of them, with an *InputError
// naming the first.
func (b *Broker) Push(ctx context.Context, tenant string, items []PushItem) ([]PushResult, error) {
	if err := CheckPushItems(items); err != nil {
		return nil, err
	}
	if results, ok, err := b.pushBuffered(ctx, tenant, items); ok {
		return results, err // push maintenance: parked, not in the log yet
	}
	n := pushBytes(items)
	if !b.inFlight.acquire(n) {
		return nil, ErrBusy
	}
	defer b.inFlight.release(n)
	results, err := b.st.Push(ctx, tenant, items)
	if err == nil {
		b.metrics.countPush(tenant, results)
	}
	return results, err
}

// Ack acknowledges delivered messages; group, when not "", applies to all.
// More than MaxAckItems items are refused with a *RangeError.
func (b *Broker) Ack(ctx context.Context, tenant, group string, items []AckItem) ([]AckResult, error) {
	if err := CheckRange("acknowledgments", int64(len(items)), 0, MaxAckItems); err != nil {
		return nil, err
	}
	if err := checkAckItems(group, items); err != nil {
		return nil, err
	}
	results, err := b.st.Ack(ctx, tenant, group, items)
	for i := range results {
		b.metrics.countAck(tenant, &items[i], &results[i])
	}
	return results, err
}

// Transaction applies acks and pushes all or nothing.
// More than MaxTransactionOps acks and pushed items are refused with a
// *RangeError; its pushes count against MaxPushBytesInFlight.
func (b *Broker) Transaction(ctx context.Context, tenant string, ops []TxOp) ([]TxOpResult, error) {
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
		return nil, ErrBusy
	}
	defer b.inFlight.release(n)
	results, err := b.st.Transaction(ctx, tenant, ops)
	if err == nil {
		b.metrics.countTransaction(tenant, ops, results)
	}
	return results, err
}

// ExtendLease extends every (partition, group) held by leaseID.
// A d outside [1s, MaxLeaseSeconds] is refused with a *RangeError.
func (b *Broker) ExtendLease(ctx context.Context, tenant, leaseID string, d time.Duration) (LeaseExtension, error) {
	if d < time.Second || d > MaxLeaseSeconds*time.Second {
		return LeaseExtension{}, &RangeError{Name: "seconds", Value: int64(d / time.Second), Min: 1, Max: MaxLeaseSeconds}
	}
	return b.st.ExtendLease(ctx, tenant, leaseID, d)
}

// ReleaseLease gives back every batch leaseID still holds, at once and
// without charging a retry: for a pop whose reply could not be delivered.
func (b *Broker) ReleaseLease(ctx context.Context, tenant, leaseID string) (int64, error) {
	return b.st.ReleaseLease(ctx, tenant, leaseID)
}

// PopRequest asks for messages; see store.PopRequest for the fields it
// shares with a single attempt.
type PopRequest struct {
	Tenant     string
	Queue      string
	Partition  string
	Namespace  string
	Task       string
	Group      string
	Batch      int
	Partitions int
	AutoAck    bool
	// SubscriptionMode and SubscriptionFrom decide where a group starts on
	// its first contact with the queue; later values are ignored.
	SubscriptionMode string
	SubscriptionFrom string
	// Wait parks the pop until something is deliverable or Timeout passes.
	Wait    bool
	Timeout time.Duration
}

// Pop delivers up to req.Batch messages. With Wait it parks until a push, a
// released or expired lease or a seek makes something deliverable, the
// timeout passes, or ctx ends; it never polls the database in a loop.
func (b *Broker) Pop(ctx context.Context, req PopRequest) (*PopResult, error) {
	if req.Timeout < 0 || req.Timeout > MaxPopTimeout {
		return nil, &RangeError{Name: "timeout", Value: req.Timeout.Milliseconds(), Min: 0, Max: MaxPopTimeout.Milliseconds()}
	}
	if err := checkNames("queue", req.Queue, "partition", req.Partition, "namespace", req.Namespace, "task", req.Task,
		"consumerGroup", req.Group); err != nil {
		return nil, err
	}
	sreq := store.PopRequest{
		Tenant: req.Tenant, Queue: req.Queue, Partition: req.Partition, Namespace: req.Namespace, Task: req.Task,
		Group: req.Group, Batch: req.Batch, Partitions: req.Partitions, AutoAck: req.AutoAck,
		Start: seek.Start(req.SubscriptionMode, req.SubscriptionFrom, b.defaultSub),
	}
	deadline := time.Now().Add(req.Timeout)
	for {
		if b.maint.popOn() {
			return pausedPop(req.Group), nil // pop maintenance: nothing, at once
		}
		// Watch before looking, so a change in between is not missed.
		changed, release := b.watch(req.Tenant, req.Queue)
		res, err := b.st.Pop(ctx, sreq)
		if err != nil || len(res.Messages) > 0 || !req.Wait {
			release()
			b.metrics.countPop(req.Tenant, res, req.AutoAck)
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
		woke := b.park(ctx, changed, wait)
		release()
		if !woke || ctx.Err() != nil {
			// A caller that left as the wake came gets no claim: with
			// autoAck it would consume what nobody reads.
			return &PopResult{Group: res.Group}, nil
		}
		if time.Until(deadline) <= 0 {
			// One last look: the wake may have come right at the deadline.
			res, err := b.st.Pop(ctx, sreq)
			b.metrics.countPop(req.Tenant, res, req.AutoAck)
			return res, err
		}
	}
}

// watch returns what a parked pop of queue (or, for "", of any queue) waits
// on, and the release to call when it stops waiting.
func (b *Broker) watch(tenant, queue string) (<-chan struct{}, func()) {
	if queue == "" {
		return b.st.WatchAny(), func() {}
	}
	return b.st.Watch(tenant, queue)
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

// Replay: consumer groups, subscriptions and seek.
type (
	SeekRequest   = seek.Request
	SeekTarget    = seek.Target
	SeekResult    = store.SeekResult
	PartitionSeek = store.PartitionSeek
	GroupSummary  = store.GroupSummary
	PartitionLag  = store.PartitionLag
)

// Seek moves one group's cursors on a queue (or one partition of it) to
// req.Target, releasing leases and resetting retry counters, and wakes
// parked pops so replay starts on the next poll.
func (b *Broker) Seek(ctx context.Context, req SeekRequest) (*SeekResult, error) {
	return seek.Seek(ctx, b.st, req)
}

// Groups lists tenant's (group, queue) pairs with their lag.
func (b *Broker) Groups(ctx context.Context, tenant string) ([]GroupSummary, error) {
	return b.st.Groups(ctx, tenant)
}

// Group returns every cursor of one group with its lag.
func (b *Broker) Group(ctx context.Context, tenant, group string) ([]PartitionLag, error) {
	return b.st.Group(ctx, tenant, group)
}

// LaggingPartitions returns the cursors whose oldest unconsumed segment is older than minLag.
func (b *Broker) LaggingPartitions(ctx context.Context, tenant string, minLag time.Duration) ([]PartitionLag, error) {
	return b.st.LaggingPartitions(ctx, tenant, minLag)
}

// UpdateSubscription makes partitions the group meets later start from t,
// on every queue it is subscribed to; it moves no cursor.
func (b *Broker) UpdateSubscription(ctx context.Context, tenant, group string, t time.Time) (int64, error) {
	return b.st.UpdateSubscription(ctx, tenant, group, t)
}

// DeleteGroup removes a group's cursors (on one queue when queue is not
// ""), and with deleteMetadata its subscription records.
func (b *Broker) DeleteGroup(ctx context.Context, tenant, group, queue string, deleteMetadata bool) (int64, error) {
	return b.st.DeleteGroup(ctx, tenant, group, queue, deleteMetadata)
}

// Snapshots: named captures of a group's cursors to seek back to.
type (
	Snapshot              = store.Snapshot
	SnapshotCursor        = store.SnapshotCursor
	CreateSnapshotRequest = store.CreateSnapshotRequest
	SnapshotUpdate        = store.SnapshotUpdate
)

// CreateSnapshot captures a group's committed offsets on every partition of a queue.
func (b *Broker) CreateSnapshot(ctx context.Context, req CreateSnapshotRequest) (*Snapshot, error) {
	if err := checkNames("name", req.Name, "consumerGroup", req.Group, "queue", req.Queue); err != nil {
		return nil, err
	}
	return b.st.CreateSnapshot(ctx, req)
}

// Snapshot returns a live snapshot with its cursors.
func (b *Broker) Snapshot(ctx context.Context, tenant, name string) (*Snapshot, error) {
	return b.st.Snapshot(ctx, tenant, name)
}

// Snapshots lists live snapshots, optionally of one group and/or queue.
func (b *Broker) Snapshots(ctx context.Context, tenant, group, queue string) ([]Snapshot, error) {
	return b.st.Snapshots(ctx, tenant, group, queue)
}

// UpdateSnapshot changes a live snapshot's labels and/or expiry.
func (b *Broker) UpdateSnapshot(ctx context.Context, tenant, name string, u SnapshotUpdate) (*Snapshot, error) {
	return b.st.UpdateSnapshot(ctx, tenant, name, u)
}

// DeleteSnapshot removes a live snapshot.
func (b *Broker) DeleteSnapshot(ctx context.Context, tenant, name string) error {
	return b.st.DeleteSnapshot(ctx, tenant, name)
}
