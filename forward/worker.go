package forward

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
)

// popPartitions is how many partitions one local pop of a push forwarder
// may claim: more fills batches when partitions are many and short.
const popPartitions = 32

// worker moves the messages of one forwarder until its context ends.
type worker struct {
	r      *Runner
	def    *combtype.Forwarder
	up     *upstream
	cancel context.CancelFunc
	done   chan struct{}

	// lastAcked is, per local partition uuid, the last offset this worker
	// acked; a batch starting further on means something in between was
	// evicted unforwarded (or has to be checked).
	lastAcked map[string]int64
	failures  int       // consecutive failures, for the backoff
	failingAt time.Time // the first of them

	mu     sync.Mutex
	status broker.ForwarderStatus
}

func (w *worker) run(ctx context.Context) {
	log := w.r.log.With("forwarder", w.def.Name, "direction", w.def.Direction)
	log.Info("forwarder started", "queue", w.def.Queue, "upstream", w.def.UpstreamURL)
	var err error
	if w.def.Direction == combtype.ForwardPull {
		err = w.runPull(ctx)
	} else {
		err = w.runPush(ctx)
	}
	if err != nil && ctx.Err() == nil {
		log.Error("forwarder stopped", "err", err)
		w.setError(err)
	}
	w.mu.Lock()
	w.status.State = "stopped"
	w.mu.Unlock()
}

// succeeded records an exchange that worked: n messages delivered, dead
// more dead-lettered, dups of them answered duplicate; newest is the
// commit time of the newest message delivered (zero when unknown).
func (w *worker) succeeded(n, dead, dups int, newest time.Time) {
	now := w.r.opts.Clock.Now()
	if w.failures > 0 {
		w.mu.Lock()
		lastErr := w.status.LastError
		w.mu.Unlock()
		w.r.log.Info("forwarder recovered", "forwarder", w.def.Name, "direction", w.def.Direction,
			"failures", w.failures, "failingFor", now.Sub(w.failingAt).Round(time.Millisecond), "lastError", lastErr)
	}
	w.failures = 0
	w.mu.Lock()
	defer w.mu.Unlock()
	w.status.State = "running"
	w.status.Forwarded += int64(n)
	w.status.DeadLettered += int64(dead)
	w.status.Duplicates += int64(dups)
	w.status.LastSuccessAt = now
	if n > 0 && !newest.IsZero() {
		w.status.LagSeconds = max(now.Sub(newest).Seconds(), 0)
	}
}

func (w *worker) setError(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.status.LastError = err.Error()
	w.status.LastErrorAt = w.r.opts.Clock.Now()
}

// fail records err and waits out the backoff; it returns an error only
// when ctx ended.
func (w *worker) fail(ctx context.Context, err error) error {
	return w.failAtLeast(ctx, err, 0)
}

// failAtLeast is fail waiting at least least.
func (w *worker) failAtLeast(ctx context.Context, err error, least time.Duration) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	w.setError(err)
	d := max(w.r.backoff(w.failures), least)
	if w.failures == 0 {
		w.failingAt = w.r.opts.Clock.Now()
	}
	w.failures++
	w.mu.Lock()
	w.status.State = "backoff"
	w.mu.Unlock()
	w.r.log.Warn("forwarder failed; retrying", "forwarder", w.def.Name, "err", err, "in", d)
	if err := w.r.opts.Sleep(ctx, d); err != nil {
		return err
	}
	w.mu.Lock()
	w.status.State = "running"
	w.mu.Unlock()
	return nil
}

// retry runs op until it succeeds, backing off after each failure, and
// gives up only when ctx ends or op fails permanently.
func (w *worker) retry(ctx context.Context, op func() error) error {
	for {
		err := op()
		if err == nil || permanent(err) || ctx.Err() != nil {
			return err
		}
		if err := w.fail(ctx, err); err != nil {
			return err
		}
	}
}

// local is the broker acting for the forwarder's tenant.
func (w *worker) local() *broker.Broker { return w.r.b.Tenant(w.def.Tenant) }

// runPush drains the local queue(s) upstream, one batch at a time per
// worker, so each partition reaches the upstream in order.
func (w *worker) runPush(ctx context.Context) error {
	// This worker is its group's only consumer: a lease the group holds
	// now is a batch a previous run (a crash, a pause) left unacked.
	if err := w.retry(ctx, func() error {
		_, err := w.local().GroupReleaseLeases(ctx, w.def.Group)
		return err
	}); err != nil {
		return err
	}
	if err := w.retry(ctx, func() error {
		offsets, err := w.local().GroupOffsets(ctx, w.def.Group)
		for pid, o := range offsets {
			w.lastAcked[pid] = o.Committed
		}
		return err
	}); err != nil {
		return err
	}
	single := !broker.IsQueuePattern(w.def.Queue)
	for ctx.Err() == nil {
		queues, err := w.r.queues(ctx, w.def)
		if err != nil {
			if err := w.fail(ctx, err); err != nil {
				return err
			}
			continue
		}
		moved := false
		for _, q := range queues {
			res, err := w.local().Pop(ctx, combtype.PopRequest{Queue: q, Group: w.def.Group,
				Batch: w.def.Batch, Partitions: popPartitions, SubscriptionMode: "all",
				Wait: single, Timeout: w.r.opts.Poll})
			if err != nil {
				if err := w.fail(ctx, fmt.Errorf("pop local %s: %w", q, err)); err != nil {
					return err
				}
				continue
			}
			if len(res.Messages) == 0 {
				continue
			}
			moved = true
			if err := w.forward(ctx, q, res.Messages); err != nil {
				return err
			}
		}
		if !moved && !single {
			if err := w.r.opts.Sleep(ctx, w.r.opts.Poll/5); err != nil {
				return err
			}
		}
	}
	return ctx.Err()
}

// forward sends one popped batch upstream and acks it locally. A message
// is acked only once the upstream answered it queued or duplicate; one the
// upstream will never store is dead-lettered locally with the upstream's
// error. It returns an error only when ctx ended.
func (w *worker) forward(ctx context.Context, queue string, msgs []combtype.Message) error {
	w.countEvicted(ctx, msgs)
	upQueue := cmp.Or(w.def.UpstreamQueue, queue)
	items := make([]wireItem, len(msgs))
	for i, m := range msgs {
		items[i] = wireItem{Queue: upQueue, Partition: m.Partition, Payload: json.RawMessage(m.Payload),
			TransactionID: UpstreamID(w.def.IDPrefix, m.TxnID), TraceID: m.TraceID}
	}
	// refused[i] is why the upstream will never store msgs[i], "" once it
	// stored it.
	refused := make([]string, len(msgs))
	dups := 0
	sure := false // the upstream was last seen storing pushes, for certain
	one := func(i int) error {
		status, why, err := w.deliverOne(ctx, items[i], sure)
		refused[i] = why
		if status == itemDuplicate {
			dups++
		}
		return err
	}
	var statuses []string
	err := w.retry(ctx, func() error {
		var err error
		statuses, err = w.up.push(ctx, items)
		return err
	})
	switch {
	case err == nil:
		settled := false
		var err error
		for i, st := range statuses {
			switch st {
			case itemDuplicate:
				dups++
			case itemBuffered:
				// No proof of storage: each such item is confirmed alone,
				// in order (Queen parks a whole request at once, so these
				// are all of them), once the upstream has replayed what it
				// can of its buffer.
				if !settled {
					if sure, err = w.settled(ctx, items[i].TransactionID); err != nil {
						return err
					}
					settled = true
				}
				if err := one(i); err != nil {
					return err
				}
			}
		}
	case permanent(err):
		// Something in the batch is refused for good; find what by sending
		// one at a time, in order, so the partition keeps moving.
		for i := range items {
			if err := one(i); err != nil {
				return err
			}
		}
	default:
		return err // ctx ended
	}
	acks := make([]combtype.AckItem, len(msgs))
	var newest time.Time
	for i, m := range msgs {
		acks[i] = combtype.AckItem{TxnID: m.TxnID, PartitionID: m.PartitionID, Status: "completed", Group: w.def.Group}
		if refused[i] != "" {
			w.setError(fmt.Errorf("dead-lettered %s: upstream %s", m.TxnID, refused[i]))
			acks[i].Status, acks[i].Error = "dlq", "forward to "+w.def.UpstreamURL+": "+refused[i]
		} else if m.CreatedAt.After(newest) {
			newest = m.CreatedAt
		}
	}
	// The ack carries no lease: this worker is the group's only consumer,
	// and a lease that expired during a long backoff must not turn a batch
	// the upstream holds into a resend.
	var results []combtype.AckResult
	if err := w.retry(ctx, func() error {
		var err error
		results, err = w.local().Ack(context.WithoutCancel(ctx), acks)
		return err
	}); err != nil {
		return err
	}
	done, dead := 0, 0
	for i, res := range results {
		if !res.Success {
			w.setError(fmt.Errorf("local ack of %s: %v", acks[i].TxnID, res.Err))
			continue
		}
		done++
		if res.DLQ {
			dead++
		}
	}
	for _, m := range msgs {
		w.lastAcked[m.PartitionID] = max(w.lastAcked[m.PartitionID], m.Offset)
	}
	w.succeeded(done-dead, dead, dups, newest)
	return nil
}

// deliverOne sends one item alone until the upstream stores it (queued or
// duplicate, returned as status), refuses it for good (returned as
// refusal), or ctx ends (returned as err). A "buffered" answer proves
// nothing: the item is sent again once the upstream has settled (see
// settled); a copy that an outage or a maintenance parked has been stored
// by the upstream's replay by then, and the send is answered duplicate.
// The item counts as refused once it has been answered buffered twice
// when sent while the upstream said, for certain, that it was storing
// pushes: that is what Queen does with an item its database refuses. An
// upstream whose maintenance state cannot be read gets the item again and
// again, never refused. sure tells whether the upstream was last seen
// storing for certain (the caller waited for it to settle).
func (w *worker) deliverOne(ctx context.Context, it wireItem, sure bool) (status, refusal string, err error) {
	strikes := 0
	for {
		var st []string
		err := w.retry(ctx, func() error {
			var err error
			st, err = w.up.push(ctx, []wireItem{it})
			return err
		})
		if err == nil && st[0] == itemBuffered && sure {
			strikes++
		}
		switch {
		case err == nil && st[0] != itemBuffered:
			return st[0], "", nil
		case err == nil && strikes >= 2:
			return "", fmt.Sprintf("cannot store it: answered %q each time it was sent alone while healthy and not in maintenance "+
				"(Queen parks an item its database refuses in its file buffer, whose replay then fails; its log names the error)",
				itemBuffered), nil
		case err == nil:
		case permanent(err):
			return "", "refused: " + err.Error(), nil
		default:
			return "", "", err
		}
		if sure, err = w.settled(ctx, it.TransactionID); err != nil {
			return "", "", err
		}
		if !sure {
			// Nothing tells when it may be stored: send it again at the
			// pace of a failure.
			msg := fmt.Sprintf("%s answered %q: not yet confirmed stored upstream; its maintenance state cannot be read",
				it.TransactionID, itemBuffered)
			if err := w.failAtLeast(ctx, errors.New(msg), w.r.opts.BufferSettle); err != nil {
				return "", "", err
			}
		}
	}
}

// settled waits until the upstream says it stores pushes (healthy, push
// maintenance off) and has replayed what it can of its own buffer: none
// parked, or a count that has not gone down for Options.BufferStall (a
// replay that fails for ever, which Queen retries every second; a replay
// that has not started yet holds the count still too, so one wait is not
// enough). An item sent again
// while the upstream's replay may still store a parked copy of it, or of
// the items after it, could commit in either order with that replay, and
// the partition's order with it. sure is false when the upstream's
// maintenance state could not be read. It returns an error only when ctx
// ended.
func (w *worker) settled(ctx context.Context, id string) (sure bool, err error) {
	last := int64(-1)
	// still is a lower bound on how long the count has not gone down: the
	// sum of the least waits since it last did (time the tests' Sleep
	// does not spend still counts).
	var still time.Duration
	for {
		st := w.up.state(ctx)
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		msg := fmt.Sprintf("%s answered %q: not yet confirmed stored upstream; ", id, itemBuffered)
		switch {
		case !st.storing:
			last, still = -1, 0
			msg += st.why
		case st.buffered <= 0 || (last >= 0 && st.buffered >= last && still >= w.r.opts.BufferStall):
			return !st.unsure, nil
		default:
			if last < 0 || st.buffered < last {
				still = 0
			}
			last = st.buffered
			msg += fmt.Sprintf("waiting for the upstream to replay its buffer (%d parked)", st.buffered)
		}
		if err := w.failAtLeast(ctx, errors.New(msg), w.r.opts.BufferSettle); err != nil {
			return false, err
		}
		still += w.r.opts.BufferSettle
	}
}

// MaxUpstreamID is the longest transactionId sent upstream, in bytes:
// Queen stores transactionIds in VARCHAR(255) columns.
const MaxUpstreamID = 255

// UpstreamID is the transactionId a push forwarder with prefix sends for
// a local message of transactionId id: prefix and id, or, when the two
// would exceed MaxUpstreamID, prefix and a SHA-256 digest of id, the same
// at every resend so that the upstream's dedup still holds. Prefix "none"
// sends id as it is.
func UpstreamID(prefix, id string) string {
	if prefix == combtype.ForwarderNoIDPrefix || prefix == "" {
		return id
	}
	if len(prefix)+len(id) <= MaxUpstreamID {
		return prefix + id
	}
	sum := sha256.Sum256([]byte(id))
	return prefix + "sha256-" + hex.EncodeToString(sum[:])
}

// countEvicted adds to the forwarder's evicted count the messages that
// retention removed between the last offset the group is known to have
// completed on a partition and this batch's first message there: they were
// never forwarded and never will be. (A pop moves the cursor past evicted
// offsets when it claims, so what the group had completed is taken from
// the worker's own acks, seeded from the cursors when it started.)
// Messages evicted from a partition before the group first met it are not
// counted: the group never had a position there.
func (w *worker) countEvicted(ctx context.Context, msgs []combtype.Message) {
	first := map[string]int64{}
	for _, m := range msgs {
		if f, ok := first[m.PartitionID]; !ok || m.Offset < f {
			first[m.PartitionID] = m.Offset
		}
	}
	var evicted int64
	var offsets map[string]combtype.CursorOffsets
	for pid, f := range first {
		last, ok := w.lastAcked[pid]
		if !ok || f == last+1 {
			continue
		}
		if offsets == nil {
			var err error
			if offsets, err = w.local().GroupOffsets(ctx, w.def.Group); err != nil {
				w.setError(fmt.Errorf("check evictions: %w", err))
				return
			}
		}
		// A gap above log_start is deleted messages, skipped on purpose.
		logStart := offsets[pid].LogStart
		if n := min(f, logStart) - last - 1; n > 0 {
			evicted += n
		}
	}
	if evicted == 0 {
		return
	}
	w.r.log.Warn("retention evicted messages before they were forwarded", "forwarder", w.def.Name, "messages", evicted)
	w.setError(fmt.Errorf("retention evicted %d messages before they were forwarded", evicted))
	if err := w.local().Forwarders().AddEvicted(ctx, w.def.Name, evicted); err != nil {
		w.setError(fmt.Errorf("count evicted messages: %w", err))
	}
}

// pendingAck is the upstream ack a pull worker owes, kept in the broker
// so that a restart gives the batch back at once instead of leaving it
// leased upstream until the lease expires.
type pendingAck struct {
	LeaseID string    `json:"leaseId"`
	Items   []wireAck `json:"items"`
}

// runPull feeds the local queue from the upstream group, one batch at a
// time: pop upstream, push locally, ack upstream.
func (w *worker) runPull(ctx context.Context) error {
	upQueue := cmp.Or(w.def.UpstreamQueue, w.def.Queue)
	if w.def.PendingAck != "" {
		var p pendingAck
		if json.Unmarshal([]byte(w.def.PendingAck), &p) == nil && len(p.Items) > 0 {
			// Whether the last batch reached the local log is unknown: give
			// it back ("retry" drops the lease without using a retry); it
			// comes again and the local dedup absorbs what was stored.
			for i := range p.Items {
				p.Items[i].Status = "retry"
			}
			if err := w.retry(ctx, func() error {
				_, err := w.up.ack(ctx, w.def.Group, p.Items)
				return err
			}); err != nil && ctx.Err() != nil {
				return err
			}
		}
	}
	for ctx.Err() == nil {
		msgs, err := w.up.pop(ctx, upQueue, w.def.Group, w.def.Batch, w.r.opts.Poll)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err := w.fail(ctx, fmt.Errorf("pop upstream %s: %w", upQueue, err)); err != nil {
				return err
			}
			continue
		}
		if len(msgs) == 0 {
			w.succeeded(0, 0, 0, time.Time{})
			continue
		}
		if err := w.pull(ctx, msgs); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// pull commits one upstream batch locally and then acks it upstream. It
// returns an error only when ctx ended.
func (w *worker) pull(ctx context.Context, msgs []wireMessage) error {
	acks := make([]wireAck, len(msgs))
	for i, m := range msgs {
		acks[i] = wireAck{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: m.LeaseID, Status: "completed"}
	}
	pending, _ := json.Marshal(pendingAck{LeaseID: msgs[0].LeaseID, Items: acks})
	if err := w.retry(ctx, func() error {
		return w.local().Forwarders().SetPendingAck(ctx, w.def.Name, string(pending))
	}); err != nil {
		return err
	}
	items := make([]combtype.PushItem, len(msgs))
	for i, m := range msgs {
		payload := []byte(m.Data)
		if len(payload) == 0 {
			payload = []byte("null")
		}
		items[i] = combtype.PushItem{Queue: w.def.Queue, Partition: m.Partition, Payload: payload, TxnID: m.TransactionID}
		if m.TraceID != nil {
			items[i].TraceID = *m.TraceID
		}
	}
	err := w.retry(ctx, func() error { return w.localPush(ctx, items) })
	switch {
	case err == nil:
	case errors.Is(err, combtype.ErrInvalid):
		// The local broker refuses something in the batch for good: find
		// it one by one and dead-letter it upstream with the local error.
		for i := range items {
			err := w.retry(ctx, func() error { return w.localPush(ctx, items[i:i+1]) })
			switch {
			case err == nil:
			case errors.Is(err, combtype.ErrInvalid):
				acks[i].Status, acks[i].Error = "dlq", "pull into "+w.def.Queue+" refused: "+err.Error()
			default:
				return err
			}
		}
	default:
		return err
	}
	var refused int
	if err := w.retry(ctx, func() error {
		var err error
		refused, err = w.up.ack(ctx, w.def.Group, acks)
		return err
	}); err != nil {
		if ctx.Err() != nil {
			return err
		}
		// Refused for good: the messages come back when the lease ends,
		// and the local dedup absorbs them.
		w.setError(fmt.Errorf("upstream ack: %w", err))
		return nil
	}
	if refused > 0 {
		w.setError(fmt.Errorf("upstream refused %d of %d acks; they come back and are absorbed by dedup", refused, len(acks)))
	}
	dead := 0
	var newest time.Time
	for i, a := range acks {
		if a.Status == "dlq" {
			dead++
		} else if t, err := time.Parse(time.RFC3339Nano, msgs[i].CreatedAt); err == nil && t.After(newest) {
			newest = t
		}
	}
	w.succeeded(len(msgs)-dead, dead, 0, newest)
	return nil
}

// localPush pushes items into the local broker; a refusal of their content
// is permanent, anything else (the broker closing) is not.
func (w *worker) localPush(ctx context.Context, items []combtype.PushItem) error {
	_, err := w.local().Push(context.WithoutCancel(ctx), items)
	return err
}
