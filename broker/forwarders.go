package broker

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// Forwarders is the durable record of a tenant's forwarders: their
// definitions, which Put validates before storing, and the state a runner
// keeps across restarts (paused, evicted count, owed upstream ack). The
// forward package runs them through the broker's ordinary push, pop and
// ack.
type Forwarders struct {
	b *Broker
}

// Forwarders returns the tenant's forwarder records.
func (b *Broker) Forwarders() *Forwarders { return &Forwarders{b: b} }

// ForwarderStatus is a forwarder's definition with what its runner knows.
type ForwarderStatus struct {
	combtype.Forwarder      // with Token cleared: a status never carries it
	HasToken           bool // the definition holds a token
	// State is "running", "backoff" (the upstream failed; waiting to retry),
	// "paused" or "stopped" (not running in this process).
	State string
	// Lag is, for push, the local messages not yet upstream; for pull, the
	// upstream messages not yet local as of the last upstream reply, -1 when
	// unknown.
	Lag int64
	// OldestUnforwardedAt is, for push, when the oldest local message not
	// yet upstream was committed; zero when there is none or (pull) it is
	// unknown.
	OldestUnforwardedAt time.Time
	// OldestUnforwardedAge is how old that message was when the status
	// was read; 0 when there is none.
	OldestUnforwardedAge time.Duration
	// LagSeconds is how long the last batch delivered had waited: from the
	// commit of its newest message on the sending side to its delivery.
	// -1 until a batch is delivered.
	LagSeconds    float64
	Forwarded     int64     // messages delivered since this process started
	Duplicates    int64     // push: items the upstream answered "duplicate", since this process started
	DeadLettered  int64     // messages dead-lettered since this process started
	LastSuccessAt time.Time // the runner's last successful round; zero until one
	// LastError is the runner's last failure, kept after it recovers:
	// compare LastErrorAt with LastSuccessAt. "" until one.
	LastError   string
	LastErrorAt time.Time // when LastError happened; zero until one
}

var forwarderName = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,255}$`)

// NormalizeForwarder checks a definition and fills its defaults: direction
// push, batch combtype.ForwarderDefaultBatch, group
// combtype.ForwarderGroupPrefix+name, the upstream URL reduced to scheme,
// host and path, and a pull forwarder's IDPrefix
// combtype.ForwarderNoIDPrefix. Errors wrap combtype.ErrInvalid. Put calls it;
// a program may too, to check a definition before storing it.
func NormalizeForwarder(f *combtype.Forwarder) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", combtype.ErrInvalid, fmt.Sprintf(format, args...))
	}
	f.Direction = cmp.Or(f.Direction, combtype.ForwardPush)
	switch {
	case !forwarderName.MatchString(f.Name):
		return bad("name must be 1-255 characters of letters, digits, '_', '.' or '-'")
	case f.Direction != combtype.ForwardPush && f.Direction != combtype.ForwardPull:
		return bad("direction must be push or pull, not %q", f.Direction)
	case f.Queue == "":
		return bad("queue is required")
	case f.Batch < 0 || f.Batch > combtype.ForwarderMaxBatch:
		return bad("batch must be between 1 and %d", combtype.ForwarderMaxBatch)
	case checkIDPrefix(f.IDPrefix) != nil:
		return checkIDPrefix(f.IDPrefix)
	case f.Direction == combtype.ForwardPull && f.IDPrefix != "" && f.IDPrefix != combtype.ForwarderNoIDPrefix:
		return bad("idPrefix applies to push forwarders; a pull forwarder keeps the upstream's transactionIds")
	}
	if f.Direction == combtype.ForwardPull {
		f.IDPrefix = combtype.ForwarderNoIDPrefix
	}
	if IsQueuePattern(f.Queue) {
		if f.Direction == combtype.ForwardPull {
			return bad("a pull forwarder feeds one queue; %q is a pattern", f.Queue)
		}
		if f.UpstreamQueue != "" {
			return bad("a pattern forwards each queue to the upstream queue of the same name; upstreamQueue must be empty")
		}
		if _, err := path.Match(f.Queue, ""); err != nil {
			return bad("queue pattern %q: %v", f.Queue, err)
		}
	}
	// What is stored is what the runner sends, and an upstream, comb or
	// Queen, takes names of at most 255 characters and headers of a few
	// kilobytes: a definition past either would fail every round.
	if len(f.UpstreamURL) > combtype.ForwarderMaxUpstream {
		return bad("upstream is %d bytes long; at most %d are accepted", len(f.UpstreamURL), combtype.ForwarderMaxUpstream)
	}
	if len(f.Token) > combtype.ForwarderMaxToken || strings.ContainsFunc(f.Token, func(r rune) bool { return r <= ' ' || r > '~' }) {
		return bad("token must be at most %d bytes of printable ASCII without spaces", combtype.ForwarderMaxToken)
	}
	u, err := url.Parse(f.UpstreamURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return bad("upstream must be an http:// or https:// base URL, not %q", f.UpstreamURL)
	}
	if err := checkNames("queue", f.Queue, "upstreamQueue", f.UpstreamQueue, "consumerGroup", f.Group); err != nil {
		return err
	}
	if f.Group == "" && len(combtype.ForwarderGroupPrefix+f.Name) > MaxNameLength {
		return bad("name is %d characters long: its consumer group %s<name> would pass %d; give a name of at most %d characters, or a consumerGroup",
			len(f.Name), combtype.ForwarderGroupPrefix, MaxNameLength, MaxNameLength-len(combtype.ForwarderGroupPrefix))
	}
	f.UpstreamURL = u.Scheme + "://" + u.Host + strings.TrimRight(u.Path, "/")
	f.Batch = cmp.Or(f.Batch, combtype.ForwarderDefaultBatch)
	f.Group = cmp.Or(f.Group, combtype.ForwarderGroupPrefix+f.Name)
	return nil
}

// checkIDPrefix refuses a transactionId prefix an upstream could not take.
func checkIDPrefix(p string) error {
	if len(p) > combtype.ForwarderMaxIDPrefix || strings.ContainsFunc(p, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		return fmt.Errorf("%w: idPrefix must be at most %d bytes without control characters",
			combtype.ErrInvalid, combtype.ForwarderMaxIDPrefix)
	}
	return nil
}

// IsQueuePattern reports whether a forwarder's queue field is a glob
// (path.Match syntax) rather than a queue name.
func IsQueuePattern(q string) bool { return strings.ContainsAny(q, "*?[") }

// MatchQueue reports whether queue matches the forwarder's glob pattern:
// path.Match's syntax, except that '/' is a character like any other,
// since a queue name is no path: with path.Match, `g*` did not match the
// queue `g/x`, which was never forwarded, with no error and no lag shown.
// A queue name holds no NUL (CheckName), so '/' is matched as NUL.
func MatchQueue(pattern, queue string) bool {
	ok, _ := path.Match(strings.ReplaceAll(pattern, "/", "\x00"), strings.ReplaceAll(queue, "/", "\x00"))
	return ok
}

// Put validates and normalizes def (NormalizeForwarder), sets its tenant
// to the handle's, and stores it. With replace an existing forwarder of
// that name gets def's definition and keeps its state; without, an
// existing name is combtype.ErrForwarderExists.
func (f *Forwarders) Put(ctx context.Context, def *combtype.Forwarder, replace bool) error {
	if err := NormalizeForwarder(def); err != nil {
		return err
	}
	def.Tenant = f.b.tenant
	return f.b.st.PutForwarder(ctx, def, replace)
}

// Get returns one forwarder, or combtype.ErrForwarderNotFound.
func (f *Forwarders) Get(ctx context.Context, name string) (*combtype.Forwarder, error) {
	return f.b.st.Forwarder(ctx, f.b.tenant, name)
}

// List returns the tenant's forwarders, by name.
func (f *Forwarders) List(ctx context.Context) ([]*combtype.Forwarder, error) {
	all, err := f.b.st.Forwarders(ctx)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, d := range all {
		if d.Tenant == f.b.tenant {
			out = append(out, d)
		}
	}
	return out, nil
}

// ListAll returns the forwarders of every tenant, by tenant then name: what
// a runner starts.
func (f *Forwarders) ListAll(ctx context.Context) ([]*combtype.Forwarder, error) {
	return f.b.st.Forwarders(ctx)
}

// Delete removes a forwarder's record, or answers
// combtype.ErrForwarderNotFound.
func (f *Forwarders) Delete(ctx context.Context, name string) error {
	return f.b.st.DeleteForwarder(ctx, f.b.tenant, name)
}

// SetPaused pauses or resumes a forwarder durably: a runner started later
// keeps the choice. An unknown name is combtype.ErrForwarderNotFound.
func (f *Forwarders) SetPaused(ctx context.Context, name string, paused bool) error {
	return f.b.st.SetForwarderPaused(ctx, f.b.tenant, name, paused)
}

// AddEvicted counts n more messages retention removed before the forwarder
// delivered them. n must not be negative (combtype.ErrInvalid); an unknown
// name is combtype.ErrForwarderNotFound.
func (f *Forwarders) AddEvicted(ctx context.Context, name string, n int64) error {
	if n < 0 {
		return fmt.Errorf("%w: evicted count %d", combtype.ErrInvalid, n)
	}
	return f.b.st.AddForwarderEvicted(ctx, f.b.tenant, name, n)
}

// SetPendingAck records the upstream ack a pull forwarder owes (a JSON
// body, kept until the upstream confirmed it), or clears it with "". A
// body that is not JSON is combtype.ErrInvalid, an unknown name
// combtype.ErrForwarderNotFound.
func (f *Forwarders) SetPendingAck(ctx context.Context, name, ack string) error {
	if ack != "" && !json.Valid([]byte(ack)) {
		return fmt.Errorf("%w: pending ack is not JSON", combtype.ErrInvalid)
	}
	return f.b.st.SetForwarderPendingAck(ctx, f.b.tenant, name, ack)
}

// SetIDPrefix sets the prefix a push forwarder puts before the
// transactionIds it sends upstream ("none": none). A prefix longer than
// combtype.ForwarderMaxIDPrefix bytes or holding a control character is
// refused with combtype.ErrInvalid, as Put refuses it; an unknown name is
// combtype.ErrForwarderNotFound.
func (f *Forwarders) SetIDPrefix(ctx context.Context, name, prefix string) error {
	if err := checkIDPrefix(prefix); err != nil {
		return err
	}
	return f.b.st.SetForwarderIDPrefix(ctx, f.b.tenant, name, prefix)
}

// settingDeviceID names this database's device id among the settings.
const settingDeviceID = "device_id"

// DeviceID returns the device id stored in the database, storing
// candidate first when there is none: the id is chosen once and then kept,
// so what a device sends upstream stays attributable to it. It is one per
// database, whatever the tenant.
func (b *Broker) DeviceID(ctx context.Context, candidate string) (string, error) {
	if candidate == "" {
		return "", fmt.Errorf("%w: empty device id", combtype.ErrInvalid)
	}
	return b.st.InitSetting(ctx, settingDeviceID, candidate)
}
