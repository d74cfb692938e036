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

// ReadDB opens the database file at path read-only, for a test to look at
// rows no API returns; it is closed at cleanup.
func ReadDB(tb testing.TB, path string) *sql.DB {
	tb.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=query_only(1)&_pragma=busy_timeout(10000)")
	if err != nil {
		tb.Fatalf("open %s read-only: %v", path, err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
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

// OpenBrokerAt opens a broker on the file at path, with no periodic
// retention sweep, for a test that closes and reopens one database (a
// restart); the test closes it itself, with CloseBroker.
func OpenBrokerAt(tb testing.TB, path string, opts Options) *broker.Broker {
	tb.Helper()
	bo := broker.Options{Path: path, Clock: opts.Clock, RetentionInterval: -1}
	if opts.Broker != nil {
		opts.Broker(&bo)
	}
	b, err := broker.Open(context.Background(), bo)
	if err != nil {
		tb.Fatalf("open broker: %v", err)
	}
	return b
}

// CloseBroker lets b's parked pops go, closes it as a process exit would
// after its last answer, and checks the invariants of its file.
func CloseBroker(tb testing.TB, b *broker.Broker) {
	tb.Helper()
	b.Drain()
	if err := b.Close(); err != nil {
		tb.Fatalf("close broker: %v", err)
	}
	CheckInvariants(tb, b.DatabasePath())
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
	ts := httptest.NewServer(httpd.NewHandler(b, cfg))
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
	TraceID       *string         `json:"traceId"`
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

// CheckInvariants checks the closed database file with broker.Check, the
// same check "comb check" runs: SQLite's integrity check, every segment's
// checksum, the segments tiling each partition, created_at monotone,
// cursors, leases, dedup keys and tombstones inside their partition, and no
// orphan rows.
func CheckInvariants(tb testing.TB, path string) {
	tb.Helper()
	rep, err := broker.Check(context.Background(), path)
	if err != nil {
		tb.Errorf("invariants: %v", err)
		return
	}
	for _, f := range rep.Findings {
		tb.Errorf("invariant: %s", f)
	}
}
