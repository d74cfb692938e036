package broker

import (
	"sync/atomic"

	"github.com/comb-broker/comb/combtype"
)

// DefaultMaxPushBytesInFlight bounds the payload bytes of pushes accepted
// but not yet committed, so that load waits at the door instead of growing
// memory.
const DefaultMaxPushBytesInFlight = 256 << 20

// Bounds on one ack batch and one transaction: past them a request is
// refused with a *RangeError rather than holding the writer, and every
// other writer, for seconds. A client splits larger batches.
const (
	MaxAckItems       = 20000
	MaxTransactionOps = 20000 // ack ops plus pushed items
)

// byteGate admits work while the bytes in flight stay under max; a lone
// request is always admitted, however large, so nothing is refused forever.
type byteGate struct {
	max   int64
	inUse atomic.Int64
}

func (g *byteGate) acquire(n int64) bool {
	if now := g.inUse.Add(n); now > g.max && now != n {
		g.inUse.Add(-n)
		return false
	}
	return true
}

func (g *byteGate) release(n int64) { g.inUse.Add(-n) }

func pushBytes(items []combtype.PushItem) int64 {
	var n int64
	for i := range items {
		n += int64(len(items[i].Payload))
	}
	return n
}
