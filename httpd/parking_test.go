package httpd_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/combtest"
)

// Parked pops leave net/http while they wait, where the system allows
// (parking.go); from the outside nothing may tell.

// parkPop sends a long-poll pop for group on c and waits until it is the
// one pop parked, outside net/http (where it can: Linux).
func parkPop(t *testing.T, b *broker.Broker, srv *httpd.Server, c net.Conn, group, extra string) {
	t.Helper()
	req := "GET /api/v1/pop/queue/q?consumerGroup=" + group + "&wait=true&timeout=60000 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" + extra
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	want := 1
	if runtime.GOOS != "linux" {
		want = 0
	}
	combtest.CheckFor(t, 10*time.Second, func() error {
		if n, p := srv.TakenPops(), b.Parked(); n != want || p != 1 {
			return fmt.Errorf("%d pops parked, %d outside net/http; want 1, %d", p, n, want)
		}
		return nil
	})
}

func dialServer(t *testing.T, base string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func pushOne(t *testing.T, base, txn string) {
	t.Helper()
	resp, err := http.Post(base+"/api/v1/push", "application/json",
		strings.NewReader(`{"items":[{"queue":"q","transactionId":"`+txn+`","payload":{"n":1}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("push: %d", resp.StatusCode)
	}
}

// popThenHealth pushes the message "m" that the parked pop on br's
// connection waits for, and reads its answer, then the answer to the
// GET /health sent behind it.
func popThenHealth(t *testing.T, base string, br *bufio.Reader) {
	t.Helper()
	pushOne(t, base, "m")
	if resp, body := readAnswer(t, br); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"transactionId":"m"`) {
		t.Fatalf("pop: %d %s", resp.StatusCode, body)
	}
	if resp, body := readAnswer(t, br); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"healthy"`) {
		t.Fatalf("the request behind it: %d %s", resp.StatusCode, body)
	}
}

func readAnswer(t *testing.T, br *bufio.Reader) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the body: %v", err)
	}
	return resp, string(body)
}

func TestAParkedPopIsAnsweredAndItsConnectionServesTheNext(t *testing.T) {
	b := combtest.MustOpenBroker(t, combtest.Options{})
	base, srv, _, _ := serveInBackground(t, b, nil)
	c := dialServer(t, base)
	br := bufio.NewReader(c)
	for round := range 3 {
		parkPop(t, b, srv, c, "g", "")
		pushOne(t, base, fmt.Sprintf("m-%d", round))
		resp, body := readAnswer(t, br)
		if resp.StatusCode != http.StatusOK || resp.Close || resp.Header.Get("Content-Type") != "application/json" ||
			resp.Header.Get("Date") == "" || !strings.Contains(body, fmt.Sprintf(`"transactionId":"m-%d"`, round)) {
			t.Fatalf("round %d: %d close=%v %v %s", round, resp.StatusCode, resp.Close, resp.Header, body)
		}
		if int64(len(body)) != resp.ContentLength {
			t.Fatalf("round %d: body of %d bytes, Content-Length %d", round, len(body), resp.ContentLength)
		}
		// The same connection carries the ack, through net/http again.
		var got struct {
			LeaseID  string `json:"leaseId"`
			Messages []struct {
				PartitionID string `json:"partitionId"`
			} `json:"messages"`
		}
		if err := json.Unmarshal([]byte(body), &got); err != nil || len(got.Messages) != 1 {
			t.Fatalf("round %d: %v %s", round, err, body)
		}
		ack := fmt.Sprintf(`{"transactionId":"m-%d","partitionId":"%s","leaseId":"%s","consumerGroup":"g","status":"completed"}`,
			round, got.Messages[0].PartitionID, got.LeaseID)
		fmt.Fprintf(c, "POST /api/v1/ack HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(ack), ack)
		resp, body = readAnswer(t, br)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"success":true`) {
			t.Fatalf("round %d: ack on the same connection: %d %s", round, resp.StatusCode, body)
		}
	}
	if n := srv.TakenPops(); n != 0 {
		t.Errorf("%d pops still held after their answers", n)
	}
}

func TestAParkedPopWhoseClientLeftHoldsNoLease(t *testing.T) {
	b := combtest.MustOpenBroker(t, combtest.Options{})
	base, srv, _, _ := serveInBackground(t, b, nil)
	c := dialServer(t, base)
	parkPop(t, b, srv, c, "g", "")
	c.Close()
	combtest.CheckFor(t, 10*time.Second, func() error {
		if n, p := srv.TakenPops(), b.Parked(); n != 0 || p != 0 {
			return fmt.Errorf("%d pops held, %d parked after their client left", n, p)
		}
		return nil
	})
	pushOne(t, base, "after")
	res, err := b.Pop(context.Background(), combtype.PopRequest{Queue: "q", Group: "g"})
	if err != nil || len(res.Messages) != 1 {
		t.Fatalf("the group's next pop: %v %+v (a lease taken for the client that left?)", err, res)
	}
}

// A request a client sends on a parked pop's connection, with the pop or
// while it waits, is answered after the pop's answer. Bytes that come
// while it waits are not a hang-up: the pop waits on for its message.
func TestARequestSentBehindAParkedPopIsAnsweredAfterIt(t *testing.T) {
	const health = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
	for _, while := range []bool{false, true} {
		t.Run(fmt.Sprintf("while parked=%v", while), func(t *testing.T) {
			b := combtest.MustOpenBroker(t, combtest.Options{})
			base, srv, _, _ := serveInBackground(t, b, nil)
			c := dialServer(t, base)
			br := bufio.NewReader(c)
			if !while {
				parkPop(t, b, srv, c, "g", health)
			} else {
				parkPop(t, b, srv, c, "g", "")
				if _, err := io.WriteString(c, health); err != nil {
					t.Fatal(err)
				}
				time.Sleep(100 * time.Millisecond) // for the watch to see them; the pop must still wait after
				if p := b.Parked(); p != 1 {
					t.Fatalf("%d pops parked after the client sent its next request; want 1", p)
				}
			}
			popThenHealth(t, base, br)
		})
	}
}

func TestShutdownAnswersAParkedPopAndClosesItsConnection(t *testing.T) {
	b := combtest.MustOpenBroker(t, combtest.Options{})
	base, srv, cancel, done := serveInBackground(t, b, nil)
	c := dialServer(t, base)
	br := bufio.NewReader(c)

	// A connection answered before and waiting for its next request.
	idle := dialServer(t, base)
	parkPop(t, b, srv, idle, "h", "")
	pushOne(t, base, "m")
	if resp, _ := readAnswer(t, bufio.NewReader(idle)); resp.StatusCode != http.StatusOK {
		t.Fatalf("pop: %d", resp.StatusCode)
	}
	parkPop(t, b, srv, c, "h", "") // nothing more for h
	cancel()
	resp, _ := readAnswer(t, br)
	if resp.StatusCode != http.StatusNoContent || !resp.Close {
		t.Fatalf("at shutdown: %d close=%v, want 204 and Connection: close", resp.StatusCode, resp.Close)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return")
	}
	for name, conn := range map[string]net.Conn{"answered at shutdown": c, "idle": idle} {
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := conn.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("the %s connection after Serve returned: %d bytes, %v; want it closed", name, n, err)
		}
	}
}

func TestAnAnsweredConnectionWaitsForItsNextRequestAsLongAsTheIdleTimeout(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("connections wait outside net/http on Linux only")
	}
	b := combtest.MustOpenBroker(t, combtest.Options{})
	base, srv, _, _ := serveInBackground(t, b, nil)
	srv.SetIdleTimeout(200 * time.Millisecond)
	idleConns := func(want int) func() error {
		return func() error {
			if n := srv.IdleConns(); n != want {
				return fmt.Errorf("%d connections idle outside net/http, want %d", n, want)
			}
			return nil
		}
	}
	quiet, left := dialServer(t, base), dialServer(t, base)
	for i, c := range []net.Conn{quiet, left} {
		// Each in its own group; the second starts after the first's
		// message, acknowledged on its behalf.
		if i > 0 {
			if _, err := b.Pop(context.Background(), combtype.PopRequest{Queue: "q", Group: "g1", AutoAck: true}); err != nil {
				t.Fatal(err)
			}
		}
		parkPop(t, b, srv, c, fmt.Sprintf("g%d", i), "")
		pushOne(t, base, fmt.Sprintf("m%d", i))
		if resp, _ := readAnswer(t, bufio.NewReader(c)); resp.StatusCode != http.StatusOK {
			t.Fatalf("pop: %d", resp.StatusCode)
		}
	}
	// One leaves, and is forgotten as net/http forgets a connection
	// whose peer closed; the other says nothing and is closed at the
	// idle timeout.
	left.Close()
	quiet.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := quiet.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("an idle connection after its timeout: %d bytes, %v; want it closed", n, err)
	}
	combtest.CheckFor(t, 10*time.Second, idleConns(0))
}

// A connection goes back through the listener it came from, whatever
// address it arrived on: here a wildcard listener, whose connections
// carry the address they reached (127.0.0.1), not the listener's.
func TestAPopThroughAWildcardListenerWaitsOutsideNetHTTP(t *testing.T) {
	b := combtest.MustOpenBroker(t, combtest.Options{})
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, cancel, served := serveOn(t, b, ln, httpd.Config{})
	base := fmt.Sprintf("http://127.0.0.1:%d", ln.Addr().(*net.TCPAddr).Port)
	c := dialServer(t, base)
	br := bufio.NewReader(c)
	parkPop(t, b, srv, c, "g", "")
	pushOne(t, base, "m")
	if resp, body := readAnswer(t, br); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"transactionId":"m"`) {
		t.Fatalf("pop: %d %s", resp.StatusCode, body)
	}
	io.WriteString(c, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	if resp, _ := readAnswer(t, br); resp.StatusCode != http.StatusOK {
		t.Fatalf("the next request on the connection: %d", resp.StatusCode)
	}
	cancel()
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// A pop that carries a body (Queen's pop has none, but a client may send
// one) waits inside net/http, which reads past the body before the next
// request: outside it, the unread body would be taken for the start of
// the connection's next request.
func TestAPopWithABodyIsAnsweredAndTheRequestBehindItToo(t *testing.T) {
	b := combtest.MustOpenBroker(t, combtest.Options{})
	base, srv, _, _ := serveInBackground(t, b, nil)
	c := dialServer(t, base)
	br := bufio.NewReader(c)
	io.WriteString(c, "GET /api/v1/pop/queue/q?consumerGroup=g&wait=true&timeout=60000 HTTP/1.1\r\nHost: 127.0.0.1\r\n"+
		"Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"+
		"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	combtest.CheckFor(t, 10*time.Second, func() error {
		if p := b.Parked(); p != 1 {
			return fmt.Errorf("%d pops parked, want 1", p)
		}
		return nil
	})
	if n := srv.TakenPops(); n != 0 {
		t.Errorf("%d pops with a body outside net/http, want 0", n)
	}
	popThenHealth(t, base, br)
}
