package broker

import (
	"context"
	"time"

	"github.com/comb-broker/comb/store"
)

// Forwarders: stored definitions of the links between a local queue and an
// upstream broker's queue. The broker keeps them durable; the forward
// package runs them through the broker's ordinary push, pop and ack.
type Forwarder = store.Forwarder

// Forwarder directions and errors.
const (
	ForwardPush = store.ForwardPush
	ForwardPull = store.ForwardPull
)

var (
	ErrForwarderNotFound = store.ErrForwarderNotFound
	ErrForwarderExists   = store.ErrForwarderExists
)

// ForwarderStatus is a forwarder's definition with what its runner knows.
type ForwarderStatus struct {
	Forwarder // with Token cleared: a status never carries it
	HasToken  bool
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
	Forwarded     int64 // messages delivered since this process started
	DeadLettered  int64 // messages dead-lettered since this process started
	Duplicates    int64 // push: items the upstream answered "duplicate", since this process started
	LastSuccessAt time.Time
	LastError     string
	LastErrorAt   time.Time
}

// PutForwarder stores a forwarder; see store.Store.PutForwarder.
func (b *Broker) PutForwarder(ctx context.Context, f *Forwarder, replace bool) error {
	return b.st.PutForwarder(ctx, f, replace)
}

// Forwarders lists every tenant's forwarders.
func (b *Broker) Forwarders(ctx context.Context) ([]*Forwarder, error) { return b.st.Forwarders(ctx) }

// Forwarder returns one forwarder.
func (b *Broker) Forwarder(ctx context.Context, tenant, name string) (*Forwarder, error) {
	return b.st.Forwarder(ctx, tenant, name)
}

// SetForwarderPaused pauses or resumes a forwarder durably.
func (b *Broker) SetForwarderPaused(ctx context.Context, tenant, name string, paused bool) error {
	return b.st.SetForwarderPaused(ctx, tenant, name, paused)
}

// AddForwarderEvicted counts n more messages evicted before forwarding.
func (b *Broker) AddForwarderEvicted(ctx context.Context, tenant, name string, n int64) error {
	return b.st.AddForwarderEvicted(ctx, tenant, name, n)
}

// SetForwarderPendingAck records ("" clears) a pull forwarder's owed upstream ack.
func (b *Broker) SetForwarderPendingAck(ctx context.Context, tenant, name, ack string) error {
	return b.st.SetForwarderPendingAck(ctx, tenant, name, ack)
}

// SetForwarderIDPrefix sets the prefix a push forwarder puts before the
// transactionIds it sends upstream.
func (b *Broker) SetForwarderIDPrefix(ctx context.Context, tenant, name, prefix string) error {
	return b.st.SetForwarderIDPrefix(ctx, tenant, name, prefix)
}

// settingDeviceID names this database's device id among the settings.
const settingDeviceID = "device_id"

// DeviceID returns the device id stored in the database, storing
// candidate first when there is none: the id is chosen once and then
// kept, so what a device sends upstream stays attributable to it.
func (b *Broker) DeviceID(ctx context.Context, candidate string) (string, error) {
	return b.st.InitSetting(ctx, settingDeviceID, candidate)
}

// DeleteForwarder removes a forwarder's definition.
func (b *Broker) DeleteForwarder(ctx context.Context, tenant, name string) error {
	return b.st.DeleteForwarder(ctx, tenant, name)
}

// QueueNames lists the names of tenant's queues.
func (b *Broker) QueueNames(ctx context.Context, tenant string) ([]string, error) {
	return b.st.QueueNames(ctx, tenant)
}

// GroupCommitted returns group's committed offset per partition uuid.
func (b *Broker) GroupCommitted(ctx context.Context, tenant, group string) (map[string]int64, error) {
	return b.st.GroupCommitted(ctx, tenant, group)
}

// LogStart returns a partition's first retained offset.
func (b *Broker) LogStart(ctx context.Context, partitionUUID string) (int64, error) {
	return b.st.LogStart(ctx, partitionUUID)
}

// ReleaseGroupLeases drops every lease group holds on tenant's queues; for
// a group whose only consumer is starting.
func (b *Broker) ReleaseGroupLeases(ctx context.Context, tenant, group string) (int64, error) {
	return b.st.ReleaseGroupLeases(ctx, tenant, group)
}

// Backlog is the number of retained messages of a queue that group has not
// consumed, partitions it never met included.
func (b *Broker) Backlog(ctx context.Context, tenant, queue, group string) (int64, error) {
	return b.st.Backlog(ctx, tenant, queue, group)
}

// BacklogOldest is the commit time of the oldest retained message of a
// queue that group has not consumed; zero when there is none.
func (b *Broker) BacklogOldest(ctx context.Context, tenant, queue, group string) (time.Time, error) {
	return b.st.BacklogOldest(ctx, tenant, queue, group)
}
