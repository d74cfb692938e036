//go:build unix

package httpd_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
)

// TestBackupsRunOneAtATime holds one backup's reply unread (a client of a
// small receive buffer that reads nothing past the headers): a second
// backup waits for it, with no copy of its own in the temporary
// directory, and is answered whole once the first is read. Before, every
// backup made its copy at once: thirty of a 62 MB file took the server to
// 318 MB and wrote 1.9 GB of copies.
func TestBackupsRunOneAtATime(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	s := combtest.MustServer(t, combtest.Options{})
	// 8 MB that lz4 cannot shrink, past what the sockets between hold.
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 8 {
		items := make([]combtype.PushItem, 10)
		for i := range items {
			b := make([]byte, 100<<10)
			for j := range b {
				b[j] = "0123456789abcdef"[rnd.IntN(16)]
			}
			items[i] = combtype.PushItem{Queue: "big", Payload: []byte(`"` + string(b) + `"`)}
		}
		if _, err := s.Broker.Push(context.Background(), items); err != nil {
			t.Fatal(err)
		}
	}
	slow := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return errors.Join(err, serr)
	}}).DialContext}}
	first, err := slow.Get(s.HTTP.URL + "/api/v1/system/backup")
	if err != nil || first.StatusCode != http.StatusOK {
		t.Fatalf("first backup: %v %v", first, err)
	}
	defer first.Body.Close()
	copies := func() int {
		m, _ := filepath.Glob(filepath.Join(tmp, "comb-backup-*"))
		return len(m)
	}
	second := make(chan *http.Response, 1)
	go func() {
		r, err := http.Get(s.HTTP.URL + "/api/v1/system/backup")
		if err != nil {
			t.Error(err)
			close(second)
			return
		}
		second <- r
	}()
	time.Sleep(300 * time.Millisecond) // the second's copy, had it begun, is made by now
	select {
	case r := <-second:
		r.Body.Close()
		t.Fatalf("the second backup was answered (%d) while the first was unread", r.StatusCode)
	default:
	}
	if n := copies(); n != 1 {
		t.Errorf("%d copies in the temporary directory while the first backup is unread, want 1", n)
	}
	if _, err := io.Copy(io.Discard, first.Body); err != nil {
		t.Fatal(err)
	}
	r, ok := <-second
	if !ok {
		return
	}
	defer r.Body.Close()
	body, err := io.ReadAll(r.Body)
	if err != nil || r.StatusCode != http.StatusOK || !bytes.HasPrefix(body, []byte("SQLite format 3\x00")) || len(body) < 8<<20 {
		t.Errorf("second backup: %d, %d bytes, %v", r.StatusCode, len(body), err)
	}
}
