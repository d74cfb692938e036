package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// A floor is what this machine allows an HTTP server at all: the routes the
// push and pop+ack rows use, answered the way a broker that stores nothing
// would. It reads and decodes each body and answers comb's status with a
// reply shaped like comb's, and does nothing else: no store, no writer, no
// fsync, no router, no metrics. It runs as this binary started again with
// floorFlag, a process of its own, so its CPU per message is read from /proc
// exactly as comb's is. The nethttp floor is Go's net/http server configured
// as `comb serve` configures it; the raw floor speaks HTTP/1.1 itself over
// each net.Conn, so the two differ only by what net/http costs.

// floorFlag, as the first argument, makes this binary a floor server
// instead of the bench. It is not a flag of the bench, so -h does not list it.
const floorFlag = "-serve-floor"

// floorModes are the floors -floor may name.
func floorModes() []string { return []string{"nethttp", "raw"} }

// comb serve's settings that a floor copies (internal/gcpace, httpd/serve.go,
// httpd/server.go).
const (
	combMemoryLimit       = 28 << 20
	combGCPercent         = 400
	combMaxBodyBytes      = 64 << 20
	combReadHeaderTimeout = 10 * time.Second
	combReadTimeout       = 5 * time.Minute
	combIdleTimeout       = 120 * time.Second
)

// startFloor starts this binary again as a floor server of mode, in dir.
func startFloor(ctx context.Context, mode, dir, client string) (*combServer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	c := newHTTPTarget("floor "+mode, addr, client)
	c.dir = dir
	if err := c.startProcess(ctx, exec.Command(exe, floorFlag, mode, "-addr", addr)); err != nil {
		return nil, err
	}
	return c, nil
}

// floorMain runs a floor server until SIGINT or SIGTERM; args are those
// after floorFlag: the mode, then its flags.
func floorMain(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "floor: want a mode:", strings.Join(floorModes(), ", "))
		return 2
	}
	mode := args[0]
	fs := flag.NewFlagSet("floor", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "address to serve")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	// As `comb serve` does unless GOMEMLIMIT or GOGC are set (gcpace.Tune). The
	// limit's following of the live heap only matters past half of it,
	// which a floor, keeping nothing, never reaches.
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(combMemoryLimit)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(combGCPercent)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		return 1
	}
	if err := serveFloor(ctx, mode, ln); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		return 1
	}
	return 0
}

// serveFloor answers on ln in mode until ctx ends, then closes ln and every
// connection and returns once their goroutines have.
func serveFloor(ctx context.Context, mode string, ln net.Listener) error {
	f := newFloor()
	switch mode {
	case "nethttp":
		srv := &http.Server{
			Handler:           f,
			ReadHeaderTimeout: combReadHeaderTimeout,
			ReadTimeout:       combReadTimeout,
			WriteTimeout:      0,
			IdleTimeout:       combIdleTimeout,
			ErrorLog:          log.New(os.Stderr, "floor: ", 0),
		}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ln) }()
		select {
		case err := <-served:
			return err
		case <-ctx.Done():
		}
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		err := srv.Shutdown(shutdownCtx)
		if serr := <-served; !errors.Is(serr, http.ErrServerClosed) && err == nil {
			err = serr
		}
		return err
	case "raw":
		return f.serveRaw(ctx, ln)
	}
	ln.Close()
	return fmt.Errorf("floor mode %q: want one of %s", mode, strings.Join(floorModes(), ", "))
}

// floor answers the routes; it is safe for concurrent use.
type floor struct {
	pl       *payloads      // the data of the messages a pop answers
	seq      atomic.Int64   // numbers message and transaction ids
	buffers  sync.Pool      // *[]byte, for bodies and replies
	jsonType []string       // the Content-Type header's value, one for all replies
	textType []string       // the metrics' Content-Type
	conns    sync.WaitGroup // the raw floor's connections
}

func newFloor() *floor {
	return &floor{pl: newPayloads(), jsonType: []string{"application/json"}, textType: []string{"text/plain; version=0.0.4"}}
}

// maxPooled keeps an occasional huge body from being held on to.
const maxPooled = 1 << 20

func (f *floor) getBuf(size int) []byte {
	if b, ok := f.buffers.Get().(*[]byte); ok && cap(*b) >= size {
		return (*b)[:0]
	}
	return make([]byte, 0, max(size, 512))
}

func (f *floor) putBuf(b []byte) {
	if cap(b) <= maxPooled {
		f.buffers.Put(&b)
	}
}

// ServeHTTP is the nethttp floor: it reads the body as comb does (bounded
// by comb's limit, into a buffer sized from Content-Length) and writes the
// reply with comb's headers, one Write.
func (f *floor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body []byte
	if r.ContentLength != 0 {
		size := 512
		if r.ContentLength > 0 && r.ContentLength <= combMaxBodyBytes {
			size = int(r.ContentLength) + 1 // the extra byte lets the last read see EOF in place
		}
		buf, err := readAll(http.MaxBytesReader(w, r.Body, combMaxBodyBytes), f.getBuf(size))
		if err != nil {
			f.putBuf(buf)
			status := http.StatusBadRequest
			if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
				status = http.StatusRequestEntityTooLarge
			}
			http.Error(w, err.Error(), status)
			return
		}
		body = buf
	}
	out := f.getBuf(256)
	status, text, out := f.answer(r.Method, r.URL.Path, r.URL.RawQuery, body, out)
	if body != nil {
		f.putBuf(body)
	}
	h := w.Header()
	h["Content-Type"] = f.jsonType
	if text {
		h["Content-Type"] = f.textType
	}
	// A reply shorter than net/http's 2 KB buffer is named by net/http
	// itself once the handler returns; a longer one would go out chunked.
	if len(out) >= 2048 {
		h["Content-Length"] = []string{strconv.Itoa(len(out))}
	}
	w.WriteHeader(status)
	w.Write(out)
	f.putBuf(out)
}

// readAll reads r to its end into buf's room, growing it if it must.
func readAll(r io.Reader, buf []byte) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// answer appends the reply to method and path to out and returns its
// status; text is set for a text/plain reply, JSON otherwise.
func (f *floor) answer(method, path, rawQuery string, body, out []byte) (status int, text bool, _ []byte) {
	switch {
	case method == http.MethodPost && path == "/api/v1/push":
		return f.push(body, out)
	case method == http.MethodGet && strings.HasPrefix(path, "/api/v1/pop/queue/"):
		return f.pop(strings.TrimPrefix(path, "/api/v1/pop/queue/"), rawQuery, out)
	case method == http.MethodPost && path == "/api/v1/ack/batch":
		return f.ackBatch(body, out)
	case method == http.MethodGet && path == "/health":
		return http.StatusOK, false, append(out, `{"database":"none","server":"floor","status":"healthy"}`...)
	case method == http.MethodGet && path == "/metrics/prometheus":
		// Nothing is committed, so the bench reads no commit counters.
		return http.StatusOK, true, out
	}
	return http.StatusNotFound, false, append(out, `{"error":"no such route"}`...)
}

type floorPushIn struct {
	Items []struct {
		Queue         string          `json:"queue"`
		Partition     string          `json:"partition"`
		TransactionID string          `json:"transactionId"`
		TraceID       *string         `json:"traceId"`
		Payload       json.RawMessage `json:"payload"`
	} `json:"items"`
}

// push decodes the items and answers each as queued, with comb's fields:
// a fresh message id, the partition's id and the names sent.
func (f *floor) push(body, out []byte) (int, bool, []byte) {
	var in floorPushIn
	if err := json.Unmarshal(body, &in); err != nil {
		return badRequest(out, err.Error())
	}
	out = append(out, '[')
	for i := range in.Items {
		it := &in.Items[i]
		if it.Queue == "" {
			return badRequest(out[:0], "queue is required")
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"index":`...)
		out = strconv.AppendInt(out, int64(i), 10)
		out = append(out, `,"transaction_id":`...)
		out = appendJSONString(out, it.TransactionID)
		out = append(out, `,"transactionId":`...)
		out = appendJSONString(out, it.TransactionID)
		out = append(out, `,"status":"queued","message_id":"`...)
		out = txnID(out, f.seq.Add(1))
		out = append(out, `","partition_id":"`...)
		out = partitionID(out, it.Queue, it.Partition)
		out = append(out, `","trace_id":`...)
		if it.TraceID == nil {
			out = append(out, "null"...)
		} else {
			out = appendJSONString(out, *it.TraceID)
		}
		out = append(out, `,"queueName":`...)
		out = appendJSONString(out, it.Queue)
		out = append(out, '}')
	}
	return http.StatusCreated, false, append(out, ']')
}

// pop answers batch messages of the payloads this bench pushes, in comb's
// shape, as if a lease had been taken on them.
func (f *floor) pop(queue, rawQuery string, out []byte) (int, bool, []byte) {
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return badRequest(out, err.Error())
	}
	batch := 1
	if s := q.Get("batch"); s != "" {
		if batch, err = strconv.Atoi(s); err != nil || batch < 1 {
			return badRequest(out, "batch must be a positive integer")
		}
	}
	group := q.Get("consumerGroup")
	first := f.seq.Add(int64(batch)) - int64(batch) + 1
	partition := "p" + strconv.FormatInt(first%10, 10)
	pid := partitionID(nil, queue, partition)
	lease := txnID(nil, first)
	// The parts every message of the batch shares, as comb copies them.
	var shared []byte
	shared = append(shared, `,"partitionId":"`...)
	shared = append(shared, pid...)
	shared = append(shared, `","partition":`...)
	shared = appendJSONString(shared, partition)
	shared = append(shared, `,"queue":`...)
	shared = appendJSONString(shared, queue)
	shared = append(shared, `,"leaseId":"`...)
	shared = append(shared, lease...)
	shared = append(shared, `","consumerGroup":`...)
	shared = appendJSONString(shared, group)
	var at []byte
	at = append(at, `,"createdAt":"`...)
	at = time.Now().UTC().AppendFormat(at, "2006-01-02T15:04:05.000000Z")
	at = append(at, `","traceId":null,"producerSub":null,"retryCount":0}`...)

	out = append(out, `{"success":true,"queue":`...)
	out = appendJSONString(out, queue)
	out = append(out, `,"partition":`...)
	out = appendJSONString(out, partition)
	out = append(out, `,"partitionId":"`...)
	out = append(out, pid...)
	out = append(out, `","leaseId":"`...)
	out = append(out, lease...)
	out = append(out, `","consumerGroup":`...)
	out = appendJSONString(out, group)
	out = append(out, `,"partitionsClaimed":1,"messages":[`...)
	for k := range int64(batch) {
		if k > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"id":"`...)
		out = txnID(out, first+k)
		out = append(out, `","transactionId":"`...)
		out = txnID(out, first+k)
		out = append(out, '"')
		out = append(out, shared...)
		out = append(out, `,"data":`...)
		out = append(out, f.pl.at(first+k)...)
		out = append(out, at...)
	}
	return http.StatusOK, false, append(out, "]}"...)
}

type floorAckIn struct {
	ConsumerGroup   string `json:"consumerGroup"`
	Acknowledgments []struct {
		TransactionID string `json:"transactionId"`
		PartitionID   string `json:"partitionId"`
		LeaseID       string `json:"leaseId"`
		Status        string `json:"status"`
	} `json:"acknowledgments"`
}

// ackBatch decodes the acks and answers each as done. Storing nothing, it
// cannot name the queue and partition a lease was on, as comb does: those
// are null.
func (f *floor) ackBatch(body, out []byte) (int, bool, []byte) {
	var in floorAckIn
	if err := json.Unmarshal(body, &in); err != nil {
		return badRequest(out, err.Error())
	}
	out = append(out, '[')
	for i := range in.Acknowledgments {
		a := &in.Acknowledgments[i]
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"index":`...)
		out = strconv.AppendInt(out, int64(i), 10)
		out = append(out, `,"transactionId":`...)
		out = appendJSONString(out, a.TransactionID)
		out = append(out, `,"success":true,"error":null,"queueName":null,"partitionName":null,"leaseReleased":false,"dlq":false}`...)
	}
	return http.StatusOK, false, append(out, ']')
}

func badRequest(out []byte, msg string) (int, bool, []byte) {
	out = append(out[:0], `{"error":`...)
	out = appendJSONString(out, msg)
	return http.StatusBadRequest, false, append(out, '}')
}

// appendJSONString appends s as a JSON string: plain ASCII is copied, the
// rest goes through encoding/json, as comb's encoder does.
func appendJSONString(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // a string always encodes
			return append(buf, b...)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}

// partitionID appends a UUID-shaped id derived from the queue and
// partition names, which a floor computes where comb looks it up.
func partitionID(buf []byte, queue, partition string) []byte {
	h := fnv.New64a()
	h.Write([]byte(queue))
	h.Write([]byte{0})
	h.Write([]byte(partition))
	return txnID(buf, int64(h.Sum64()&(1<<62-1)))
}

// serveRaw is the raw floor: a goroutine per connection reads requests with
// a bufio.Reader, parses what the bench's clients send, and writes each
// reply, headers and body, with one Write. It sets no deadlines and keeps
// every connection alive until the client closes it.
func (f *floor) serveRaw(ctx context.Context, ln net.Listener) error {
	var mu sync.Mutex
	conns := map[net.Conn]struct{}{}
	stopped := context.AfterFunc(ctx, func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for c := range conns {
			c.Close()
		}
	})
	defer stopped()
	defer f.conns.Wait()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("accept: %w", err)
		}
		mu.Lock()
		if ctx.Err() != nil {
			mu.Unlock()
			conn.Close()
			return nil
		}
		conns[conn] = struct{}{}
		mu.Unlock()
		f.conns.Go(func() {
			defer func() {
				mu.Lock()
				delete(conns, conn)
				mu.Unlock()
				conn.Close()
			}()
			if err := f.serveRawConn(conn); err != nil && ctx.Err() == nil {
				fmt.Fprintln(os.Stderr, "floor raw:", err)
			}
		})
	}
}

// errClosed ends a connection the client closed between requests.
var errClosed = errors.New("closed")

// serveRawConn answers requests on conn until the client closes it.
func (f *floor) serveRawConn(conn net.Conn) error {
	br := bufio.NewReaderSize(conn, 4096)
	var body, reply, out []byte
	for {
		method, target, n, keep, err := readRequestHead(br)
		if errors.Is(err, errClosed) {
			return nil
		}
		if err != nil {
			return err
		}
		if n > combMaxBodyBytes {
			return fmt.Errorf("body of %d bytes", n)
		}
		if cap(body) < n {
			body = make([]byte, n)
		}
		body = body[:n]
		if _, err := io.ReadFull(br, body); err != nil {
			return fmt.Errorf("body: %w", err)
		}
		path, rawQuery, _ := strings.Cut(target, "?")
		status, text, rep := f.answer(method, path, rawQuery, body, reply[:0])
		reply = rep
		out = append(out[:0], "HTTP/1.1 "...)
		out = strconv.AppendInt(out, int64(status), 10)
		out = append(out, ' ')
		out = append(out, http.StatusText(status)...)
		if text {
			out = append(out, "\r\nContent-Type: text/plain; version=0.0.4"...)
		} else {
			out = append(out, "\r\nContent-Type: application/json"...)
		}
		out = append(out, "\r\nContent-Length: "...)
		out = strconv.AppendInt(out, int64(len(reply)), 10)
		if !keep {
			out = append(out, "\r\nConnection: close"...)
		}
		out = append(out, "\r\n\r\n"...)
		out = append(out, reply...)
		if _, err := conn.Write(out); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		if !keep {
			return nil
		}
	}
}

// readRequestHead reads a request line and headers: the method, the
// target, the body's length and whether the connection stays open. It
// knows what the bench's clients send: no chunked bodies, no Expect.
func readRequestHead(br *bufio.Reader) (method, target string, n int, keep bool, err error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		if len(line) == 0 && (errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET)) {
			return "", "", 0, false, errClosed
		}
		return "", "", 0, false, fmt.Errorf("request line: %w", err)
	}
	m, rest, ok1 := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(" "))
	t, proto, ok2 := bytes.Cut(rest, []byte(" "))
	if !ok1 || !ok2 || !bytes.HasPrefix(proto, []byte("HTTP/1.")) {
		return "", "", 0, false, fmt.Errorf("request line %q", line)
	}
	method, target = string(m), string(t)
	keep = string(proto) == "HTTP/1.1"
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return "", "", 0, false, fmt.Errorf("header: %w", err)
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			return method, target, n, keep, nil
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return "", "", 0, false, fmt.Errorf("header %q", line)
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if n, err = strconv.Atoi(string(value)); err != nil || n < 0 {
				return "", "", 0, false, fmt.Errorf("content-length %q", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			return "", "", 0, false, fmt.Errorf("transfer-encoding %q: not spoken here", value)
		case bytes.EqualFold(name, []byte("Connection")):
			if bytes.EqualFold(value, []byte("close")) {
				keep = false
			} else if bytes.EqualFold(value, []byte("keep-alive")) {
				keep = true
			}
		}
	}
}
