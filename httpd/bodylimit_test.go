package httpd_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/combtest"
)

// rawPush opens a connection to srv and sends the headers of a push
// declaring length (chunked when negative). It returns the connection and
// a channel that receives the status of the reply ("closed" when the
// connection ends without one).
func rawPush(t *testing.T, srv *combtest.Server, length int64) (net.Conn, <-chan string) {
	t.Helper()
	host := strings.TrimPrefix(srv.URL, "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	hdr := "POST /api/v1/push HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\n"
	if length < 0 {
		hdr += "Transfer-Encoding: chunked\r\n\r\n"
	} else {
		hdr += fmt.Sprintf("Content-Length: %d\r\n\r\n", length)
	}
	if _, err := io.WriteString(conn, hdr); err != nil {
		t.Fatal(err)
	}
	status := make(chan string, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			status <- "closed"
			return
		}
		resp.Body.Close()
		status <- resp.Status
	}()
	return conn, status
}

func waitStatus(t *testing.T, status <-chan string, within time.Duration) string {
	t.Helper()
	select {
	case s := <-status:
		return s
	case <-time.After(within):
		return fmt.Sprintf("no answer within %s", within)
	}
}

// A body declaring more than the limit is refused before a byte of it is
// read: the client has sent only its headers when the 413 comes.
func TestADeclaredBodyOverTheLimitIsRefusedUnread(t *testing.T) {
	srv := combtest.MustServer(t, combtest.Options{HTTP: func(c *httpd.Config) { c.MaxBodyBytes = 1 << 20 }})
	_, status := rawPush(t, srv, 100<<20)
	if got := waitStatus(t, status, 5*time.Second); !strings.HasPrefix(got, "413") {
		t.Fatalf("a declared 100 MB body with no byte of it sent: %s, want 413 at once", got)
	}
}

// A chunked body is cut at the limit, whatever follows.
func TestAChunkedBodyIsCutAtTheLimit(t *testing.T) {
	srv := combtest.MustServer(t, combtest.Options{HTTP: func(c *httpd.Config) { c.MaxBodyBytes = 1 << 20 }})
	conn, status := rawPush(t, srv, -1)
	chunk := strings.Repeat("z", 64<<10)
	prefix := `{"items":[{"queue":"q","payload":"` // a string running past the limit
	io.WriteString(conn, fmt.Sprintf("%x\r\n%s\r\n", len(prefix), prefix))
	var sent int64
	for sent < 256<<20 {
		if _, err := fmt.Fprintf(conn, "%x\r\n%s\r\n", len(chunk), chunk); err != nil {
			break // the server stopped reading and closed
		}
		sent += int64(len(chunk))
		select {
		case s := <-status:
			if !strings.HasPrefix(s, "413") {
				t.Fatalf("chunked body past the limit: %s, want 413", s)
			}
			return
		default:
		}
	}
	if got := waitStatus(t, status, 5*time.Second); !strings.HasPrefix(got, "413") && got != "closed" {
		t.Fatalf("chunked body of %d bytes past a 1 MiB limit: %s", sent, got)
	}
	if sent >= 256<<20 {
		t.Fatalf("the server took all %d bytes of a chunked body over a 1 MiB limit", sent)
	}
}

// A body trickled a byte at a time is cut once the grace has passed and
// its rate is below the minimum; one arriving at a fair rate is not.
func TestATrickledBodyIsCut(t *testing.T) {
	srv := combtest.MustServer(t, combtest.Options{HTTP: func(c *httpd.Config) {
		// The grace is ten times the fair client's pause below, so a
		// loaded machine (CI runs the race build beside other packages)
		// does not turn that pause into a trickle.
		c.BodyGrace, c.MinBodyRate = time.Second, 1<<10
	}})
	body := `{"items":[{"queue":"slow","payload":"` + strings.Repeat("s", 200) + `"}]}`
	conn, status := rawPush(t, srv, int64(len(body)))
	start := time.Now()
	for i := 0; i < len(body); i++ {
		if _, err := conn.Write([]byte{body[i]}); err != nil {
			break
		}
		select {
		case s := <-status:
			if !strings.HasPrefix(s, "408") {
				t.Fatalf("trickled body: %s, want 408", s)
			}
			if took := time.Since(start); took > 6*time.Second {
				t.Fatalf("trickled body cut after %s, want about the 1 s grace", took)
			}
			goto fair
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("a body trickled over %s was read to its end", time.Since(start))
fair:
	// The same body in one piece after a pause shorter than the grace.
	conn, status = rawPush(t, srv, int64(len(body)))
	time.Sleep(100 * time.Millisecond)
	io.WriteString(conn, body)
	if got := waitStatus(t, status, 5*time.Second); !strings.HasPrefix(got, "201") {
		t.Fatalf("a body within its grace: %s, want 201", got)
	}
}

// The bytes of bodies being read at once are bounded: while one holds the
// room, another waits, then is refused with 503 and Retry-After, while a
// small one goes through at once; once the first is done the second goes
// through.
func TestBodiesPastTheInFlightBoundWaitThenAreRefused(t *testing.T) {
	srv := combtest.MustServer(t, combtest.Options{HTTP: func(c *httpd.Config) {
		c.MaxBodyBytes, c.MaxBodyBytesInFlight, c.BodyWait = 1<<20, 1<<20, 300*time.Millisecond
	}})
	body := `{"items":[{"queue":"q","payload":"` + strings.Repeat("b", 600<<10) + `"}]}`
	first, firstStatus := rawPush(t, srv, int64(len(body)))
	io.WriteString(first, body[:100])  // holds its room while the rest is on its way
	time.Sleep(200 * time.Millisecond) // for the server to take its headers in

	resp, err := srv.HTTP.Client().Post(srv.URL+"/api/v1/push", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("second body while the first holds the room: %s %v, want 503 with Retry-After", resp.Status, resp.Header)
	}
	// A small request does not wait for room.
	if r := srv.Do("POST", "/api/v1/push", `{"items":[{"queue":"small","payload":1}]}`); r.Status != http.StatusCreated {
		t.Fatalf("a small push while a large body holds the room: %d %s", r.Status, r.Body)
	}
	io.WriteString(first, body[100:])
	if got := waitStatus(t, firstStatus, 5*time.Second); !strings.HasPrefix(got, "201") {
		t.Fatalf("first body: %s", got)
	}
	if r := srv.Do("POST", "/api/v1/push", body); r.Status != http.StatusCreated {
		t.Fatalf("second body, sent again: %d %.200s", r.Status, r.Body)
	}
}

// Chunked bodies take their room as they arrive. Four that together need
// more than the room, each holding part of it when the room runs out,
// used to wait on each other until BodyWait, then were refused, though
// any one of them alone fits: the first to begin now goes on, and the
// others follow as room comes back.
func TestChunkedBodiesThatOutgrowTheRoomTogetherAllGoThrough(t *testing.T) {
	srv := combtest.MustServer(t, combtest.Options{HTTP: func(c *httpd.Config) {
		c.MaxBodyBytes, c.MaxBodyBytesInFlight, c.BodyWait = 4<<20, 1<<20, 5*time.Second
	}})
	chunk := func(s string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(s), s) }
	const n = 4
	var conns [n]net.Conn
	var statuses [n]<-chan string
	var bodies [n]string
	for i := range n {
		bodies[i] = fmt.Sprintf(`{"items":[{"queue":"q","transactionId":"big-%d","payload":"%s"}]}`, i, strings.Repeat("c", 600<<10))
		conns[i], statuses[i] = rawPush(t, srv, -1)
	}
	// Each sends 400 KiB: 1.6 MiB in all against 1 MiB of room, so the
	// room runs out with every body holding part of it.
	for i := range n {
		if _, err := io.WriteString(conns[i], chunk(bodies[i][:400<<10])); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond)
	for i := range n {
		if _, err := io.WriteString(conns[i], chunk(bodies[i][400<<10:])+"0\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		if got := waitStatus(t, statuses[i], 10*time.Second); !strings.HasPrefix(got, "201") {
			t.Errorf("chunked body %d: %s, want 201", i, got)
		}
	}
	r := srv.Do("GET", "/api/v1/messages?queue=q&limit=10", "")
	for i := range n {
		if !strings.Contains(string(r.Body), fmt.Sprintf(`"big-%d"`, i)) {
			t.Errorf("message big-%d is not stored: %d %.200s", i, r.Status, r.Body)
		}
	}
}

// The routes that carry no messages or stream state take bodies of at
// most 1 MiB, declared or chunked, with the default limit of 64 MiB: each
// decodes its body whole, into several times its size, and a re-drive of
// a million ids (40 MB) took the server to 205 MB. The routes that carry
// messages keep the limit.
func TestRoutesThatCarryNoMessagesTakeSmallBodies(t *testing.T) {
	srv := combtest.MustServer(t, combtest.Options{})
	big := `{"queue":"q","pad":"` + strings.Repeat("p", 2<<20) + `"}`
	for _, path := range []string{"/api/v1/configure", "/api/v1/dlq/redrive", "/api/v1/snapshots", "/api/v1/traces",
		"/streams/v1/queries", "/api/v1/consumer-groups/g/queues/q/seek"} {
		for _, chunked := range []bool{false, true} {
			var body io.Reader = strings.NewReader(big)
			if chunked {
				body = io.MultiReader(strings.NewReader(big)) // no length: sent chunked
			}
			resp, err := http.Post(srv.URL+path, "application/json", body)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			out, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(out), `"error"`) {
				t.Errorf("%s, 2 MiB (chunked %v): %d %.200s, want 413", path, chunked, resp.StatusCode, out)
			}
		}
	}
	push := `{"items":[{"queue":"q","payload":"` + strings.Repeat("p", 2<<20) + `"}]}`
	resp, err := http.Post(srv.URL+"/api/v1/push", "application/json", strings.NewReader(push))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("a push of 2 MiB: %d, want 201", resp.StatusCode)
	}
}
