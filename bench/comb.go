package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func buildComb(ctx context.Context, repo, out string) error {
	abs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", abs, ".")
	cmd.Dir = repo
	// comb ships as one static binary. With cgo on (the default where a C
	// compiler is installed) the net package links the C library instead,
	// which maps about 1 MB more into every process and would be measured
	// in the idle RSS.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build comb in %s: %w", repo, err)
	}
	return nil
}

// combServer is one `comb serve` process with its own database.
type combServer struct {
	cmd    *exec.Cmd
	dir    string
	db     string
	addr   string // host:port
	base   string
	client *http.Client // health checks and metrics, and every request with -client std
	lean   bool         // workers own a leanConn each
	idleMB float64
	stored int64 // messages a push run stored, for bytes per message

	name       string          // "comb" or "queen", in the logs
	pushStatus int             // what a push answers: comb 201, Queen 200
	cpuSeconds func() float64  // the server's CPU time so far, all its processes
	stopFn     func() memStats // stops a server that is not one comb process
	cpuPerMsg  float64         // server CPU per message of the last run, µs
}

// memStats is what a row learned about comb's memory and disk.
type memStats struct {
	idleMB, peakMB float64
	bytesPerMsg    float64
}

func startComb(ctx context.Context, bin, dir, pprofAddr, client string) (*combServer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	c := newHTTPTarget("comb", addr, client)
	c.dir, c.db = dir, filepath.Join(dir, "comb.db")
	cmd := exec.Command(bin, "serve", "--addr", addr, "--db", c.db)
	if pprofAddr != "" {
		cmd.Args = append(cmd.Args, "--pprof", pprofAddr)
	}
	cmd.Env = append(os.Environ(), "COMB_LOG_LEVEL=error")
	if err := c.startProcess(ctx, cmd); err != nil {
		return nil, err
	}
	return c, nil
}

// freeAddr is a loopback address no one listens on, for a server process
// to bind.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// newHTTPTarget is a server at addr that answers a push with 201, as comb
// does, driven by the given -client.
func newHTTPTarget(name, addr, client string) *combServer {
	c := &combServer{addr: addr, base: "http://" + addr, lean: client == "lean", name: name, pushStatus: http.StatusCreated}
	c.client = &http.Client{Transport: &http.Transport{
		MaxIdleConns: 256, MaxIdleConnsPerHost: 256, DisableCompression: true,
	}, Timeout: 60 * time.Second}
	return c
}

// startProcess starts cmd, logging to c.dir, waits until it answers
// /health, and reads its CPU time from /proc from then on.
func (c *combServer) startProcess(ctx context.Context, cmd *exec.Cmd) error {
	logf, err := os.Create(filepath.Join(c.dir, "serve.log"))
	if err != nil {
		return err
	}
	defer logf.Close() // the child holds its own descriptor
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", c.name, err)
	}
	c.cmd = cmd
	deadline := time.Now().Add(15 * time.Second)
	for {
		st, _, err := c.do(ctx, http.MethodGet, "/health", nil)
		if err == nil && st == http.StatusOK {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			c.stop()
			return fmt.Errorf("%s did not become healthy (see %s): %v", c.name, logf.Name(), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	pid := cmd.Process.Pid
	c.idleMB = procMB(pid, "VmRSS")
	c.cpuSeconds = func() float64 { return procCPUSeconds(pid) }
	return nil
}

// stop ends the process with SIGTERM, so it closes the database cleanly, and
// reports its peak RSS and, after a push run, the bytes per stored message.
func (c *combServer) stop() memStats {
	if c.stopFn != nil {
		c.client.CloseIdleConnections()
		return c.stopFn()
	}
	m := memStats{idleMB: c.idleMB, peakMB: procMB(c.cmd.Process.Pid, "VmHWM")}
	c.client.CloseIdleConnections()
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
	if c.stored > 0 && c.db != "" {
		var size int64
		for _, suffix := range []string{"", "-wal"} {
			if fi, err := os.Stat(c.db + suffix); err == nil {
				size += fi.Size()
			}
		}
		m.bytesPerMsg = float64(size) / float64(c.stored)
	}
	return m
}

// procMB reads a kB field of /proc/pid/status in MB.
func procMB(pid int, field string) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

func (c *combServer) do(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// combConn is how one worker sends its requests to comb.
type combConn interface {
	// do returns the status and body, which is valid until the next call.
	do(ctx context.Context, method, path string, body []byte) (int, []byte, error)
	Close() error
}

// stdConn sends through the shared net/http client, whose pool in practice
// gives each busy worker a connection of its own.
type stdConn struct{ c *combServer }

func (s stdConn) do(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	return s.c.do(ctx, method, path, body)
}

func (stdConn) Close() error { return nil }

// conn gives a worker its own way to comb, per -client.
func (c *combServer) conn() combConn {
	if c.lean {
		return newLeanConn(c.addr)
	}
	return stdConn{c}
}

// txnID is a UUIDv7-shaped client transactionId (time-ordered, like the
// SDKs send), built without allocation beyond the string.
func txnID(buf []byte, seq int64) []byte {
	const hex = "0123456789abcdef"
	var b [16]byte
	ms := uint64(time.Now().UnixMilli())
	for i := range 6 {
		b[i] = byte(ms >> (40 - 8*i))
	}
	b[6], b[7] = 0x70|byte(seq>>56)&0x0f, byte(seq>>48)
	b[8] = 0x80 | byte(seq>>40)&0x3f
	for i := 9; i < 16; i++ {
		b[i] = byte(uint64(seq) >> (8 * (15 - i)))
	}
	for i, x := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			buf = append(buf, '-')
		}
		buf = append(buf, hex[x>>4], hex[x&0x0f])
	}
	return buf
}

// pushBody builds one push request of n items spread over the partitions.
func pushBody(buf []byte, queue string, pl *payloads, seq *atomic.Int64, n, partitions int) []byte {
	buf = append(buf[:0], `{"items":[`...)
	for k := range n {
		i := seq.Add(1)
		if k > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"queue":"`...)
		buf = append(buf, queue...)
		buf = append(buf, `","partition":"p`...)
		buf = strconv.AppendInt(buf, i%int64(partitions), 10)
		buf = append(buf, `","transactionId":"`...)
		buf = txnID(buf, i)
		buf = append(buf, `","payload":`...)
		buf = append(buf, pl.at(i)...)
		buf = append(buf, '}')
	}
	return append(buf, "]}"...)
}

// push runs cfg.conns producers of batch items for cfg.duration and returns
// the rate of messages the server confirmed as queued.
func (c *combServer) push(ctx context.Context, cfg config, pl *payloads, queue string, batch int) (float64, error) {
	var seq, queued atomic.Int64
	var errOnce sync.Once
	var firstErr error
	before := c.sample(ctx)
	cpuBefore := readClientCPU()
	start := time.Now()
	deadline := start.Add(cfg.duration)
	var wg sync.WaitGroup
	for range cfg.conns {
		wg.Go(func() {
			conn := c.conn()
			defer conn.Close()
			var buf []byte
			for ctx.Err() == nil && time.Now().Before(deadline) {
				buf = pushBody(buf, queue, pl, &seq, batch, cfg.partitions)
				n, err := c.pushOnce(ctx, conn, buf, batch)
				queued.Add(int64(n))
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpuAfter := readClientCPU()
	c.stored = queued.Load()
	c.report(before, c.sample(ctx), cpuBefore, cpuAfter, float64(queued.Load()))
	if firstErr != nil {
		return 0, firstErr
	}
	return float64(queued.Load()) / elapsed.Seconds(), nil
}

func (c *combServer) pushOnce(ctx context.Context, conn combConn, body []byte, n int) (int, error) {
	st, data, err := conn.do(ctx, http.MethodPost, "/api/v1/push", body)
	if err != nil {
		return 0, err
	}
	if st != c.pushStatus {
		return 0, fmt.Errorf("push: HTTP %d: %.200s", st, data)
	}
	if got := bytes.Count(data, []byte(`"status":"queued"`)); got != n {
		return got, fmt.Errorf("push: %d of %d queued: %.200s", got, n, data)
	}
	return n, nil
}

// prefill stores n messages over partitions with batch-100 pushes.
func (c *combServer) prefill(ctx context.Context, pl *payloads, queue string, n, partitions int) error {
	var seq, left atomic.Int64
	left.Store(int64(n))
	var wg sync.WaitGroup
	var errOnce sync.Once
	var firstErr error
	for range 16 {
		wg.Go(func() {
			conn := c.conn()
			defer conn.Close()
			var buf []byte
			for ctx.Err() == nil {
				take := int64(100)
				if rest := left.Add(-take); rest < 0 {
					take += rest
				}
				if take <= 0 {
					return
				}
				buf = pushBody(buf, queue, pl, &seq, int(take), partitions)
				if _, err := c.pushOnce(ctx, conn, buf, int(take)); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// popAck stores prefill messages over partitions, then runs perGroup
// consumers in each of groups consumer groups, each popping a batch and
// acking it in one request, until every group has acked every message. The
// rate counts acked deliveries, so a fan-out counts each message once per
// group.
func (c *combServer) popAck(ctx context.Context, cfg config, pl *payloads, partitions, perGroup, groups, prefill int) (float64, error) {
	const queue = "orders"
	if err := c.prefill(ctx, pl, queue, prefill, partitions); err != nil {
		return 0, fmt.Errorf("prefill: %w", err)
	}
	fmt.Fprintf(os.Stderr, "  %s prefilled %d messages; draining\n", c.name, prefill)
	target := int64(prefill * groups)
	var acked atomic.Int64
	before := c.sample(ctx)
	cpuBefore := readClientCPU()
	start := time.Now()
	runCtx, cancel := context.WithTimeout(ctx, max(cfg.duration*4, 20*time.Second))
	defer cancel()
	var wg sync.WaitGroup
	var errOnce sync.Once
	var firstErr error
	var finished atomic.Int64
	for g := range groups {
		group := "g" + strconv.Itoa(g)
		path := "/api/v1/pop/queue/" + queue + "?consumerGroup=" + group + "&batch=" + strconv.Itoa(cfg.popBatch) + "&wait=true&timeout=1000"
		var groupAcked atomic.Int64
		for range perGroup {
			wg.Go(func() {
				conn := c.conn()
				defer conn.Close()
				var body []byte
				for runCtx.Err() == nil && groupAcked.Load() < int64(prefill) {
					n, err := c.popAckOnce(runCtx, conn, path, group, &body)
					if err != nil {
						if runCtx.Err() == nil {
							errOnce.Do(func() { firstErr = err })
						}
						return
					}
					groupAcked.Add(int64(n))
					if acked.Add(int64(n)) >= target {
						finished.CompareAndSwap(0, int64(time.Since(start)))
						cancel()
					}
				}
			})
		}
	}
	wg.Wait()
	cpuAfter := readClientCPU()
	c.report(before, c.sample(ctx), cpuBefore, cpuAfter, float64(acked.Load()))
	if firstErr != nil {
		return 0, firstErr
	}
	if finished.Load() == 0 {
		// The drain ran out of time: the rate so far is still a rate.
		fmt.Fprintf(os.Stderr, "  drain cut at %s: %d of %d acked\n", time.Since(start).Round(time.Millisecond), acked.Load(), target)
		return float64(acked.Load()) / time.Since(start).Seconds(), nil
	}
	return float64(target) / time.Duration(finished.Load()).Seconds(), nil
}

// popAckOnce pops one batch and acks all of it; it reads only the three ids
// per message the ack needs, so the client spends as little CPU as the
// JetStream client does.
func (c *combServer) popAckOnce(ctx context.Context, conn combConn, path, group string, body *[]byte) (int, error) {
	st, data, err := conn.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return 0, err
	}
	if st == http.StatusNoContent {
		return 0, nil
	}
	if st != http.StatusOK {
		return 0, fmt.Errorf("pop: HTTP %d: %.200s", st, data)
	}
	i := bytes.Index(data, []byte(`"messages":[`))
	if i < 0 {
		return 0, fmt.Errorf("pop: no messages: %.200s", data)
	}
	msgs := data[i:]
	txns := values(msgs, `"transactionId":"`)
	parts := values(msgs, `"partitionId":"`)
	leases := values(msgs, `"leaseId":"`)
	// Queen puts the reply's own partitionId after the messages (its keys
	// are sorted); each message's come first.
	parts, leases = parts[:min(len(parts), len(txns))], leases[:min(len(leases), len(txns))]
	if len(txns) != len(parts) || len(txns) != len(leases) {
		return 0, fmt.Errorf("pop: %d transactionIds, %d partitionIds, %d leaseIds", len(txns), len(parts), len(leases))
	}
	if len(txns) == 0 {
		return 0, nil
	}
	b := append((*body)[:0], `{"consumerGroup":"`...)
	b = append(b, group...)
	b = append(b, `","acknowledgments":[`...)
	for k := range txns {
		if k > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"transactionId":"`...)
		b = append(b, txns[k]...)
		b = append(b, `","partitionId":"`...)
		b = append(b, parts[k]...)
		b = append(b, `","leaseId":"`...)
		b = append(b, leases[k]...)
		b = append(b, `","status":"completed"}`...)
	}
	b = append(b, "]}"...)
	*body = b
	st, data, err = conn.do(ctx, http.MethodPost, "/api/v1/ack/batch", b)
	if err != nil {
		return 0, err
	}
	if st != http.StatusOK {
		return 0, fmt.Errorf("ack: HTTP %d: %.200s", st, data)
	}
	if ok := bytes.Count(data, []byte(`"success":true`)); ok != len(txns) {
		return 0, fmt.Errorf("ack: %d of %d succeeded: %.200s", ok, len(txns), data)
	}
	return len(txns), nil
}

// values returns every string value that follows key in data.
func values(data []byte, key string) [][]byte {
	var out [][]byte
	for {
		i := bytes.Index(data, []byte(key))
		if i < 0 {
			return out
		}
		data = data[i+len(key):]
		j := bytes.IndexByte(data, '"')
		if j < 0 {
			return out
		}
		out = append(out, data[:j])
		data = data[j:]
	}
}
