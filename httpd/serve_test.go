package httpd_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/authtest"
	"github.com/comb-broker/comb/internal/combtest"
)

// serveInBackground runs srv on a fresh loopback listener, wrapped by wrap
// when set, until the test ends or the returned cancel is called; done
// yields Serve's result.
func serveInBackground(t *testing.T, b *broker.Broker, wrap func(net.Listener) net.Listener) (base string, srv *httpd.Server, cancel context.CancelFunc, done <-chan error) {
	t.Helper()
	ln, err := httpd.Listen("127.0.0.1:0", httpd.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if wrap != nil {
		ln = wrap(ln)
	}
	srv, cancel, done = serveOn(t, b, ln, httpd.Config{})
	return "http://" + ln.Addr().String(), srv, cancel, done
}

// serveOn serves b on ln with cfg until the returned cancel, or the
// test's end, after which it waits for Serve to return; done has Serve's
// error.
func serveOn(t *testing.T, b *broker.Broker, ln net.Listener, cfg httpd.Config) (srv *httpd.Server, cancel context.CancelFunc, done <-chan error) {
	t.Helper()
	srv = httpd.NewServer(b, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	served, finished := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(finished)
		served <- srv.Serve(ctx, ln)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-finished:
		case <-time.After(time.Minute):
			t.Error("Serve did not return")
		}
	})
	return srv, cancel, served
}

// readSignal is a listener that tells when the server has read each of
// its marks from an accepted connection: the channel of a mark closes
// once the bytes read so far contain it.
type readSignal struct {
	net.Listener
	mu    sync.Mutex
	marks map[string]chan struct{}
}

func newReadSignal(marks ...string) *readSignal {
	l := &readSignal{marks: map[string]chan struct{}{}}
	for _, m := range marks {
		l.marks[m] = make(chan struct{})
	}
	return l
}

func (l *readSignal) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &signalConn{Conn: c, l: l}, nil
}

type signalConn struct {
	net.Conn
	l    *readSignal
	seen []byte
}

func (c *signalConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.seen = append(c.seen, p[:n]...)
	c.l.mu.Lock()
	for m, ch := range c.l.marks {
		if strings.Contains(string(c.seen), m) {
			close(ch)
			delete(c.l.marks, m)
		}
	}
	c.l.mu.Unlock()
	return n, err
}

func TestServeAnswersParkedPopsAtOnceWhenItsContextEnds(t *testing.T) {
	b := combtest.MustOpenBroker(t, combtest.Options{})
	base, _, cancel, done := serveInBackground(t, b, nil)

	popped := make(chan int, 1)
	go func() {
		resp, err := http.Get(base + "/api/v1/pop/queue/empty?wait=true&timeout=600000")
		if err != nil {
			popped <- -1
			return
		}
		resp.Body.Close()
		popped <- resp.StatusCode
	}()
	combtest.CheckFor(t, 10*time.Second, func() error {
		if n := b.Parked(); n != 1 {
			return fmt.Errorf("%d pops parked, want 1", n)
		}
		return nil
	})
	cancel()
	select {
	case code := <-popped:
		if code != http.StatusNoContent {
			t.Errorf("parked pop answered %d at shutdown, want 204", code)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a parked pop held the shutdown")
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
	if _, err := http.Get(base + "/health"); err == nil {
		t.Error("the listener still answers after Serve returned")
	}
}

func TestServeReturnsOnlyAfterARequestInFlightIsAnswered(t *testing.T) {
	b := combtest.MustOpenBroker(t, combtest.Options{})
	sig := newReadSignal(`"late"`, `"t1"`)
	first, second := sig.marks[`"late"`], sig.marks[`"t1"`]
	base, _, cancel, done := serveInBackground(t, b, func(ln net.Listener) net.Listener {
		sig.Listener = ln
		return sig
	})
	addr := strings.TrimPrefix(base, "http://")

	// A push whose body is still arriving when the shutdown begins.
	body, bodyW := io.Pipe()
	answered := make(chan int, 1)
	go func() {
		resp, err := http.Post(base+"/api/v1/push", "application/json", body)
		if err != nil {
			answered <- -1
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	// The handler must be reading the body when the shutdown begins:
	// net/http serves no request whose header it finishes reading after
	// the shutdown began, and closes its connection unanswered. So the
	// body's second part is sent only once the first was read: the header
	// came before it, and only the handler, reading the body, reads on.
	for _, part := range []struct {
		text string
		read chan struct{}
	}{{`{"items":[{"queue":"late",`, first}, {`"transactionId":"t1",`, second}} {
		if _, err := io.WriteString(bodyW, part.text); err != nil {
			t.Fatal(err)
		}
		select {
		case <-part.read:
		case <-time.After(20 * time.Second):
			t.Fatalf("the server never read %s", part.text)
		}
	}
	cancel()
	// The listener closes first: once a dial fails, the shutdown is under way.
	combtest.CheckFor(t, 10*time.Second, func() error {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return errors.New("listener still open")
		}
		return nil
	})
	select {
	case err := <-done:
		t.Fatalf("Serve returned (%v) with a request in flight", err)
	default:
	}
	if _, err := io.WriteString(bodyW, `"payload":{"n":1}}]}`); err != nil {
		t.Fatal(err)
	}
	bodyW.Close()
	if code := <-answered; code != http.StatusCreated {
		t.Fatalf("push in flight answered %d, want 201", code)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Serve did not return after the last request")
	}
	res, err := b.Pop(context.Background(), combtype.PopRequest{Queue: "late", Batch: 10})
	if err != nil || len(res.Messages) != 1 || res.Messages[0].TxnID != "t1" {
		t.Fatalf("the push answered during shutdown is not in the queue: %+v %v", res, err)
	}
}

func TestShutdownStopsARunningServe(t *testing.T) {
	b := combtest.MustOpenBroker(t, combtest.Options{})
	base, srv, _, done := serveInBackground(t, b, nil)
	if resp, err := http.Get(base + "/health"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("health before shutdown: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve after Shutdown: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Serve did not return after Shutdown")
	}
	// Shutdown drained the broker: a pop that would wait answers at once.
	res, err := b.Pop(ctx, combtype.PopRequest{Queue: "empty", Wait: true, Timeout: time.Hour})
	if err != nil || len(res.Messages) != 0 {
		t.Fatalf("pop after Shutdown: %+v %v", res, err)
	}
}

func TestListenRefusesAnOpenAddressWithoutAuthBeforeBinding(t *testing.T) {
	// 192.0.2.10 (TEST-NET-1) is on no interface: binding it would fail
	// with another error, so ErrInsecureBind shows nothing was tried.
	for _, addr := range []string{"192.0.2.10:0", "0.0.0.0:0", ":0", "[::]:0"} {
		ln, err := httpd.Listen(addr, httpd.Config{})
		if !errors.Is(err, httpd.ErrInsecureBind) {
			if ln != nil {
				ln.Close()
			}
			t.Errorf("Listen(%q) without auth: %v, want ErrInsecureBind", addr, err)
		}
	}
	auth, err := httpd.NewAuthenticator(httpd.AuthConfig{Secret: authtest.NewKeys(t).Secret})
	if err != nil {
		t.Fatal(err)
	}
	_, err = httpd.Listen("192.0.2.10:0", httpd.Config{Auth: auth})
	if err == nil || errors.Is(err, httpd.ErrInsecureBind) {
		t.Errorf("Listen with auth on an address of no interface: %v, want the bind's own error", err)
	}
}

// A request's headers are bounded: one past MaxHeaderBytes (and the 4 KiB
// net/http reads past it) is answered 431 at once and its connection
// closed, and one just under it is served.
func TestHeadersPastTheBoundAreRefused(t *testing.T) {
	b := combtest.MustOpenBroker(t, combtest.Options{})
	base, _, _, _ := serveInBackground(t, b, nil)
	host := strings.TrimPrefix(base, "http://")
	for _, c := range []struct {
		size int
		want int
	}{
		{httpd.MaxHeaderBytes - 1024, http.StatusOK},
		{httpd.MaxHeaderBytes + 8192, http.StatusRequestHeaderFieldsTooLarge},
		// A megabyte, never finished: answered without waiting for the rest.
		{1 << 20, http.StatusRequestHeaderFieldsTooLarge},
	} {
		conn, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		req := "GET /health HTTP/1.1\r\nHost: " + host + "\r\nX-Big: " + strings.Repeat("h", c.size)
		if c.size < 1<<20 {
			req += "\r\n\r\n"
		}
		go conn.Write([]byte(req)) // may fail once the server has answered and closed
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("header of %d bytes: %v", c.size, err)
		}
		resp.Body.Close()
		conn.Close()
		if resp.StatusCode != c.want {
			t.Errorf("header of %d bytes: %d, want %d", c.size, resp.StatusCode, c.want)
		}
	}
}
