package httpd_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/authtest"
	"github.com/comb-broker/comb/internal/combtest"
)

// A parked pop's goroutine keeps its stack for the whole wait. The
// pop's first look grows it to 16 KB; the frames left on it while it
// waits are kept under the quarter of that the collector needs to halve
// it (broker.Broker.Pop says how), so a collection brings each parked
// pop to 8 KB. A frame grown on that path, by new code or another
// compiler, makes this fail before it costs every parked pop 8 KB. With
// auth the path has one more frame (the guard's) and the least room.
func TestAParkedPopsStackShrinksToHalf(t *testing.T) {
	if raceBuild {
		t.Skip("the race detector's frames are larger")
	}
	keys := authtest.NewKeys(t)
	auth, err := httpd.NewAuthenticator(httpd.AuthConfig{Secret: keys.Secret})
	if err != nil {
		t.Fatal(err)
	}
	token := keys.HS256(t, authtest.Claims("consumer", "read-write", ""))
	for _, tc := range []struct {
		name   string
		cfg    httpd.Config
		header string
	}{
		{"no auth", httpd.Config{}, ""},
		{"auth", httpd.Config{Auth: auth}, "Authorization: Bearer " + token + "\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const pops = 200
			b := combtest.MustOpenBroker(t, combtest.Options{})
			ln, err := httpd.Listen("127.0.0.1:0", httpd.Config{})
			if err != nil {
				t.Fatal(err)
			}
			serveOn(t, b, ln, tc.cfg)
			base := "http://" + ln.Addr().String()
			stacks := func() uint64 {
				runtime.GC()
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				return ms.StackInuse
			}
			before := stacks()
			for i := range pops {
				c := dialServer(t, base)
				fmt.Fprintf(c, "GET /api/v1/pop/queue/q?consumerGroup=g-%d&subscriptionMode=new&wait=true&timeout=60000 HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n", i, tc.header)
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
		})
	}
}
