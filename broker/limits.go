package broker

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/comb-broker/comb/combtype"
)

// Ranges of every numeric queue option and request parameter, checked
// where they enter so that no later multiplication into microseconds or
// nanoseconds can wrap around. docs/limits.md lists them.
const (
	// MaxDurationSeconds bounds the retention and TTL options: ten years.
	MaxDurationSeconds = 10 * 365 * 24 * 3600
	// MaxLeaseSeconds bounds leaseTime, delayedProcessing, windowBuffer
	// and a lease extension: one year.
	MaxLeaseSeconds = 365 * 24 * 3600
	// MaxRetryLimit bounds retryLimit.
	MaxRetryLimit = 1_000_000
	// MaxRetryDelayMillis bounds retryDelay: a day.
	MaxRetryDelayMillis = 24 * 3600 * 1000
	// MaxPriority bounds priority.
	MaxPriority = 1_000_000
	// MaxSizeValue bounds maxSize and maxBytes: 2^53, the largest integer
	// every JSON client reads exactly.
	MaxSizeValue = 1 << 53
	// MaxPopTimeout bounds a long-poll pop's timeout: an hour.
	MaxPopTimeout = time.Hour
)

// RangeError is a numeric option or parameter outside its documented
// range; nothing was written.
type RangeError struct {
	Name     string // as the client spells it, e.g. "options.leaseTime"
	Value    int64  // as given
	Min, Max int64  // the range accepted, both inclusive
}

func (e *RangeError) Error() string {
	return fmt.Sprintf("%s must be between %d and %d (got %d)", e.Name, e.Min, e.Max, e.Value)
}

// Unwrap makes a RangeError match both combtype.ErrOutOfRange and
// combtype.ErrInvalid.
func (e *RangeError) Unwrap() []error { return []error{combtype.ErrOutOfRange, combtype.ErrInvalid} }

// CheckRange returns a *RangeError when v is outside [lo, hi].
func CheckRange(name string, v, lo, hi int64) error {
	if v < lo || v > hi {
		return &RangeError{Name: name, Value: v, Min: lo, Max: hi}
	}
	return nil
}

// ValidateOptions checks every numeric queue option against its range.
func ValidateOptions(o combtype.QueueOptions) error {
	for _, c := range []struct {
		name   string
		v, max int64
	}{
		{"leaseTime", o.LeaseTime, MaxLeaseSeconds},
		{"retryLimit", o.RetryLimit, MaxRetryLimit},
		{"retryDelay", o.RetryDelay, MaxRetryDelayMillis},
		{"maxSize", o.MaxSize, MaxSizeValue},
		{"ttl", o.TTL, MaxDurationSeconds},
		{"priority", o.Priority, MaxPriority},
		{"delayedProcessing", o.DelayedProcessing, MaxLeaseSeconds},
		{"windowBuffer", o.WindowBuffer, MaxLeaseSeconds},
		{"retentionSeconds", o.RetentionSeconds, MaxDurationSeconds},
		{"completedRetentionSeconds", o.CompletedRetentionSeconds, MaxDurationSeconds},
		{"maxWaitTimeSeconds", o.MaxWaitTimeSeconds, MaxDurationSeconds},
		{"maxBytes", o.MaxBytes, MaxSizeValue},
	} {
		if err := CheckRange("options."+c.name, c.v, 0, c.max); err != nil {
			return err
		}
	}
	return nil
}

// CheckLeaseExtension checks a lease extension of seconds.
func CheckLeaseExtension(seconds int64) error {
	return CheckRange("seconds", seconds, 1, MaxLeaseSeconds)
}

// CheckPopTimeout checks a pop's long-poll timeout in milliseconds.
func CheckPopTimeout(millis int64) error {
	return CheckRange("timeout", millis, 0, MaxPopTimeout.Milliseconds())
}

// Bounds on what a client sends, checked by every entry point that stores
// it, over HTTP and from Go alike (docs/limits.md lists them).
const (
	// DefaultMaxQueues is the bound on queues comb serve sets
	// (Options.MaxQueues). Each queue is held in memory for as long as
	// the server runs (its row in the tenant's summary, its counters):
	// 0.7-1.1 KB of the live heap, up to 2 KB resident with the
	// collector's headroom (docs/limits.md). 50,000 keep a server near
	// the 128 MB docs/limits.md aims at; work that needs more keys than
	// that spreads over partitions, as Queen's clients do, not queues.
	DefaultMaxQueues = 50_000
	// DefaultMaxGroups is the bound on consumer-group subscriptions comb
	// serve sets (Options.MaxGroups): a group on a queue is one, made by
	// its first pop there. A listing of groups, a queue's detail and the
	// status read every one, and a queue's background sum holds a figure
	// for each: at 100,000 groups on one queue a server peaked at 85-122
	// MB, at a million at 490 MB with a listing page taking seconds
	// (docs/limits.md).
	DefaultMaxGroups = 100_000
	// DefaultMaxForwarders is the bound on forwarders comb serve sets
	// (Options.MaxForwarders). Each runs for as long as the server does,
	// about 40 KB resident and its polls of the upstream: 1,000 hold a
	// server near 75 MB, a forwarder for every queue a device is likely
	// to have.
	DefaultMaxForwarders = 1_000
	// DefaultMaxSnapshots is the bound on live snapshots comb serve sets
	// (Options.MaxSnapshots), and DefaultMaxStreamQueries the bound on
	// streaming queries (Options.MaxStreamQueries). A queue delete
	// detaches the snapshots of the queue and deletes the queries reading
	// it in its first write, which every push waits on: a million of
	// either held pushes 9 s; 10,000 take a few milliseconds
	// (docs/limits.md). A snapshot per group and queue, or a query per
	// operator chain, stays far below them.
	DefaultMaxSnapshots     = 10_000
	DefaultMaxStreamQueries = 10_000
	// MaxPushItems bounds the items of one push; a larger push is refused
	// whole, before anything is decoded past the bound.
	MaxPushItems = 10_000
	// MaxNameLength bounds, in characters, queue, partition, namespace,
	// task and consumer group names and transactionIds: Queen stores each
	// in a VARCHAR(255) column, so a longer one could never be forwarded.
	MaxNameLength = 255
	// MaxTraceNames bounds the names one trace is filed under. Each is a
	// row written with the trace and deleted with it: a trace of 110,000
	// names (a 1 MiB body) held every push 0.34 s, and the steps that
	// delete traces budget a trace as one row. The SDKs file a trace
	// under one name or a few.
	MaxTraceNames = 100
	// MaxCycleStateOps bounds the state operations of one stream cycle; a
	// larger cycle is refused whole, before anything is decoded past the
	// bound. A cycle carries the keys one popped batch touched (200
	// messages by the SDKs' default) or the windows an idle flush emits;
	// a cycle of 1,000,000 held the writer 15 s and the server at 346 MB.
	MaxCycleStateOps = 100_000
	// MaxStateKeyBytes bounds a stream state key, in bytes. Queen keys its
	// state table's primary key on it, and a PostgreSQL B-tree entry holds
	// at most 2,704 bytes: real Queen stores a key of 2,660 bytes whatever
	// they are and refuses one of 2,670 that does not compress.
	MaxStateKeyBytes = 2660
)

// InputError is a request refused for what it holds; nothing was written.
// It matches ErrInvalid, and its text names the item and the rule.
type InputError struct {
	Msg string // the refusal, naming the item and the rule; what HTTP answers in "error"
}

func (e *InputError) Error() string { return e.Msg }

// Unwrap makes an InputError match ErrInvalid.
func (e *InputError) Unwrap() error { return combtype.ErrInvalid }

// TooManyItems is the refusal of a push holding more than MaxPushItems
// items; got is how many were counted, which may stop at MaxPushItems+1.
func TooManyItems(got int) error {
	return &InputError{Msg: fmt.Sprintf("a push holds at most %d items (got %s); split it into smaller pushes",
		MaxPushItems, countText(got))}
}

// TooMany is the refusal of a list of a request (name as the wire
// spells it) that its decoding counted past max, where it stopped: a
// million tiny entries would cost hundreds of MB before the broker saw
// them.
func TooMany(name string, max int) error {
	return &InputError{Msg: fmt.Sprintf("%s holds at most %d entries (got more than %d); split the request", name, max, max)}
}

func countText(got int) string {
	if got > MaxPushItems {
		return fmt.Sprintf("more than %d", MaxPushItems)
	}
	return strconv.Itoa(got)
}

// CheckName checks a name or id given as field (as the wire spells it, e.g.
// "items[3].transactionId"): at most MaxNameLength characters of UTF-8,
// without NUL, which PostgreSQL text cannot hold. Emptiness is the
// caller's rule.
func CheckName(field, s string) error {
	if why := nameFault(s); why != "" {
		return &InputError{Msg: field + why}
	}
	return nil
}

// nameFault is why s cannot be a name, or "" when it can. It allocates
// nothing for a good name: it runs on every pushed item.
func nameFault(s string) string {
	if len(s) > MaxNameLength { // fewer bytes than this are fewer characters too
		if n := utf8.RuneCountInString(s); n > MaxNameLength {
			return fmt.Sprintf(" is %d characters long; at most %d are accepted", n, MaxNameLength)
		}
	}
	if !utf8.ValidString(s) {
		return " is not valid UTF-8"
	}
	if strings.IndexByte(s, 0) >= 0 {
		return " holds a NUL character (\\u0000)"
	}
	return ""
}

// TooManyStateOps is the refusal of a stream cycle holding more than
// MaxCycleStateOps state operations; got may stop at MaxCycleStateOps+1.
func TooManyStateOps(got int) error {
	n := strconv.Itoa(got)
	if got > MaxCycleStateOps {
		n = fmt.Sprintf("more than %d", MaxCycleStateOps)
	}
	return &InputError{Msg: fmt.Sprintf("a cycle holds at most %d state_ops (got %s); commit them in several cycles",
		MaxCycleStateOps, n)}
}

// stateKeyFault is why s cannot be a stream state key, or "" when it can:
// at most MaxStateKeyBytes bytes of UTF-8, without NUL (PostgreSQL text
// holds neither a NUL nor invalid UTF-8).
func stateKeyFault(s string) string {
	if len(s) > MaxStateKeyBytes {
		return fmt.Sprintf(" is %d bytes long; at most %d are accepted", len(s), MaxStateKeyBytes)
	}
	if !utf8.ValidString(s) {
		return " is not valid UTF-8"
	}
	if strings.IndexByte(s, 0) >= 0 {
		return " holds a NUL character (\\u0000)"
	}
	return ""
}

// Texts of the push rules the wire had before they moved here; kept word
// for word, since clients match them.
const (
	errTextQueueEmpty = "Queue must be a non-empty string"
	errTextTraceID    = "TraceId must be a valid UUID"
)

// CheckPushItems checks a push (or a transaction's or a stream cycle's
// pushed items) against every rule the wire depends on: at most
// MaxPushItems items, each with a non-empty queue name, names and ids
// within MaxNameLength, a traceId that is empty or a UUID, and a payload
// that is one JSON value every reader and an upstream Queen can take (see
// checkPayload). An empty payload is JSON null. The first item that fails
// is named in the *InputError.
func CheckPushItems(items []combtype.PushItem) error {
	if len(items) > MaxPushItems {
		return TooManyItems(len(items))
	}
	for i := range items {
		if err := checkPushItem(i, &items[i]); err != nil {
			return err
		}
	}
	return nil
}

func checkPushItem(i int, it *combtype.PushItem) error {
	if it.Queue == "" {
		return &InputError{Msg: fmt.Sprintf("%s (items[%d].queue)", errTextQueueEmpty, i)}
	}
	for _, f := range [...]struct{ name, v string }{
		{"queue", it.Queue}, {"partition", it.Partition}, {"transactionId", it.TxnID},
	} {
		if why := nameFault(f.v); why != "" {
			return &InputError{Msg: fmt.Sprintf("items[%d].%s%s", i, f.name, why)}
		}
	}
	if it.TraceID != "" {
		if _, err := uuid.Parse(it.TraceID); err != nil {
			return &InputError{Msg: fmt.Sprintf("%s (items[%d].traceId)", errTextTraceID, i)}
		}
	}
	if len(it.Payload) > 0 {
		if why := checkPayload(it.Payload); why != "" {
			return &InputError{Msg: fmt.Sprintf("items[%d].payload %s", i, why)}
		}
	}
	return nil
}

// Bounds on a snapshot's labels, Pub/Sub's (whose snapshots comb's
// follow): unbounded, 200 snapshots with a label of a megabyte each made
// one page of their listing 200 MB, and the server 694 MB.
const (
	// MaxSnapshotLabels bounds the labels of one snapshot.
	MaxSnapshotLabels = 64
	// MaxLabelLength bounds a label's key and its value, in characters.
	MaxLabelLength = 63
)

// checkLabels refuses labels past their bounds, or with an empty key.
func checkLabels(labels map[string]string) error {
	if len(labels) > MaxSnapshotLabels {
		return &InputError{Msg: fmt.Sprintf("labels holds %d labels; at most %d are accepted", len(labels), MaxSnapshotLabels)}
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		switch n := utf8.RuneCountInString(k); {
		case n == 0:
			return &InputError{Msg: "a labels key is empty"}
		case n > MaxLabelLength:
			return &InputError{Msg: fmt.Sprintf("a labels key is %d characters long; at most %d are accepted", n, MaxLabelLength)}
		}
		if n := utf8.RuneCountInString(labels[k]); n > MaxLabelLength {
			return &InputError{Msg: fmt.Sprintf("labels[%q] is %d characters long; at most %d are accepted", k, n, MaxLabelLength)}
		}
	}
	return nil
}

// checkNames checks the names a request carries, skipping empty ones.
func checkNames(fields ...string) error {
	for i := 0; i+1 < len(fields); i += 2 {
		if err := CheckName(fields[i], fields[i+1]); err != nil {
			return err
		}
	}
	return nil
}

// checkConfigure checks the names a configure stores.
func checkConfigure(req combtype.ConfigureRequest) error {
	return checkNames("queue", req.Queue, "namespace", req.Namespace, "task", req.Task)
}

// checkAckItems checks the names an ack carries: a dead-lettered message
// keeps its group's name.
func checkAckItems(group string, items []combtype.AckItem) error {
	if err := CheckName("consumerGroup", group); err != nil {
		return err
	}
	for i := range items {
		if why := nameFault(items[i].Group); why != "" {
			return &InputError{Msg: fmt.Sprintf("acknowledgments[%d].consumerGroup%s", i, why)}
		}
	}
	return nil
}

// checkTxOps checks a transaction's pushed items as a push's and its acks'
// groups as an ack's.
func checkTxOps(ops []combtype.TxOp) error {
	for i := range ops {
		if err := CheckPushItems(ops[i].Items); err != nil {
			return &InputError{Msg: fmt.Sprintf("PUSH operation failed: operations[%d]: %v", i, err)}
		}
		if why := nameFault(ops[i].Ack.Group); why != "" {
			return &InputError{Msg: fmt.Sprintf("ACK operation failed: operations[%d].consumerGroup%s", i, why)}
		}
	}
	return nil
}

// checkCycle checks what a stream cycle stores: its pushed items as a
// push's, and each upserted state value as a payload, since state is
// read back as JSON.
func checkCycle(req combtype.CycleRequest) error {
	if err := CheckPushItems(req.Push); err != nil {
		return err
	}
	if err := CheckName("consumer_group", req.Group); err != nil {
		return err
	}
	if len(req.StateOps) > MaxCycleStateOps {
		return TooManyStateOps(len(req.StateOps))
	}
	for i := range req.StateOps {
		if why := stateKeyFault(req.StateOps[i].Key); why != "" {
			return &InputError{Msg: fmt.Sprintf("state_ops[%d].key%s", i, why)}
		}
		if v := req.StateOps[i].Value; len(v) > 0 {
			if why := checkPayload(v); why != "" {
				return &InputError{Msg: fmt.Sprintf("state_ops[%d].value %s", i, why)}
			}
		}
	}
	return nil
}

// checkRegister checks what a streaming query's registration stores,
// named as the wire names them. Real Queen refuses a name past its
// B-tree's bound (as a state key) and stores a source queue, sink queue or
// config hash of a megabyte; comb bounds the queues as queue names, since
// no queue has a longer one, and the hash as the name, since a hash is
// short.
func checkRegister(req combtype.StreamRegisterRequest) error {
	for _, f := range []struct{ field, v string }{{"name", req.Name}, {"config_hash", req.ConfigHash}} {
		if why := stateKeyFault(f.v); why != "" {
			return &InputError{Msg: f.field + why}
		}
	}
	return checkNames("source_queue", req.SourceQueue, "sink_queue", req.SinkQueue)
}

// checkTrace checks what a trace stores: Queen keeps its group and worker
// in VARCHAR(255) and its event type in VARCHAR(100); its data is JSON.
func checkTrace(in combtype.TraceInput) error {
	if err := checkNames("consumerGroup", in.Group, "workerId", in.WorkerID, "transactionId", in.TxnID); err != nil {
		return err
	}
	if err := CheckName("eventType", in.EventType); err != nil {
		return err
	}
	if n := utf8.RuneCountInString(in.EventType); n > 100 {
		return &InputError{Msg: fmt.Sprintf("eventType is %d characters long; at most 100 are accepted", n)}
	}
	if len(in.Names) > MaxTraceNames {
		return &InputError{Msg: fmt.Sprintf("traceNames holds %d names; at most %d are accepted", len(in.Names), MaxTraceNames)}
	}
	for i, name := range in.Names {
		if err := CheckName(fmt.Sprintf("traceName[%d]", i), name); err != nil {
			return err
		}
	}
	if len(in.Data) > 0 {
		if why := checkPayload(in.Data); why != "" {
			return &InputError{Msg: "data " + why}
		}
	}
	return nil
}
