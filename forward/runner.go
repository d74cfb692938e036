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
	"net/url"
	"os"
	"path"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/internal/clock"
)

// Defaults of Options and of forwarder definitions.
const (
	DefaultBatch      = 500
	MaxBatch          = 10000
	DefaultMinBackoff = 250 * time.Millisecond
	DefaultMaxBackoff = 30 * time.Second
	DefaultPoll       = 5 * time.Second
	// DefaultBufferSettle is the least wait before an item the upstream
	// answered "buffered" is sent again: time for the upstream's own
	// replay of its buffer (Queen's runs about every second) to store it.
	DefaultBufferSettle = 2 * time.Second
	// GroupPrefix starts the default consumer group name of a forwarder.
	GroupPrefix = "comb-forward."
	// NoIDPrefix as a forwarder's IDPrefix sends transactionIds upstream
	// as they are.
	NoIDPrefix = "none"
	// MaxIDPrefix bounds an IDPrefix, in bytes, leaving room for a digest
	// within MaxUpstreamID.
	MaxIDPrefix = 128
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
	defs, err := r.b.Forwarders(ctx)
	if err != nil {
		return fmt.Errorf("start forwarders: %w", err)
	}
	for _, d := range defs {
		// A push forwarder stored before id prefixes existed gets the
		// device's now, before it sends anything.
		if d.Direction == broker.ForwardPush && d.IDPrefix == "" {
			if d.IDPrefix, err = r.defaultIDPrefix(ctx); err == nil {
				err = r.b.SetForwarderIDPrefix(ctx, d.Tenant, d.Name, d.IDPrefix)
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
		if r < utf8.RuneSelf && namePattern.MatchString(string(r)) {
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
func (r *Runner) startLocked(def *broker.Forwarder) {
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

var namePattern = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,255}$`)

// Normalize checks a definition and fills its defaults. Errors wrap
// broker.ErrInvalid.
func Normalize(f *broker.Forwarder) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", broker.ErrInvalid, fmt.Sprintf(format, args...))
	}
	f.Direction = cmp.Or(f.Direction, broker.ForwardPush)
	switch {
	case !namePattern.MatchString(f.Name):
		return bad("name must be 1-255 characters of letters, digits, '_', '.' or '-'")
	case f.Direction != broker.ForwardPush && f.Direction != broker.ForwardPull:
		return bad("direction must be push or pull, not %q", f.Direction)
	case f.Queue == "":
		return bad("queue is required")
	case f.Batch < 0 || f.Batch > MaxBatch:
		return bad("batch must be between 1 and %d", MaxBatch)
	case len(f.IDPrefix) > MaxIDPrefix || strings.ContainsFunc(f.IDPrefix, func(r rune) bool { return r < ' ' || r == 0x7f }):
		return bad("idPrefix must be at most %d bytes without control characters", MaxIDPrefix)
	case f.Direction == broker.ForwardPull && f.IDPrefix != "" && f.IDPrefix != NoIDPrefix:
		return bad("idPrefix applies to push forwarders; a pull forwarder keeps the upstream's transactionIds")
	}
	if f.Direction == broker.ForwardPull {
		f.IDPrefix = NoIDPrefix
	}
	if isPattern(f.Queue) {
		if f.Direction == broker.ForwardPull {
			return bad("a pull forwarder feeds one queue; %q is a pattern", f.Queue)
		}
		if f.UpstreamQueue != "" {
			return bad("a pattern forwards each queue to the upstream queue of the same name; upstreamQueue must be empty")
		}
		if _, err := path.Match(f.Queue, ""); err != nil {
			return bad("queue pattern %q: %v", f.Queue, err)
		}
	}
	u, err := url.Parse(f.UpstreamURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return bad("upstream must be an http:// or https:// base URL, not %q", f.UpstreamURL)
	}
	f.UpstreamURL = u.Scheme + "://" + u.Host + trimSlash(u.Path)
	f.Batch = cmp.Or(f.Batch, DefaultBatch)
	f.Group = cmp.Or(f.Group, GroupPrefix+f.Name)
	return nil
}

func trimSlash(p string) string {
	for len(p) > 0 && p[len(p)-1] == '/' {
		p = p[:len(p)-1]
	}
	return p
}

// isPattern reports whether a queue field is a glob rather than a name.
func isPattern(q string) bool {
	for _, c := range q {
		switch c {
		case '*', '?', '[':
			return true
		}
	}
	return false
}

// Create stores a new forwarder and starts it.
func (r *Runner) Create(ctx context.Context, f *broker.Forwarder) (*broker.ForwarderStatus, error) {
	return r.put(ctx, f, false)
}

// Declare stores f, replacing the definition of an existing forwarder of
// that name but keeping its state (paused, evicted count), and (re)starts
// it. It is how flags and the config file declare forwarders at start.
func (r *Runner) Declare(ctx context.Context, f *broker.Forwarder) (*broker.ForwarderStatus, error) {
	return r.put(ctx, f, true)
}

func (r *Runner) put(ctx context.Context, f *broker.Forwarder, replace bool) (*broker.ForwarderStatus, error) {
	if err := Normalize(f); err != nil {
		return nil, err
	}
	if f.IDPrefix == "" {
		// A forwarder keeps the prefix it was first stored with: a new one
		// would send a batch resent after a restart under other ids.
		old, err := r.b.Forwarder(ctx, f.Tenant, f.Name)
		switch {
		case err == nil && old.IDPrefix != "" && old.Direction == broker.ForwardPush:
			f.IDPrefix = old.IDPrefix
		case err == nil || errors.Is(err, broker.ErrForwarderNotFound):
			if f.IDPrefix, err = r.defaultIDPrefix(ctx); err != nil {
				return nil, err
			}
		default:
			return nil, err
		}
	}
	if err := r.b.PutForwarder(ctx, f, replace); err != nil {
		return nil, err
	}
	return r.restart(ctx, f.Tenant, f.Name)
}

// restart stops the worker of (tenant, name) and starts it again from the
// stored definition.
func (r *Runner) restart(ctx context.Context, tenant, name string) (*broker.ForwarderStatus, error) {
	k := key{tenant, name}
	r.stop(k)
	def, err := r.b.Forwarder(ctx, tenant, name)
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
	if err := r.b.SetForwarderPaused(ctx, tenant, name, paused); err != nil {
		return nil, err
	}
	return r.restart(ctx, tenant, name)
}

// Delete stops and removes a forwarder.
func (r *Runner) Delete(ctx context.Context, tenant, name string) error {
	if _, err := r.b.Forwarder(ctx, tenant, name); err != nil {
		return err
	}
	r.stop(key{tenant, name})
	return r.b.DeleteForwarder(ctx, tenant, name)
}

// Get returns one forwarder's status.
func (r *Runner) Get(ctx context.Context, tenant, name string) (*broker.ForwarderStatus, error) {
	def, err := r.b.Forwarder(ctx, tenant, name)
	if err != nil {
		return nil, err
	}
	return r.status(ctx, def), nil
}

// List returns the status of tenant's forwarders, by name.
func (r *Runner) List(ctx context.Context, tenant string) ([]broker.ForwarderStatus, error) {
	defs, err := r.b.Forwarders(ctx)
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
	defs, err := r.b.Forwarders(ctx)
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
func (r *Runner) status(ctx context.Context, def *broker.Forwarder) *broker.ForwarderStatus {
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
	if def.Direction == broker.ForwardPush {
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
func (r *Runner) pushLag(ctx context.Context, def *broker.Forwarder) (lag int64, oldest time.Time, err error) {
	queues, err := r.queues(ctx, def)
	if err != nil {
		return 0, time.Time{}, err
	}
	for _, q := range queues {
		n, err := r.b.Backlog(ctx, def.Tenant, q, def.Group)
		if err != nil {
			return 0, time.Time{}, err
		}
		lag += n
		if n == 0 {
			continue
		}
		t, err := r.b.BacklogOldest(ctx, def.Tenant, q, def.Group)
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
func (r *Runner) queues(ctx context.Context, def *broker.Forwarder) ([]string, error) {
	if !isPattern(def.Queue) {
		return []string{def.Queue}, nil
	}
	names, err := r.b.QueueNames(ctx, def.Tenant)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		if ok, _ := path.Match(def.Queue, n); ok {
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
