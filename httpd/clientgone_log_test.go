package httpd_test

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/clock"
	"github.com/comb-broker/comb/internal/combtest"
)

// readHead sends a raw request on a new connection to s and reads its
// reply's status line and headers, leaving the body unread.
func readHead(t *testing.T, s *combtest.Server, request string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", s.HTTP.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReaderSize(conn, 512)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the reply's head: %v", err)
		}
		if line == "\r\n" {
			return conn, br
		}
		if strings.HasPrefix(line, "HTTP/") && !strings.Contains(line, " 200 ") {
			t.Fatalf("reply %q", line)
		}
	}
}

// logsWithoutError waits for logs to say want, the server's account of
// what the client did, and fails the test if they hold an error.
func logsWithoutError(t *testing.T, logs *combtest.Logs, want string) {
	t.Helper()
	combtest.CheckFor(t, 10*time.Second, func() error {
		if !strings.Contains(logs.String(), want) {
			return fmt.Errorf("the log does not say %q yet:\n%s", want, logs.String())
		}
		return nil
	})
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("the server logged an error for what a client did:\n%s", logs.String())
	}
}

// An autoAck pop whose client reads its reply slower than the queue's
// lease is delivered again (at least once): that is the client's pace, not
// a server fault, and is logged as a warning naming it. It was an ERROR.
func TestASlowReaderOfAnAutoAckPopIsAWarningNotAnError(t *testing.T) {
	var logs combtest.Logs
	clk := clock.NewManual(time.Date(2026, 7, 30, 8, 0, 0, 0, time.UTC))
	s := combtest.MustServer(t, combtest.Options{Clock: clk, HTTP: func(c *httpd.Config) { c.Logger = logs.Logger() }})
	if r := s.Do("POST", "/api/v1/configure", `{"queue":"slow","options":{"leaseTime":1}}`); r.Status != http.StatusOK && r.Status != http.StatusCreated {
		t.Fatalf("configure: %d %s", r.Status, r.Body)
	}
	// Larger than what the sockets buffer between the two: the reply's
	// write waits for the client to read.
	s.Push(item("slow", strings.Repeat("x", 16<<20), "transactionId", "only"))
	conn, br := readHead(t, s, "GET /api/v1/pop/queue/slow?autoAck=true HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
	clk.Advance(time.Minute) // the lease ends while the reply is written
	if _, err := io.Copy(io.Discard, br); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	logsWithoutError(t, &logs, "took longer than its lease")
	// Delivered again.
	if p := s.Pop("/api/v1/pop/queue/slow?autoAck=true"); len(p.Messages) != 1 || p.Messages[0].TransactionID != "only" {
		t.Fatalf("the pop after = %+v", p)
	}
}

// A client that leaves in the middle of a state/get reply ends it short;
// that is the client's doing and is logged at debug level. It was logged
// as an ERROR ("state read failed mid-reply"), as a failure to read the
// state is.
func TestAClientLeavingAStateReplyIsNotAnError(t *testing.T) {
	var logs combtest.Logs
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := combtest.MustServer(t, combtest.Options{HTTP: func(c *httpd.Config) { c.Logger = logger }})
	q := register(t, s.Client, "gone", "src", "", streamsHash("gone"), false)
	queryID := q["query_id"].(string)
	const partitionID = "01a245bd-862a-7c16-b033-170641bd0704"
	// More state than the sockets buffer between the two.
	value := map[string]any{"v": strings.Repeat("y", 2000)}
	for round := range 4 {
		ops := make([]map[string]any, 2000)
		for i := range ops {
			ops[i] = map[string]any{"type": "upsert", "key": fmt.Sprintf("k%d-%05d", round, i), "value": value}
		}
		cycle(t, s.Client, map[string]any{"query_id": queryID, "partition_id": partitionID, "state_ops": ops})
	}
	body := fmt.Sprintf(`{"query_id":%q,"partition_id":%q}`, queryID, partitionID)
	conn, _ := readHead(t, s, fmt.Sprintf("POST /streams/v1/state/get HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body))
	conn.(*net.TCPConn).SetLinger(0) // a reset: the server's next write fails
	conn.Close()
	logsWithoutError(t, &logs, "the client is gone")
}
