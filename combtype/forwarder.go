package combtype

import (
	"time"
)

// Forwarder directions.
const (
	ForwardPush = "push" // local queue -> upstream queue
	ForwardPull = "pull" // upstream queue -> local queue
)

// Forwarder is the stored definition of one forwarder and the state that
// must survive a restart.
// broker.NormalizeForwarder checks a definition and fills its defaults;
// Forwarders.Put stores only what it accepts.
type Forwarder struct {
	Tenant        string // set by Forwarders.Put to the handle's tenant
	Name          string // 1-255 of letters, digits, '_', '.', '-'; unique within the tenant
	Direction     string // ForwardPush or ForwardPull
	Queue         string // local queue, or a glob of queue names (push)
	UpstreamURL   string // the upstream's http:// or https:// base URL, stored as scheme, host and path
	UpstreamQueue string // "" = the local queue's name
	Token         string // bearer token for the upstream; "" = none
	Group         string // local group (push) or upstream group (pull)
	Batch         int    // messages per upstream request; 0 = ForwarderDefaultBatch, at most ForwarderMaxBatch
	Paused        bool   // a runner does not move messages while set (Forwarders.SetPaused)
	// Evicted counts messages retention removed before they were forwarded.
	Evicted int64
	// PendingAck is the upstream ack owed by a pull forwarder, "" if none.
	PendingAck string
	// IDPrefix is put before each transactionId a push forwarder sends
	// upstream; "none" sends them as they are. "" in a stored row is one
	// stored before the prefix existed, to be given the device's prefix.
	IDPrefix  string
	CreatedAt time.Time // first stored, by the broker's clock
	UpdatedAt time.Time // last definition or state change, by the broker's clock
}

// Bounds and defaults of a forwarder definition.
const (
	// ForwarderDefaultBatch is the batch of a forwarder that names none.
	ForwarderDefaultBatch = 500
	// ForwarderMaxBatch bounds a forwarder's batch.
	ForwarderMaxBatch = 10000
	// ForwarderGroupPrefix starts the default consumer group name of a
	// forwarder: the prefix, then the forwarder's name.
	ForwarderGroupPrefix = "comb-forward."
	// ForwarderNoIDPrefix as a forwarder's IDPrefix sends transactionIds
	// upstream as they are.
	ForwarderNoIDPrefix = "none"
	// ForwarderMaxIDPrefix bounds an IDPrefix, in bytes.
	ForwarderMaxIDPrefix = 128
	// ForwarderMaxUpstream bounds the upstream URL, in bytes.
	ForwarderMaxUpstream = 2048
	// ForwarderMaxToken bounds the upstream bearer token, in bytes: it is
	// sent in a header, and real Queen answers 431 to a header line of
	// 8,000 bytes.
	ForwarderMaxToken = 4096
)
