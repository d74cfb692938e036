package httpd_test

import (
	"fmt"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/comb-broker/comb/internal/combtest"
)

// A parked pop's goroutine keeps its stack for the whole wait. The
// pop's first look grows it to 16 KB; the frames left on it while it
// waits are kept under the quarter of that the collector needs to halve
// it (broker.Broker.Pop says how), so a collection brings each parked
// pop to 8 KB. A frame grown on that path, by new code or another
// compiler, makes this fail before it costs every parked pop 8 KB.
func TestAParkedPopsStackShrinksToHalf(t *testing.T) {
	if raceBuild {
		t.Skip("the race detector's frames are larger")
	}
	const pops = 200
	b := combtest.MustOpenBroker(t, combtest.Options{})
	base, _, _, _ := serveInBackground(t, b, nil)
	pushOne(t, base, "first") // the first look reads a stored message
	stacks := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.StackInuse
	}
	before := stacks()
	conns := make([]net.Conn, pops)
	for i := range conns {
		conns[i] = dialServer(t, base)
		fmt.Fprintf(conns[i], "GET /api/v1/pop/queue/q?consumerGroup=g-%d&subscriptionMode=new&wait=true&timeout=60000 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", i)
	}
	combtest.CheckFor(t, 30*time.Second, func() error {
		if n := b.Parked(); n != pops {
			return fmt.Errorf("%d pops parked, want %d", n, pops)
		}
		return nil
	})
	after := stacks()
	per := (int64(after) - int64(before)) / pops
	t.Logf("stack per parked pop after a collection: %d bytes", per)
	if per > 12<<10 {
		t.Errorf("a parked pop keeps %d bytes of stack after a collection, want 8 KB: a frame on its path grew", per)
	}
}
