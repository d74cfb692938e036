//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// A floor is what this machine allows at all: the same binary, run again
// as a server (-serve-floor), answers exactly what the measurement sends
// and does no broker work. A pop parks until the next push, which wakes
// every parked pop at once; each answers the pushed message in the shape
// and size of comb's pop reply, marshalled per reply. It keeps no queue,
// cursor or lease: one push is one message for every pop parked then, and
// an ack is answered without being looked at.
//
// The routes are one code for both modes; only the HTTP differs:
//
//   - nethttp: Go's net/http server, configured as comb's httpd.NewServer
//     configures it (timeouts; no write deadline).
//   - raw: one goroutine per connection reading requests with a
//     bufio.Reader and answering each with one conn.Write, keep-alive.
//     It does not see a client go away while its pop is parked.

// Floor modes.
const (
	floorNetHTTP = "nethttp"
	floorRaw     = "raw"
)

func validFloor(mode string) bool { return mode == floorNetHTTP || mode == floorRaw }

// serveFloorMain runs a floor server from the hidden command line
// `-serve-floor MODE -addr ADDR [-pprof ADDR]` until SIGTERM or SIGINT.
func serveFloorMain(args []string) {
	fs := flag.NewFlagSet("parked -serve-floor", flag.ExitOnError)
	mode := fs.String("serve-floor", "", "floor server to run: nethttp or raw")
	addr := fs.String("addr", "", "address to serve on")
	pprofAddr := fs.String("pprof", "", "serve net/http/pprof on this address too")
	fs.Parse(args)
	if !validFloor(*mode) || *addr == "" {
		fmt.Fprintln(os.Stderr, "parked: -serve-floor nethttp|raw -addr ADDR")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "parked: floor:", err)
		os.Exit(1)
	}
	if err := serveFloor(ctx, *mode, ln, *pprofAddr); err != nil {
		fmt.Fprintln(os.Stderr, "parked: floor:", err)
		os.Exit(1)
	}
}

// serveFloor serves mode on ln until ctx ends, and closes ln.
func serveFloor(ctx context.Context, mode string, ln net.Listener, pprofAddr string) error {
	s := newFloorServer()
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if pprofAddr != "" {
		pln, err := net.Listen("tcp", pprofAddr)
		if err != nil {
			ln.Close()
			return fmt.Errorf("listen pprof: %w", err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		psrv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		wg.Add(2)
		go func() {
			defer wg.Done()
			psrv.Serve(pln)
		}()
		go func() {
			defer wg.Done()
			<-ctx.Done()
			psrv.Close()
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		paceFloorGC(ctx)
	}()
	// Parked pops answer at once when the server stops.
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-ctx.Done()
		s.close()
	}()
	if mode == floorNetHTTP {
		return s.serveNetHTTP(ctx, ln)
	}
	return s.serveRaw(ctx, ln)
}

// floorServer is the routes' state: the wake the next push fires.
type floorServer struct {
	partitionID string
	mu          sync.Mutex
	next        *floorWake
	parked      atomic.Int64
	stopped     chan struct{}
	stopOnce    sync.Once
	buffers     sync.Pool
}

// floorWake is one push: msg is set before ch is closed, and read only
// after, so the woken pops read it without a lock.
type floorWake struct {
	ch  chan struct{}
	msg *floorMessage
}

// floorMessage is what a push stored.
type floorMessage struct {
	id, transactionID, queue, createdAt string
	data                                json.RawMessage
}

func newFloorServer() *floorServer {
	return &floorServer{partitionID: newID(), next: &floorWake{ch: make(chan struct{})}, stopped: make(chan struct{})}
}

func (s *floorServer) close() { s.stopOnce.Do(func() { close(s.stopped) }) }

// reply is one answer: a JSON body unless contentType says otherwise.
type reply struct {
	status      int
	contentType string
	body        []byte
	pooled      bool // body is the server's to recycle once written
}

// buffer is a reply buffer of at least size bytes, recycled as comb
// recycles its hot replies': a wake of thousands allocating one each ran
// into pages of the heap never touched before, a page fault every other
// reply and half the CPU of a wake through plain connections.
func (s *floorServer) buffer(size int) []byte {
	if b, ok := s.buffers.Get().(*[]byte); ok && cap(*b) >= size {
		return (*b)[:0]
	}
	// One size for all, so a buffer of one kind fits the other's use.
	return make([]byte, 0, max(size, 1<<10))
}

func (s *floorServer) recycle(b []byte) { s.buffers.Put(&b) }

func jsonReply(status int, v any) reply {
	b, err := json.Marshal(v)
	if err != nil {
		return reply{status: http.StatusInternalServerError, body: []byte(`{"error":"encode response"}`)}
	}
	return reply{status: status, body: b}
}

func errorReply(status int, msg string) reply {
	return jsonReply(status, map[string]string{"error": msg})
}

// route answers one request. A pop may wait in it until the next push,
// its timeout, or ctx's end.
func (s *floorServer) route(ctx context.Context, method, path, rawQuery string, body []byte) reply {
	switch {
	case method == http.MethodGet && path == "/health":
		return jsonReply(http.StatusOK, map[string]any{"database": "connected", "server": "parked-floor", "status": "healthy"})
	case method == http.MethodGet && path == "/metrics/prometheus":
		return reply{status: http.StatusOK, contentType: "text/plain; version=0.0.4; charset=utf-8", body: s.metrics()}
	case method == http.MethodGet && strings.HasPrefix(path, "/api/v1/pop/queue/"):
		return s.pop(ctx, rawQuery)
	case method == http.MethodPost && path == "/api/v1/push":
		return s.push(body)
	case method == http.MethodPost && path == "/api/v1/ack":
		return ack(body)
	}
	return errorReply(http.StatusNotFound, "not found")
}

// metrics is the gauge the measurement waits on and the commit counters
// it scrapes, which a floor never moves.
func (s *floorServer) metrics() []byte {
	return fmt.Appendf(nil, "# HELP comb_parked_pops Long-poll pops waiting for messages.\n# TYPE comb_parked_pops gauge\ncomb_parked_pops %d\n"+
		"comb_commit_batch_size_count 0\ncomb_commit_batch_size_sum 0\ncomb_commit_duration_seconds_sum 0\n", s.parked.Load())
}

// pop parks until the next push, to whichever queue, and answers its
// message as comb does.
func (s *floorServer) pop(ctx context.Context, rawQuery string) reply {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return errorReply(http.StatusBadRequest, err.Error())
	}
	group := q.Get("consumerGroup")
	if q.Get("wait") != "true" {
		return reply{status: http.StatusNoContent}
	}
	timeout := 30 * time.Second
	if v := q.Get("timeout"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms < 0 {
			return errorReply(http.StatusBadRequest, "bad timeout")
		}
		timeout = time.Duration(ms) * time.Millisecond
	}
	// Counted only once it holds the wake the next push fires, so the
	// gauge never counts a pop that push would miss.
	s.mu.Lock()
	w := s.next
	s.parked.Add(1)
	s.mu.Unlock()
	defer s.parked.Add(-1)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-w.ch:
	case <-t.C:
		return reply{status: http.StatusNoContent}
	case <-ctx.Done():
		return reply{status: http.StatusNoContent}
	case <-s.stopped:
		return reply{status: http.StatusNoContent}
	}
	lease := newID()
	return reply{status: http.StatusOK, pooled: true, body: appendPopReply(s.buffer(640), popReply{
		Success: true, Queue: w.msg.queue, Partition: "Default", PartitionID: s.partitionID, LeaseID: lease,
		ConsumerGroup: group, PartitionsClaimed: 1,
		Messages: []popMessage{{
			ID: w.msg.id, TransactionID: w.msg.transactionID, PartitionID: s.partitionID, Partition: "Default",
			Queue: w.msg.queue, LeaseID: lease, ConsumerGroup: group, Data: w.msg.data, CreatedAt: w.msg.createdAt,
		}},
	})}
}

// appendPopReply appends r as json.Marshal would (floor_test.go holds it
// to that), by hand as comb encodes its pop replies. json.Marshal's
// reflection grew every woken goroutine's stack, copied into pages never
// touched before: a wake of 10,000 took 10,000 more page faults and twice
// the CPU.
func appendPopReply(b []byte, r popReply) []byte {
	b = append(b, `{"success":`...)
	b = strconv.AppendBool(b, r.Success)
	b = appendField(b, "queue", r.Queue)
	b = appendField(b, "partition", r.Partition)
	b = appendField(b, "partitionId", r.PartitionID)
	b = appendField(b, "leaseId", r.LeaseID)
	b = appendField(b, "consumerGroup", r.ConsumerGroup)
	b = append(b, `,"partitionsClaimed":`...)
	b = strconv.AppendInt(b, int64(r.PartitionsClaimed), 10)
	b = append(b, `,"messages":[`...)
	for i, m := range r.Messages {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = appendJSONString(b, m.ID)
		b = appendField(b, "transactionId", m.TransactionID)
		b = appendField(b, "partitionId", m.PartitionID)
		b = appendField(b, "partition", m.Partition)
		b = appendField(b, "queue", m.Queue)
		b = appendField(b, "leaseId", m.LeaseID)
		b = appendField(b, "consumerGroup", m.ConsumerGroup)
		b = append(b, `,"data":`...)
		if m.Data == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, m.Data...) // compacted by push
		}
		b = appendField(b, "createdAt", m.CreatedAt)
		// A floor's messages have no trace or producer.
		b = append(b, `,"traceId":null,"producerSub":null,"retryCount":`...)
		b = strconv.AppendInt(b, int64(m.RetryCount), 10)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

func appendField(b []byte, name, v string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return appendJSONString(b, v)
}

// appendJSONString appends s as json.Marshal does: plain ASCII copied,
// anything it would escape through it.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			e, _ := json.Marshal(s) // a string always encodes
			return append(b, e...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// popReply is comb's pop reply, field for field.
type popReply struct {
	Success           bool         `json:"success"`
	Queue             string       `json:"queue"`
	Partition         string       `json:"partition"`
	PartitionID       string       `json:"partitionId"`
	LeaseID           string       `json:"leaseId"`
	ConsumerGroup     string       `json:"consumerGroup"`
	PartitionsClaimed int          `json:"partitionsClaimed"`
	Messages          []popMessage `json:"messages"`
}

type popMessage struct {
	ID            string          `json:"id"`
	TransactionID string          `json:"transactionId"`
	PartitionID   string          `json:"partitionId"`
	Partition     string          `json:"partition"`
	Queue         string          `json:"queue"`
	LeaseID       string          `json:"leaseId"`
	ConsumerGroup string          `json:"consumerGroup"`
	Data          json.RawMessage `json:"data"`
	CreatedAt     string          `json:"createdAt"`
	TraceID       *string         `json:"traceId"`
	ProducerSub   *string         `json:"producerSub"`
	RetryCount    int             `json:"retryCount"`
}

// push stores the first item and wakes every parked pop with it.
func (s *floorServer) push(body []byte) reply {
	var in struct {
		Items []struct {
			Queue         string          `json:"queue"`
			TransactionID string          `json:"transactionId"`
			Payload       json.RawMessage `json:"payload"`
		} `json:"items"`
	}
	if err := json.Unmarshal(body, &in); err != nil || len(in.Items) == 0 {
		return errorReply(http.StatusBadRequest, "items required")
	}
	it := in.Items[0]
	m := &floorMessage{id: newID(), transactionID: it.TransactionID, queue: it.Queue,
		createdAt: time.Now().UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)}
	if it.Payload != nil {
		// Compacted once here, as json.Marshal would in every reply.
		var c bytes.Buffer
		if err := json.Compact(&c, it.Payload); err != nil {
			return errorReply(http.StatusBadRequest, "bad payload")
		}
		m.data = c.Bytes()
	}
	s.mu.Lock()
	w := s.next
	s.next = &floorWake{ch: make(chan struct{})}
	s.mu.Unlock()
	w.msg = m
	close(w.ch)
	type pushed struct {
		Index         int     `json:"index"`
		TxID          string  `json:"transaction_id"`
		TransactionID string  `json:"transactionId"`
		Status        string  `json:"status"`
		MessageID     string  `json:"message_id"`
		PartitionID   string  `json:"partition_id"`
		TraceID       *string `json:"trace_id"`
		QueueName     string  `json:"queueName"`
	}
	return jsonReply(http.StatusCreated, []pushed{{TxID: m.transactionID, TransactionID: m.transactionID,
		Status: "queued", MessageID: m.id, PartitionID: s.partitionID, QueueName: m.queue}})
}

// ack answers as comb does for a completed message, checking nothing.
func ack(body []byte) reply {
	var in struct {
		TransactionID string `json:"transactionId"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return errorReply(http.StatusBadRequest, "bad ack")
	}
	type acked struct {
		Index         int     `json:"index"`
		TransactionID string  `json:"transactionId"`
		Success       bool    `json:"success"`
		Error         *string `json:"error"`
		QueueName     string  `json:"queueName"`
		PartitionName string  `json:"partitionName"`
		LeaseReleased bool    `json:"leaseReleased"`
		DLQ           bool    `json:"dlq"`
	}
	return jsonReply(http.StatusOK, []acked{{TransactionID: in.TransactionID, Success: true, QueueName: "parked",
		PartitionName: "Default", LeaseReleased: true}})
}

// newID is a random id in a UUID's shape, as comb's ids and leases are.
func newID() string {
	var b [16]byte
	var out [36]byte
	for i := range 2 {
		v := rand.Uint64()
		for j := range 8 {
			b[i*8+j] = byte(v >> (8 * j))
		}
	}
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:], b[10:])
	return string(out[:])
}

// maxFloorBody bounds a request body: the measurement sends a few hundred
// bytes.
const maxFloorBody = 1 << 20

// serveNetHTTP serves the routes with net/http until ctx ends.
func (s *floorServer) serveNetHTTP(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           http.HandlerFunc(s.serveHTTP),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       5 * time.Minute,
		WriteTimeout:      0,
		IdleTimeout:       120 * time.Second,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	srv.Close()
	<-served
	return nil
}

func (s *floorServer) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxFloorBody))
	if err != nil {
		writeReply(w, errorReply(http.StatusRequestEntityTooLarge, err.Error()))
		return
	}
	rep := s.route(r.Context(), r.Method, r.URL.Path, r.URL.RawQuery, body)
	writeReply(w, rep)
	// net/http has copied or sent the body once Write returns.
	if rep.pooled {
		s.recycle(rep.body)
	}
}

// writeReply writes rep with the headers comb writes: its length known,
// so net/http sends it in one piece.
func writeReply(w http.ResponseWriter, rep reply) {
	h := w.Header()
	if rep.status != http.StatusNoContent {
		h.Set("Content-Type", orDefault(rep.contentType, "application/json"))
		h.Set("Content-Length", strconv.Itoa(len(rep.body)))
	}
	h.Add("Vary", "Origin")
	w.WriteHeader(rep.status)
	w.Write(rep.body)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// serveRaw serves the routes over plain connections until ctx ends.
func (s *floorServer) serveRaw(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns = map[net.Conn]struct{}{}
	)
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		<-ctx.Done()
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for c := range conns {
			c.Close()
		}
	}()
	var err error
	for {
		c, aerr := ln.Accept()
		if aerr != nil {
			if ctx.Err() == nil {
				err = fmt.Errorf("accept: %w", aerr)
			}
			break
		}
		mu.Lock()
		if ctx.Err() != nil {
			mu.Unlock()
			c.Close()
			break
		}
		conns[c] = struct{}{}
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.serveConn(ctx, c)
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
			c.Close()
		}()
	}
	cancel()
	<-closed
	wg.Wait()
	return err
}

// serveConn answers c's requests in turn until it closes or fails.
func (s *floorServer) serveConn(ctx context.Context, c net.Conn) {
	br := bufio.NewReader(c)
	for {
		req, err := readRawRequest(br)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				c.Write([]byte("HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"))
			}
			return
		}
		rep := s.route(ctx, req.method, req.path, req.query, req.body)
		out := appendRawReply(s.buffer(len(rep.body)+192), rep, req.close)
		if rep.pooled {
			s.recycle(rep.body)
		}
		_, err = c.Write(out)
		s.recycle(out)
		if err != nil || req.close {
			return
		}
	}
}

// rawRequest is what the routes need of a request.
type rawRequest struct {
	method, path, query string
	body                []byte
	close               bool
}

// readRawRequest reads one HTTP/1.1 request with a body sized by
// Content-Length (the measurement sends no other).
func readRawRequest(br *bufio.Reader) (rawRequest, error) {
	var req rawRequest
	line, err := br.ReadSlice('\n')
	if err != nil {
		if len(line) == 0 && errors.Is(err, io.EOF) {
			return req, io.EOF
		}
		return req, fmt.Errorf("request line: %w", err)
	}
	method, rest, ok1 := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(" "))
	target, proto, ok2 := bytes.Cut(rest, []byte(" "))
	if !ok1 || !ok2 || !bytes.HasPrefix(proto, []byte("HTTP/1.")) {
		return req, fmt.Errorf("bad request line %q", line)
	}
	path, query, _ := bytes.Cut(target, []byte("?"))
	req.method, req.path, req.query = string(method), string(path), string(query)
	req.close = string(proto) == "HTTP/1.0"
	length := 0
	for {
		h, err := br.ReadSlice('\n')
		if err != nil {
			return req, fmt.Errorf("header: %w", err)
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		k, v, _ := bytes.Cut(h, []byte(":"))
		v = bytes.TrimSpace(v)
		switch {
		case bytes.EqualFold(k, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(v)); err != nil || length < 0 || length > maxFloorBody {
				return req, fmt.Errorf("bad Content-Length %q", v)
			}
		case bytes.EqualFold(k, []byte("Transfer-Encoding")):
			return req, errors.New("chunked bodies are not read")
		case bytes.EqualFold(k, []byte("Connection")):
			req.close = bytes.EqualFold(v, []byte("close"))
		}
	}
	if length > 0 {
		req.body = make([]byte, length)
		if _, err := io.ReadFull(br, req.body); err != nil {
			return req, fmt.Errorf("body: %w", err)
		}
	}
	return req, nil
}

// appendRawReply is rep as net/http would write it for comb: status line,
// comb's headers and a Date, then the body.
func appendRawReply(b []byte, rep reply, closing bool) []byte {
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(rep.status), 10)
	b = append(b, ' ')
	b = append(b, http.StatusText(rep.status)...)
	b = append(b, "\r\n"...)
	if rep.status != http.StatusNoContent {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(len(rep.body)), 10)
		b = append(b, "\r\nContent-Type: "...)
		b = append(b, orDefault(rep.contentType, "application/json")...)
		b = append(b, "\r\n"...)
	}
	b = append(b, "Vary: Origin\r\nDate: "...)
	b = time.Now().UTC().AppendFormat(b, http.TimeFormat)
	if closing {
		b = append(b, "\r\nConnection: close"...)
	}
	b = append(b, "\r\n\r\n"...)
	return append(b, rep.body...)
}
