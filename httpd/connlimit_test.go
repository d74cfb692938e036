package httpd_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/combtest"
)

// A server holds at most Config.MaxConns connections: past the bound a
// new one is answered 503 in JSON, writes nothing, and the connections it
// holds (parked long-polls here) are served as before; a connection that
// closes gives its place back.
func TestConnectionsPastTheBoundAreRefusedAndTheRestServed(t *testing.T) {
	b := combtest.MustOpenBroker(t, combtest.Options{})
	ln, err := httpd.Listen("127.0.0.1:0", httpd.Config{})
	if err != nil {
		t.Fatal(err)
	}
	serveOn(t, b, ln, httpd.Config{MaxConns: 3})
	base := "http://" + ln.Addr().String()

	// Three parked pops, each its own group, hold the three places.
	readers := make([]*bufio.Reader, 3)
	closers := make([]io.Closer, 3)
	for i := range readers {
		c := dialServer(t, base)
		fmt.Fprintf(c, "GET /api/v1/pop/queue/q?consumerGroup=g%d&wait=true&timeout=60000 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", i)
		readers[i], closers[i] = bufio.NewReader(c), c
	}
	combtest.CheckFor(t, 10*time.Second, func() error {
		if n := b.Parked(); n != 3 {
			return fmt.Errorf("%d pops parked, want 3", n)
		}
		return nil
	})

	fresh := func() *http.Client {
		return &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	}
	refused := func(resp *http.Response, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct{ Error string }
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" ||
			resp.Header.Get("Content-Type") != "application/json" || json.Unmarshal(body, &e) != nil ||
			!strings.Contains(e.Error, "at most 3") {
			t.Fatalf("past the bound: %d %v %s", resp.StatusCode, resp.Header, body)
		}
	}
	refused(fresh().Get(base + "/health"))
	refused(fresh().Post(base+"/api/v1/push", "application/json",
		strings.NewReader(`{"items":[{"queue":"q","transactionId":"refused","payload":{"n":1}}]}`)))
	if n := b.Parked(); n != 3 {
		t.Fatalf("%d pops parked after the refusals, want 3: the refused push woke them", n)
	}

	// A client that leaves gives its place back.
	closers[0].Close()
	var resp *http.Response
	combtest.CheckFor(t, 10*time.Second, func() error {
		resp, err = fresh().Post(base+"/api/v1/push", "application/json",
			strings.NewReader(`{"items":[{"queue":"q","transactionId":"m","payload":{"n":1}}]}`))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("push once a place was given back: %d", resp.StatusCode)
		}
		return nil
	})
	for i, br := range readers[1:] {
		resp, body := readAnswer(t, br)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"transactionId":"m"`) || strings.Contains(body, "refused") {
			t.Fatalf("parked pop %d: %d %s", i+1, resp.StatusCode, body)
		}
	}

	// Every refusal counted: the two above, and those of the pushes tried
	// before the place was given back.
	combtest.CheckFor(t, 10*time.Second, func() error {
		resp, err := fresh().Get(base + "/metrics/prometheus")
		if err != nil {
			return err
		}
		text, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("scrape: %d", resp.StatusCode)
		}
		for _, l := range strings.Split(string(text), "\n") {
			if v, ok := strings.CutPrefix(l, "comb_http_connections_refused_total "); ok {
				if n, err := strconv.Atoi(v); err != nil || n < 2 {
					t.Fatalf("refusals counted: %q", l)
				}
				return nil
			}
		}
		t.Fatalf("no comb_http_connections_refused_total in the scrape")
		return nil
	})
}

// A refused connection that sends nothing is closed within a second, and
// a bound of refusals being answered at once closes the rest unanswered:
// neither holds the server.
func TestRefusedConnectionsThatSendNothingAreClosed(t *testing.T) {
	b := combtest.MustOpenBroker(t, combtest.Options{})
	ln, err := httpd.Listen("127.0.0.1:0", httpd.Config{})
	if err != nil {
		t.Fatal(err)
	}
	_, cancel, done := serveOn(t, b, ln, httpd.Config{MaxConns: 1})
	base := "http://" + ln.Addr().String()
	held := dialServer(t, base)
	fmt.Fprintf(held, "GET /api/v1/pop/queue/q?consumerGroup=g&wait=true&timeout=60000 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	combtest.CheckFor(t, 10*time.Second, func() error {
		if n := b.Parked(); n != 1 {
			return fmt.Errorf("%d pops parked, want 1", n)
		}
		return nil
	})
	// Closed by the refusal, not by the header timeout (10 s) that would
	// close them without one.
	start := time.Now()
	silent := make([]io.Reader, 100)
	for i := range silent {
		silent[i] = dialServer(t, base)
	}
	closed := make(chan int, len(silent))
	for i, c := range silent {
		go func() {
			io.ReadAll(c)
			closed <- i
		}()
	}
	deadline := time.After(8 * time.Second)
	for range silent {
		select {
		case <-closed:
		case <-deadline:
			t.Fatalf("silent connections still open after 8 s (the header timeout is 10 s)")
		}
	}
	t.Logf("100 silent connections refused and closed in %v", time.Since(start))
	// The server stops promptly with the refusals behind it.
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Serve did not return")
	}
}
