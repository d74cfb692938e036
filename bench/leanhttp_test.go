package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// leanServer serves the shapes comb's replies take and counts the
// connections it accepted, so a test can tell reuse from reconnecting.
func leanServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		reply := r.Method + " " + r.URL.RequestURI() + " " + r.Header.Get("Content-Type") + " " + string(body)
		w.Header().Set("Content-Length", strconv.Itoa(len(reply)))
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, reply)
	})
	mux.HandleFunc("/empty", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("/close", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		io.WriteString(w, "bye")
	})
	mux.HandleFunc("/chunked", func(w http.ResponseWriter, r *http.Request) {
		// Past net/http's 2 KB buffer and without a Content-Length, as
		// comb's pop and push replies are, the reply goes out chunked.
		for i := range 50 {
			io.WriteString(w, strings.Repeat(strconv.Itoa(i%10), 100))
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("/unframed", func(w http.ResponseWriter, r *http.Request) {
		conn, brw, _ := w.(http.Hijacker).Hijack()
		brw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil close")
		brw.Flush()
		conn.Close()
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

func TestLeanConn(t *testing.T) {
	srv, conns := leanServer(t)
	ctx := context.Background()
	c := newLeanConn(srv.Listener.Addr().String())
	defer c.Close()
	do := func(method, path string, body []byte, wantStatus int, want string) {
		t.Helper()
		st, data, err := c.do(ctx, method, path, body)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		if st != wantStatus || string(data) != want {
			t.Fatalf("%s %s: HTTP %d %q, want HTTP %d %q", method, path, st, data, wantStatus, want)
		}
	}
	wantConns := func(n int64) {
		t.Helper()
		if got := conns.Load(); got != n {
			t.Fatalf("server saw %d connections, want %d", got, n)
		}
	}

	do("POST", "/echo?x=1", []byte(`{"a":1}`), 201, `POST /echo?x=1 application/json {"a":1}`)
	do("GET", "/echo", nil, 201, "GET /echo application/json ")
	do("GET", "/empty", nil, 204, "")
	do("POST", "/echo", []byte(`{}`), 201, "POST /echo application/json {}")
	wantConns(1)

	// The server closes after a reply that says so; the next request dials.
	do("GET", "/close", nil, 200, "bye")
	if c.conn != nil {
		t.Fatal("connection kept after Connection: close")
	}
	wantConns(1)
	do("POST", "/echo", []byte(`[]`), 201, "POST /echo application/json []")
	wantConns(2)

	// The server drops the idle connection; the request sent on it goes
	// again on a new one.
	srv.CloseClientConnections()
	do("POST", "/echo", []byte(`{"b":2}`), 201, `POST /echo application/json {"b":2}`)
	wantConns(3)

	var want bytes.Buffer
	for i := range 50 {
		want.WriteString(strings.Repeat(strconv.Itoa(i%10), 100))
	}
	do("GET", "/chunked", nil, 200, want.String())
	do("GET", "/chunked", nil, 200, want.String())
	do("GET", "/empty", nil, 204, "")
	wantConns(3)

	if _, _, err := c.do(ctx, "GET", "/unframed", nil); err == nil || !strings.Contains(err.Error(), "neither Content-Length nor chunked") {
		t.Fatalf("a reply framed only by closing: err %v, want one naming the missing framing", err)
	}
	do("GET", "/empty", nil, 204, "")
	wantConns(4)
}

func TestLeanConnHonoursContext(t *testing.T) {
	srv, _ := leanServer(t)
	c := newLeanConn(srv.Listener.Addr().String())
	defer c.Close()

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, _, err := c.do(ctx, "GET", "/slow", nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled request: err %v, want context.Canceled", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("cancelled request returned after %s", took)
	}

	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, _, err := c.do(ctx, "GET", "/slow", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("request past its deadline: err %v, want context.DeadlineExceeded", err)
	}

	// A later request on a live context gets a fresh connection.
	if st, _, err := c.do(context.Background(), "GET", "/empty", nil); err != nil || st != 204 {
		t.Fatalf("after cancellation: HTTP %d, %v", st, err)
	}
}
