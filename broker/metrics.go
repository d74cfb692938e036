package broker

import (
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// Metrics counts what a broker did since Open. Counting happens here rather
// than in the HTTP adapter so a program embedding the broker gets the same
// numbers. Everything is in memory and starts at zero on every Open.
type Metrics struct {
	clock Clock
	start time.Time

	// Cluster totals, as the per-queue counters summed.
	Pushed       atomic.Int64 // messages stored by pushes, transactions, cycles and re-drives (not duplicates)
	Popped       atomic.Int64 // messages delivered by pops
	Acked        atomic.Int64 // messages completed: acks "completed"/"success" and autoAck pops
	DeadLettered atomic.Int64 // messages dead-lettered by an ack

	mu     sync.Mutex
	queues map[QueueKey]*QueueCounters

	// CommitOps observes how many writes each commit fused; CommitSeconds
	// how long each commit took, begin to durable.
	CommitOps     *Histogram // buckets 1, 2, 4 … 1024 writes
	CommitSeconds *Histogram // buckets 100 µs … 1 s

	// Per-minute series for throughput charts, the last 24 hours.
	pushedPerMinute minuteSeries
	ackedPerMinute  minuteSeries
}

// QueueKey names a queue across tenants.
type QueueKey struct {
	Tenant string // "" is the default tenant
	Queue  string // the queue's name
}

// QueueCounters are one queue's counters, counted as Metrics' totals are.
// A queue's counters go when the queue is deleted.
type QueueCounters struct {
	Pushed       atomic.Int64 // messages stored
	Popped       atomic.Int64 // messages delivered
	Acked        atomic.Int64 // messages completed
	DeadLettered atomic.Int64 // messages dead-lettered
}

func newMetrics(c Clock) *Metrics {
	return &Metrics{
		clock:     c,
		start:     c.Now(),
		queues:    map[QueueKey]*QueueCounters{},
		CommitOps: NewHistogram([]float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}),
		CommitSeconds: NewHistogram([]float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
			0.1, 0.25, 0.5, 1}),
	}
}

// Uptime is the time since the broker opened.
func (m *Metrics) Uptime() time.Duration { return m.clock.Now().Sub(m.start) }

func (m *Metrics) queue(tenant, name string) *QueueCounters {
	k := QueueKey{tenant, name}
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.queues[k]
	if c == nil {
		c = &QueueCounters{}
		m.queues[k] = c
	}
	return c
}

// Queues returns a copy of the map of per-queue counters.
func (m *Metrics) Queues() map[QueueKey]*QueueCounters {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[QueueKey]*QueueCounters, len(m.queues))
	for k, v := range m.queues {
		out[k] = v
	}
	return out
}

// forget drops a deleted queue's counters, so a broker whose queues come
// and go does not grow without bound.
func (m *Metrics) forget(tenant, queue string) {
	m.mu.Lock()
	delete(m.queues, QueueKey{tenant, queue})
	m.mu.Unlock()
}

func (m *Metrics) pushed(tenant, queue string, n int64) {
	if n == 0 {
		return
	}
	m.Pushed.Add(n)
	m.queue(tenant, queue).Pushed.Add(n)
	m.pushedPerMinute.add(m.clock.Now(), n)
}

func (m *Metrics) popped(tenant, queue string, n int64) {
	if n == 0 {
		return
	}
	m.Popped.Add(n)
	m.queue(tenant, queue).Popped.Add(n)
}

func (m *Metrics) acked(tenant, queue string, n int64) {
	if n == 0 {
		return
	}
	m.Acked.Add(n)
	m.queue(tenant, queue).Acked.Add(n)
	m.ackedPerMinute.add(m.clock.Now(), n)
}

func (m *Metrics) deadLettered(tenant, queue string, n int64) {
	if n == 0 {
		return
	}
	m.DeadLettered.Add(n)
	m.queue(tenant, queue).DeadLettered.Add(n)
}

func (m *Metrics) countPush(tenant string, results []combtype.PushResult) {
	// Counted a run of one queue at a time: a push names one queue for all
	// its items as a rule, and each count takes two locks and the clock.
	queue, n := "", int64(0)
	for _, r := range results {
		if r.Status != "queued" {
			continue
		}
		if r.Queue != queue {
			m.pushed(tenant, queue, n)
			queue, n = r.Queue, 0
		}
		n++
	}
	m.pushed(tenant, queue, n)
}

func (m *Metrics) countPop(tenant string, res *combtype.PopResult, autoAck bool) {
	if res == nil || len(res.Messages) == 0 {
		return
	}
	for _, msg := range res.Messages {
		m.popped(tenant, msg.Queue, 1)
		if autoAck {
			m.acked(tenant, msg.Queue, 1)
		}
	}
}

// countAck counts applied acks: completions as acked, dead-letterings as
// dead-lettered. Refused acks and retries count as neither.
func (m *Metrics) countAck(tenant string, item *combtype.AckItem, res *combtype.AckResult) {
	if !res.Success {
		return
	}
	switch {
	case res.DLQ:
		m.deadLettered(tenant, res.Queue, 1)
	case item.Status == "" || item.Status == "completed" || item.Status == "success":
		m.acked(tenant, res.Queue, 1)
	}
}

func (m *Metrics) countTransaction(tenant string, ops []combtype.TxOp, results []combtype.TxOpResult) {
	for i := range results {
		if results[i].Ack != nil && i < len(ops) {
			m.countAck(tenant, &ops[i].Ack, results[i].Ack)
		}
		m.countPush(tenant, results[i].Pushes)
	}
}

func (m *Metrics) observeCommit(ops int, d time.Duration) {
	m.CommitOps.Observe(float64(ops))
	m.CommitSeconds.Observe(d.Seconds())
}

// MinutePoint is one minute of throughput.
type MinutePoint struct {
	Minute time.Time // the minute's start, by the broker's clock
	Pushed int64     // messages stored in it
	Acked  int64     // messages completed in it
}

// Throughput returns per-minute pushed and acked counts for the minutes
// in [from, to] that are within the last 24 hours, oldest first; minutes
// with no activity are included as zeros.
func (m *Metrics) Throughput(from, to time.Time) []MinutePoint {
	now := m.clock.Now()
	oldest := now.Add(-(seriesMinutes - 1) * time.Minute).Truncate(time.Minute)
	from = maxTime(from.Truncate(time.Minute), oldest)
	to = minTime(to, now).Truncate(time.Minute)
	var out []MinutePoint
	for t := from; !t.After(to); t = t.Add(time.Minute) {
		out = append(out, MinutePoint{Minute: t, Pushed: m.pushedPerMinute.get(t), Acked: m.ackedPerMinute.get(t)})
	}
	return out
}

// Rates are per-second averages over the last complete minute.
func (m *Metrics) Rates() (pushedPerSec, ackedPerSec float64) {
	prev := m.clock.Now().Truncate(time.Minute).Add(-time.Minute)
	return float64(m.pushedPerMinute.get(prev)) / 60, float64(m.ackedPerMinute.get(prev)) / 60
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

const seriesMinutes = 24 * 60

// minuteSeries is a ring of per-minute counts; a slot whose stamp is not
// the minute asked for counts as zero.
type minuteSeries struct {
	mu    sync.Mutex
	stamp [seriesMinutes]int64 // unix minute the slot holds
	count [seriesMinutes]int64
}

func (s *minuteSeries) add(t time.Time, n int64) {
	minute := t.Unix() / 60
	i := minute % seriesMinutes
	if i < 0 {
		i += seriesMinutes
	}
	s.mu.Lock()
	if s.stamp[i] != minute {
		s.stamp[i], s.count[i] = minute, 0
	}
	s.count[i] += n
	s.mu.Unlock()
}

func (s *minuteSeries) get(t time.Time) int64 {
	minute := t.Unix() / 60
	i := minute % seriesMinutes
	if i < 0 {
		i += seriesMinutes
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stamp[i] != minute {
		return 0
	}
	return s.count[i]
}

// Histogram counts observations into fixed buckets. It is safe for
// concurrent use and lock-free, so the writer goroutine can observe every
// commit without waiting on a scrape.
type Histogram struct {
	bounds  []float64 // upper bounds, ascending
	counts  []atomic.Uint64
	total   atomic.Uint64
	sumBits atomic.Uint64 // float64 bits of the sum
}

// NewHistogram returns a histogram with the given ascending upper bounds.
func NewHistogram(bounds []float64) *Histogram {
	b := append([]float64(nil), bounds...)
	sort.Float64s(b)
	return &Histogram{bounds: b, counts: make([]atomic.Uint64, len(b))}
}

// Observe records v.
func (h *Histogram) Observe(v float64) {
	i := sort.SearchFloat64s(h.bounds, v)
	if i < len(h.counts) {
		h.counts[i].Add(1)
	}
	h.total.Add(1)
	for {
		old := h.sumBits.Load()
		if h.sumBits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// Snapshot returns the number of observations, their sum, and the
// cumulative count at each upper bound.
func (h *Histogram) Snapshot() (count uint64, sum float64, cumulative map[float64]uint64) {
	cumulative = make(map[float64]uint64, len(h.bounds))
	var running uint64
	for i, b := range h.bounds {
		running += h.counts[i].Load()
		cumulative[b] = running
	}
	// Read the total last: it is at least every bucket read before it.
	return max(h.total.Load(), running), math.Float64frombits(h.sumBits.Load()), cumulative
}
