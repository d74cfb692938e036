package broker

import (
	"testing"

	"github.com/comb-broker/comb/combtype"
)

// BenchmarkCountPush counts the results of a push of 100 messages to one
// queue, as push batch 100 does per request.
func BenchmarkCountPush(b *testing.B) {
	m := newMetrics(realClock{})
	results := make([]combtype.PushResult, 100)
	for i := range results {
		results[i] = combtype.PushResult{Status: "queued", Queue: "orders"}
	}
	b.ReportAllocs()
	for b.Loop() {
		m.countPush("", results)
	}
}
