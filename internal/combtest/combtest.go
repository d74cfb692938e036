// Package combtest holds test helpers: a broker on a real SQLite file in a
// temporary directory, a real HTTP server on 127.0.0.1, a JSON client, and
// an invariant check run after every test.
package combtest

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/clock"
	"github.com/comb-broker/comb/store"
)

// Options tune the helpers; the zero value is a broker on the wall clock.
type Options struct {
	Clock  clock.Clock
	Broker func(*broker.Options) // edits the broker options before Open
	HTTP   func(*httpd.Config)   // edits the HTTP config before New
}

// MustOpenStore opens a store on a new file in tb.TempDir and closes it,
// then checks the invariants, at cleanup.
func MustOpenStore(tb testing.TB, opts Options) *store.Store {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "comb.db")
	st, err := store.Open(context.Background(), store.Options{Path: path, Clock: opts.Clock})
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	tb.Cleanup(func() {
		if err := st.Close(); err != nil {
			tb.Errorf("close store: %v", err)
		}
		CheckInvariants(tb, path)
	})
	return st
}

// MustOpenBroker opens a broker on a new file in tb.TempDir.
func MustOpenBroker(tb testing.TB, opts Options) *broker.Broker {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "comb.db")
	bo := broker.Options{Path: path, Clock: opts.Clock}
	if opts.Broker != nil {
		opts.Broker(&bo)
	}
	b, err := broker.Open(context.Background(), bo)
	if err != nil {
		tb.Fatalf("open broker: %v", err)
	}
	tb.Cleanup(func() {
		b.Drain()
		if err := b.Close(); err != nil {
			tb.Errorf("close broker: %v", err)
		}
		CheckInvariants(tb, bo.Path)
	})
	return b
}

// Server is a broker behind a real HTTP server on 127.0.0.1.
type Server struct {
	*Client
	Broker *broker.Broker
	HTTP   *httptest.Server
}

// MustServer starts a broker and its HTTP server.
func MustServer(tb testing.TB, opts Options) *Server {
	tb.Helper()
	b := MustOpenBroker(tb, opts)
	cfg := httpd.Config{}
	if opts.HTTP != nil {
		opts.HTTP(&cfg)
	}
	ts := httptest.NewServer(httpd.New(b, cfg))
	// Registered after the broker's cleanup, so it runs first: the HTTP
	// server stops before the broker closes.
	tb.Cleanup(func() {
		b.Drain()
		ts.Close()
	})
	return &Server{Client: &Client{TB: tb, URL: ts.URL, HTTP: ts.Client()}, Broker: b, HTTP: ts}
}

// Client sends JSON requests and fails the test on transport errors.
type Client struct {
	TB     testing.TB
	URL    string
	HTTP   *http.Client
	Header http.Header // added to every request
}

// Response is a decoded reply.
type Response struct {
	Status int
	Body   []byte
}

// JSON decodes the body into v, failing the test if it does not decode.
func (r *Response) JSON(tb testing.TB, v any) {
	tb.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		tb.Fatalf("decode %s: %v", r.Body, err)
	}
}

// Map decodes the body as an object.
func (r *Response) Map(tb testing.TB) map[string]any {
	tb.Helper()
	var m map[string]any
	r.JSON(tb, &m)
	return m
}

// Do sends method path with body (nil, a string or a value to encode).
func (c *Client) Do(method, path string, body any) *Response {
	c.TB.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewBufferString(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			c.TB.Fatalf("encode body: %v", err)
		}
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequest(method, c.URL+path, rd)
	if err != nil {
		c.TB.Fatalf("new request: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range c.Header {
		req.Header[k] = v
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		c.TB.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		c.TB.Fatalf("read %s %s: %v", method, path, err)
	}
	return &Response{Status: resp.StatusCode, Body: data}
}

// Push pushes items (maps with queue, partition, payload, transactionId)
// and fails unless the answer is 201.
func (c *Client) Push(items ...map[string]any) []map[string]any {
	c.TB.Helper()
	r := c.Do("POST", "/api/v1/push", map[string]any{"items": items})
	if r.Status != http.StatusCreated {
		c.TB.Fatalf("push: %d %s", r.Status, r.Body)
	}
	var out []map[string]any
	r.JSON(c.TB, &out)
	return out
}

// PopMessage is a delivered message as the wire shows it.
type PopMessage struct {
	ID            string          `json:"id"`
	TransactionID string          `json:"transactionId"`
	PartitionID   string          `json:"partitionId"`
	Partition     string          `json:"partition"`
	Queue         string          `json:"queue"`
	LeaseID       string          `json:"leaseId"`
	ConsumerGroup string          `json:"consumerGroup"`
	Data          json.RawMessage `json:"data"`
	CreatedAt     string          `json:"createdAt"`
	RetryCount    int             `json:"retryCount"`
}

// PopReply is a pop's 200 body; Status is 204 with no messages.
type PopReply struct {
	Status            int
	LeaseID           string       `json:"leaseId"`
	PartitionsClaimed int          `json:"partitionsClaimed"`
	Messages          []PopMessage `json:"messages"`
}

// Pop GETs a pop path (with its query) and decodes the reply.
func (c *Client) Pop(pathAndQuery string) PopReply {
	c.TB.Helper()
	r := c.Do("GET", pathAndQuery, nil)
	out := PopReply{Status: r.Status}
	switch r.Status {
	case http.StatusNoContent:
		if len(r.Body) != 0 {
			c.TB.Fatalf("204 with a body: %q", r.Body)
		}
	case http.StatusOK:
		r.JSON(c.TB, &out)
	default:
		c.TB.Fatalf("pop %s: %d %s", pathAndQuery, r.Status, r.Body)
	}
	return out
}

// Ack acks m with status for group ("" = queue mode) and returns the item.
func (c *Client) Ack(m PopMessage, status, group string) map[string]any {
	c.TB.Helper()
	body := map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "leaseId": m.LeaseID, "status": status}
	if group != "" {
		body["consumerGroup"] = group
	}
	r := c.Do("POST", "/api/v1/ack", body)
	if r.Status != http.StatusOK {
		c.TB.Fatalf("ack: %d %s", r.Status, r.Body)
	}
	var out []map[string]any
	r.JSON(c.TB, &out)
	if len(out) != 1 {
		c.TB.Fatalf("ack answered %d items", len(out))
	}
	return out[0]
}

// CheckFor polls fn every 10 ms until it returns nil or total passes.
func CheckFor(tb testing.TB, total time.Duration, fn func() error) {
	tb.Helper()
	deadline := time.Now().Add(total)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("after %v: %v", total, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// CheckInvariants opens the closed database file and checks what must hold
// whatever a test did: each partition's segments tile [log_start,
// last_offset] with no gap or overlap, created_at never decreases with the
// offset, every dedup key points inside its partition, and no cursor is past
// the end of its partition.
func CheckInvariants(tb testing.TB, path string) {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=query_only(1)")
	if err != nil {
		tb.Errorf("invariants: open: %v", err)
		return
	}
	defer db.Close()
	check := func(name, query string) {
		var n int
		if err := db.QueryRow(query).Scan(&n); err != nil {
			tb.Errorf("invariant %s: %v", name, err)
		} else if n != 0 {
			tb.Errorf("invariant %s: %d violations", name, n)
		}
	}
	check("segments tile the log", `SELECT COUNT(*) FROM (
		SELECT base_offset, frame_count,
			LAG(base_offset + frame_count) OVER (PARTITION BY partition_id ORDER BY base_offset) AS prev_end
		FROM segments) WHERE prev_end IS NOT NULL AND prev_end != base_offset`)
	check("created_at monotone", `SELECT COUNT(*) FROM (
		SELECT created_at, LAG(created_at) OVER (PARTITION BY partition_id ORDER BY base_offset) AS prev
		FROM segments) WHERE prev IS NOT NULL AND created_at < prev`)
	check("last segment ends at last_offset", `SELECT COUNT(*) FROM partitions p WHERE p.last_offset + 1 !=
		COALESCE((SELECT MAX(base_offset + frame_count) FROM segments s WHERE s.partition_id = p.id), p.log_start)`)
	check("first segment starts at log_start", `SELECT COUNT(*) FROM partitions p WHERE EXISTS (SELECT 1 FROM segments s
		WHERE s.partition_id = p.id) AND p.log_start != (SELECT MIN(base_offset) FROM segments s WHERE s.partition_id = p.id)`)
	check("dedup keys inside the log", `SELECT COUNT(*) FROM txids t JOIN partitions p ON p.id = t.partition_id
		WHERE t.offset > p.last_offset`)
	check("cursors not past the end", `SELECT COUNT(*) FROM cursors c JOIN partitions p ON p.id = c.partition_id
		WHERE c.committed > p.last_offset`)
	check("frames counted", `SELECT COUNT(*) FROM partitions p WHERE (p.last_offset + 1 - p.log_start) !=
		COALESCE((SELECT SUM(frame_count) FROM segments s WHERE s.partition_id = p.id), 0)`)
}
