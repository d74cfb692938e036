// Package forward joins a comb broker to an upstream broker (comb, or Queen)
// over the push, pop and ack routes: a push forwarder drains a local queue
// upstream through its own local consumer group, a pull forwarder feeds a
// local queue from an upstream consumer group. Definitions are kept by the
// broker; the Runner owns the goroutines that move the messages.
package forward

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
)

// Defaults of Options. A definition's defaults and bounds are the
// broker's (broker.NormalizeForwarder).
const (
	DefaultMinBackoff = 250 * time.Millisecond
	DefaultMaxBackoff = 30 * time.Second
	DefaultPoll       = 5 * time.Second
	// DefaultBufferSettle is the least wait before an item the upstream
	// answered "buffered" is sent again: time for the upstream's own
	// replay of its buffer (Queen's runs about every second) to store it.
	DefaultBufferSettle = 2 * time.Second
	// DefaultBufferStall is how long the upstream's count of parked items
	// must hold still before its replay is taken as failed and the items
	// are sent again. Sending them while a slow replay still runs would let
	// the two commit in either order, and the partition's order with them.
	DefaultBufferStall = 10 * time.Second
)

// Options configure a Runner.
type Options struct {
	// Client talks to upstreams. Default: a client with a 2-minute timeout.
	Client *http.Client
	// Clock stamps the status times. Default the wall clock.
	Clock clock.Clock
	// Sleep waits d or until ctx ends, between retries and polls. Default a
	// timer; tests replace it to run backoff without waiting.
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter returns a number in [0, 1) spreading each backoff. Default rand.
	Jitter func() float64
	// MinBackoff and MaxBackoff bound the wait after a failure; it doubles
	// from MinBackoff on each consecutive failure, up to MaxBackoff.
	MinBackoff, MaxBackoff time.Duration
	// Poll is how long a pop waits for messages, and how often a pattern
	// forwarder looks for new queues.
	Poll time.Duration
	// BufferSettle is the least wait before an item answered "buffered"
	// is sent again. Default DefaultBufferSettle.
	BufferSettle time.Duration
	// BufferStall is how long the upstream's count of parked items must
	// not go down before its replay is taken as failed. Default
	// DefaultBufferStall; never less than BufferSettle.
	BufferStall time.Duration
	// DeviceID names this device in the transactionIds its push
	// forwarders send upstream (the default IDPrefix is DeviceID + ":").
	// Default: the id stored in the database, chosen at first need as the
	// host name and a random suffix.
	DeviceID string
	Logger   *slog.Logger
}

// Runner runs every forwarder stored in a broker. Start it once the broker
// is open and Stop it before the broker closes.
type Runner struct {
	b    *broker.Broker
	opts Options
	log  *slog.Logger

	mu       sync.Mutex
	ctx      context.Context // nil until Start; cancelled by Stop
	cancel   context.CancelFunc
	workers  map[key]*worker
	deviceID string // "" until first needed
}

type key struct{ tenant, name string }

// New returns a Runner over b.
func New(b *broker.Broker, opts Options) *Runner {
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: 2 * time.Minute}
	}
	opts.Clock = cmp.Or[clock.Clock](opts.Clock, clock.Real{})
	if opts.Sleep == nil {
		opts.Sleep = sleep
	}
	if opts.Jitter == nil {
		opts.Jitter = rand.Float64
	}
	opts.MinBackoff = cmp.Or(opts.MinBackoff, DefaultMinBackoff)
	opts.MaxBackoff = max(cmp.Or(opts.MaxBackoff, DefaultMaxBackoff), opts.MinBackoff)
	opts.Poll = cmp.Or(opts.Poll, DefaultPoll)
	opts.BufferSettle = cmp.Or(opts.BufferSettle, DefaultBufferSettle)
	opts.BufferStall = max(cmp.Or(opts.BufferStall, DefaultBufferStall), opts.BufferSettle)
	return &Runner{b: b, opts: opts, log: cmp.Or(opts.Logger, slog.Default()), workers: map[key]*worker{}}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Start starts a worker for every stored forwarder that is not paused.
func (r *Runner) Start(ctx context.Context) error {
	defs, err := r.b.Forwarders().ListAll(ctx)
	if err != nil {
		return fmt.Errorf("start forwarders: %w", err)
	}
	for _, d := range defs {
		// A push forwarder stored before id prefixes existed gets the
		// device's now, before it sends anything.
		if d.Direction == combtype.ForwardPush && d.IDPrefix == "" {
			if d.IDPrefix, err = r.defaultIDPrefix(ctx); err == nil {
				err = r.b.Tenant(d.Tenant).Forwarders().SetIDPrefix(ctx, d.Name, d.IDPrefix)
			}
			if err != nil {
				return fmt.Errorf("start forwarder %q: %w", d.Name, err)
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctx != nil {
		return errors.New("start forwarders: already started")
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	for _, d := range defs {
		r.startLocked(d)
	}
	return nil
}

// DeviceID returns the id this runner puts in the default IDPrefix.
func (r *Runner) DeviceID(ctx context.Context) (string, error) {
	r.mu.Lock()
	id := r.deviceID
	r.mu.Unlock()
	if id != "" {
		return id, nil
	}
	id = r.opts.DeviceID
	if id == "" {
		var err error
		if id, err = r.b.DeviceID(ctx, newDeviceID()); err != nil {
			return "", fmt.Errorf("device id: %w", err)
		}
	}
	r.mu.Lock()
	r.deviceID = id
	r.mu.Unlock()
	return id, nil
}

func (r *Runner) defaultIDPrefix(ctx context.Context) (string, error) {
	id, err := r.DeviceID(ctx)
	if err != nil {
		return "", err
	}
	return id + ":", nil
}

// newDeviceID is the host name, cut to the characters a name keeps, and
// a random suffix: host names repeat across a fleet (every image's
// default, every container's), and two devices taken for one another
// would have their messages deduplicated against each other upstream.
func newDeviceID() string {
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		// The characters a forwarder's name may hold.
		if r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_.-", r)) {
			return r
		}
		return -1
	}, host)
	if len(host) > 63 {
		host = host[:63]
	}
	var b [4]byte
	crand.Read(b[:])
	return cmp.Or(host, "comb") + "-" + hex.EncodeToString(b[:])
}

// Stop stops every worker and waits for them. A batch in flight is
// abandoned before its local ack; it is sent again after the next start,
// and the receiving side's dedup by transactionId absorbs the resend.
func (r *Runner) Stop() {
	r.mu.Lock()
	if r.cancel != nil {
		r.cancel()
	}
	workers := make([]*worker, 0, len(r.workers))
	for _, w := range r.workers {
		workers = append(workers, w)
	}
	r.mu.Unlock()
	for _, w := range workers {
		<-w.done
	}
}

// startLocked starts def's worker unless it is paused, replacing none: the
// caller stopped any previous one.
func (r *Runner) startLocked(def *combtype.Forwarder) {
	k := key{def.Tenant, def.Name}
	if def.Paused || r.ctx == nil || r.ctx.Err() != nil {
		delete(r.workers, k)
		return
	}
	ctx, cancel := context.WithCancel(r.ctx)
	w := &worker{r: r, def: def, cancel: cancel, done: make(chan struct{}), lastAcked: map[string]int64{},
		up: &upstream{client: r.opts.Client, base: def.UpstreamURL, token: def.Token}}
	w.status.State, w.status.Lag, w.status.LagSeconds = "running", -1, -1
	r.workers[k] = w
	go func() {
		defer close(w.done)
		w.run(ctx)
	}()
}

// stop stops the worker of k, if any, and waits for it.
func (r *Runner) stop(k key) {
	r.mu.Lock()
	w := r.workers[k]
	delete(r.workers, k)
	r.mu.Unlock()
	if w != nil {
		w.cancel()
		<-w.done
	}
}

// Create stores a new forwarder and starts it.
func (r *Runner) Create(ctx context.Context, f *combtype.Forwarder) (*broker.ForwarderStatus, error) {
	return r.put(ctx, f, false)
}

// Declare stores f, replacing the definition of an existing forwarder of
// that name but keeping its state (paused, evicted count), and (re)starts
// it. It is how flags and the config file declare forwarders at start.
func (r *Runner) Declare(ctx context.Context, f *combtype.Forwarder) (*broker.ForwarderStatus, error) {
	return r.put(ctx, f, true)
}

func (r *Runner) put(ctx context.Context, f *combtype.Forwarder, replace bool) (*broker.ForwarderStatus, error) {
	if err := broker.NormalizeForwarder(f); err != nil {
		return nil, err
	}
	if f.IDPrefix == "" {
		// A forwarder keeps the prefix it was first stored with: a new one
		// would send a batch resent after a restart under other ids.
		old, err := r.b.Tenant(f.Tenant).Forwarders().Get(ctx, f.Name)
		switch {
		case err == nil && old.IDPrefix != "" && old.Direction == combtype.ForwardPush:
			f.IDPrefix = old.IDPrefix
		case err == nil || errors.Is(err, combtype.ErrForwarderNotFound):
			if f.IDPrefix, err = r.defaultIDPrefix(ctx); err != nil {
				return nil, err
			}
		default:
			return nil, err
		}
	}
	if err := r.b.Tenant(f.Tenant).Forwarders().Put(ctx, f, replace); err != nil {
		return nil, err
	}
	return r.restart(ctx, f.Tenant, f.Name)
}

// restart stops the worker of (tenant, name) and starts it again from the
// stored definition.
func (r *Runner) restart(ctx context.Context, tenant, name string) (*broker.ForwarderStatus, error) {
	k := key{tenant, name}
	r.stop(k)
	def, err := r.b.Tenant(tenant).Forwarders().Get(ctx, name)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.startLocked(def)
	r.mu.Unlock()
	return r.status(ctx, def), nil
}

// SetPaused pauses (stopping its worker) or resumes a forwarder; the
// choice is stored and survives restarts.
func (r *Runner) SetPaused(ctx context.Context, tenant, name string, paused bool) (*broker.ForwarderStatus, error) {
	if err := r.b.Tenant(tenant).Forwarders().SetPaused(ctx, name, paused); err != nil {
		return nil, err
	}
	return r.restart(ctx, tenant, name)
}

// Delete stops and removes a forwarder.
func (r *Runner) Delete(ctx context.Context, tenant, name string) error {
	if _, err := r.b.Tenant(tenant).Forwarders().Get(ctx, name); err != nil {
		return err
	}
	r.stop(key{tenant, name})
	return r.b.Tenant(tenant).Forwarders().Delete(ctx, name)
}

// Get returns one forwarder's status.
func (r *Runner) Get(ctx context.Context, tenant, name string) (*broker.ForwarderStatus, error) {
	def, err := r.b.Tenant(tenant).Forwarders().Get(ctx, name)
	if err != nil {
		return nil, err
	}
	return r.status(ctx, def), nil
}

// List returns the status of tenant's forwarders, by name.
func (r *Runner) List(ctx context.Context, tenant string) ([]broker.ForwarderStatus, error) {
	defs, err := r.b.Forwarders().ListAll(ctx)
	if err != nil {
		return nil, err
	}
	out := []broker.ForwarderStatus{}
	for _, d := range defs {
		if d.Tenant == tenant {
			out = append(out, *r.status(ctx, d))
		}
	}
	return out, nil
}

// All returns the status of every tenant's forwarders, for metrics.
func (r *Runner) All(ctx context.Context) ([]broker.ForwarderStatus, error) {
	defs, err := r.b.Forwarders().ListAll(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]broker.ForwarderStatus, 0, len(defs))
	for _, d := range defs {
		out = append(out, *r.status(ctx, d))
	}
	return out, nil
}

// status merges a stored definition with its worker's counters and, for a
// push forwarder, the lag of its local group.
func (r *Runner) status(ctx context.Context, def *combtype.Forwarder) *broker.ForwarderStatus {
	st := &broker.ForwarderStatus{Forwarder: *def, State: "stopped", Lag: -1, LagSeconds: -1}
	st.Token, st.HasToken = "", def.Token != ""
	r.mu.Lock()
	w := r.workers[key{def.Tenant, def.Name}]
	r.mu.Unlock()
	if w != nil {
		w.mu.Lock()
		ws := w.status
		w.mu.Unlock()
		st.State, st.Forwarded, st.DeadLettered, st.Duplicates = ws.State, ws.Forwarded, ws.DeadLettered, ws.Duplicates
		st.LastSuccessAt, st.LastError, st.LastErrorAt, st.Lag = ws.LastSuccessAt, ws.LastError, ws.LastErrorAt, ws.Lag
		st.LagSeconds = ws.LagSeconds
	}
	if def.Paused {
		st.State = "paused"
	}
	if def.Direction == combtype.ForwardPush {
		if lag, oldest, err := r.pushLag(ctx, def); err == nil {
			st.Lag, st.OldestUnforwardedAt = lag, oldest
			if !oldest.IsZero() {
				st.OldestUnforwardedAge = max(r.opts.Clock.Now().Sub(oldest), 0)
			}
		}
	}
	return st
}

// pushLag is the number of local messages of def's queues its group has
// not forwarded yet, partitions it never met included, and the commit
// time of the oldest of them (zero when there is none).
func (r *Runner) pushLag(ctx context.Context, def *combtype.Forwarder) (lag int64, oldest time.Time, err error) {
	queues, err := r.queues(ctx, def)
	if err != nil {
		return 0, time.Time{}, err
	}
	for _, q := range queues {
		n, err := r.b.Tenant(def.Tenant).GroupBacklog(ctx, combtype.BacklogRequest{Queue: q, Group: def.Group})
		if err != nil {
			return 0, time.Time{}, err
		}
		lag += n
		if n == 0 {
			continue
		}
		t, err := r.b.Tenant(def.Tenant).GroupBacklogOldest(ctx, combtype.BacklogRequest{Queue: q, Group: def.Group})
		if err != nil {
			return 0, time.Time{}, err
		}
		if !t.IsZero() && (oldest.IsZero() || t.Before(oldest)) {
			oldest = t
		}
	}
	return lag, oldest, nil
}

// queues lists the local queues def forwards.
func (r *Runner) queues(ctx context.Context, def *combtype.Forwarder) ([]string, error) {
	if !broker.IsQueuePattern(def.Queue) {
		return []string{def.Queue}, nil
	}
	names, err := r.b.Tenant(def.Tenant).QueueNames(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		if broker.MatchQueue(def.Queue, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// backoff is the wait after the attempt-th consecutive failure (from 0):
// exponential from MinBackoff, capped at MaxBackoff, the upper half
// jittered so that devices cut off together do not return together.
func (r *Runner) backoff(attempt int) time.Duration {
	d := r.opts.MaxBackoff
	if attempt < 30 {
		d = min(r.opts.MinBackoff<<attempt, r.opts.MaxBackoff)
	}
	return d/2 + time.Duration(r.opts.Jitter()*float64(d/2))
}
