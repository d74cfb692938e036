// Command soak checks that retention keeps a busy broker's database from
// growing: it starts comb on a temporary database (or uses a running one),
// configures a queue with a short retention, pushes and consumes at a
// steady rate for a bounded time, and prints the size of the database and
// its WAL every report interval. With retention working, the size levels
// off once the first messages pass their retention age.
//
// Loopback only. Examples:
//
//	go run ./scripts/soak                                  # builds comb, 3 minutes
//	go run ./scripts/soak -duration 1m -rate 5000 -retention 10
//	go run ./scripts/soak -duration 1m -retention 0         # baseline: no retention
//	go run ./scripts/soak -url http://127.0.0.1:6632 -db ./comb.db   # a server you started
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

type config struct {
	duration   time.Duration
	report     time.Duration
	retention  int
	intervalMS int
	rate       int
	batch      int
	payload    int
	consumers  int
	bin        string
	src        string
	url        string
	db         string
	queue      string
	keep       bool
}

func main() {
	var c config
	flag.DurationVar(&c.duration, "duration", 3*time.Minute, "how long to push and consume")
	flag.DurationVar(&c.report, "report", 10*time.Second, "interval between size reports")
	flag.IntVar(&c.retention, "retention", 20, "the queue's retentionSeconds; 0 runs without retention, as a baseline")
	flag.IntVar(&c.intervalMS, "interval", 2000, "--retention-interval of the started server, in ms")
	flag.IntVar(&c.rate, "rate", 2000, "messages pushed per second")
	flag.IntVar(&c.batch, "batch", 100, "messages per push and per pop")
	flag.IntVar(&c.payload, "payload", 512, "approximate payload size in bytes")
	flag.IntVar(&c.consumers, "consumers", 2, "concurrent consumers (pop + ack)")
	flag.StringVar(&c.bin, "bin", "", "comb binary to start; empty builds one from -src")
	flag.StringVar(&c.src, "src", ".", "module directory to build comb from")
	flag.StringVar(&c.url, "url", "", "use this running server instead of starting one (needs -db)")
	flag.StringVar(&c.db, "db", "", "database file of the server given with -url")
	flag.StringVar(&c.queue, "queue", "soak", "queue name")
	flag.BoolVar(&c.keep, "keep", false, "keep the temporary directory")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c config) error {
	if c.url != "" && c.db == "" {
		return errors.New("-url needs -db, the file whose size to watch")
	}
	base, dbPath := c.url, c.db
	if base == "" {
		dir, err := os.MkdirTemp("", "comb-soak-")
		if err != nil {
			return err
		}
		if !c.keep {
			defer os.RemoveAll(dir)
		}
		srv, err := startServer(ctx, c, dir)
		if err != nil {
			return err
		}
		defer srv.stop()
		base, dbPath = srv.url, srv.db
		fmt.Printf("server  %s  db %s  log %s\n", base, dbPath, srv.log)
	}
	if err := checkLoopback(base); err != nil {
		return err
	}
	cl := &client{base: strings.TrimRight(base, "/"), http: &http.Client{Timeout: 30 * time.Second}}
	if err := cl.post(ctx, "/api/v1/configure", map[string]any{"queue": c.queue, "options": map[string]any{
		"retentionEnabled": c.retention > 0, "retentionSeconds": c.retention, "leaseTime": 30}}, nil); err != nil {
		return fmt.Errorf("configure: %w", err)
	}
	fmt.Printf("queue %q: retentionSeconds=%d, push %d msg/s in batches of %d, %d B payloads, %d consumers, %v\n\n",
		c.queue, c.retention, c.rate, c.batch, c.payload, c.consumers, c.duration)

	runCtx, cancel := context.WithTimeout(ctx, c.duration)
	defer cancel()
	var pushed, consumed, errs atomic.Int64
	var lat latencies
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		produce(runCtx, cl, c, &pushed, &errs, &lat)
	}()
	for range c.consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			consume(runCtx, cl, c, &consumed, &errs)
		}()
	}

	fmt.Printf("%8s %12s %12s %12s %10s %10s %8s %10s\n", "elapsed", "db", "wal", "db+wal", "pushed", "consumed", "errors", "push p99")
	start := time.Now()
	var samples []int64
	tick := time.NewTicker(c.report)
	defer tick.Stop()
	report := func() {
		db, wal := size(dbPath), size(dbPath+"-wal")
		samples = append(samples, db+wal)
		fmt.Printf("%8s %12s %12s %12s %10d %10d %8d %10s\n", time.Since(start).Round(time.Second), mib(db), mib(wal),
			mib(db+wal), pushed.Load(), consumed.Load(), errs.Load(), lat.p99().Round(100*time.Microsecond))
	}
loop:
	for {
		select {
		case <-runCtx.Done():
			break loop
		case <-tick.C:
			report()
		}
	}
	wg.Wait()
	summarize(c, samples)
	return nil
}

// summarize compares the size in the second half of the run with the first
// half after warm-up (retention age plus two sweeps).
func summarize(c config, samples []int64) {
	if c.retention <= 0 {
		fmt.Printf("\nno retention (baseline): %s after %v\n", mib(samples[len(samples)-1]), c.duration)
		return
	}
	warm := int((time.Duration(c.retention)*time.Second + 2*time.Duration(c.intervalMS)*time.Millisecond) / c.report)
	if warm >= len(samples)-2 {
		fmt.Println("\nrun too short to judge: make -duration several times -retention")
		return
	}
	steady := samples[warm+1:]
	half := len(steady) / 2
	first, second := slices.Max(steady[:max(half, 1)]), slices.Max(steady[half:])
	fmt.Printf("\nafter warm-up: max %s in the first half, max %s in the second half; peak overall %s\n",
		mib(first), mib(second), mib(slices.Max(samples)))
	if float64(second) <= 1.15*float64(first) {
		fmt.Println("size levelled off")
	} else {
		fmt.Println("size still growing")
	}
}

type server struct {
	url, db, log string
	cmd          *exec.Cmd
	done         chan error
}

func startServer(ctx context.Context, c config, dir string) (*server, error) {
	bin := c.bin
	if bin == "" {
		bin = filepath.Join(dir, "comb")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
		build.Dir, build.Stdout, build.Stderr = c.src, os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return nil, fmt.Errorf("build comb: %w", err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	s := &server{url: "http://" + addr, db: filepath.Join(dir, "soak.db"), log: filepath.Join(dir, "server.log"),
		done: make(chan error, 1)}
	logf, err := os.Create(s.log)
	if err != nil {
		return nil, err
	}
	s.cmd = exec.Command(bin, "serve", "--addr", addr, "--db", s.db, "--retention-interval", fmt.Sprintf("%dms", c.intervalMS))
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start comb: %w", err)
	}
	go func() { s.done <- s.cmd.Wait(); logf.Close() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(s.url + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		select {
		case err := <-s.done:
			return nil, fmt.Errorf("comb exited: %v (see %s)", err, s.log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, errors.New("comb did not answer /health within 30s")
		}
	}
}

func (s *server) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
}

func checkLoopback(base string) error {
	u, err := url.Parse(base)
	if err != nil {
		return err
	}
	host := u.Hostname()
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%s is not a loopback address", base)
}

type client struct {
	base string
	http *http.Client
}

func (c *client) do(ctx context.Context, method, path string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode >= 300 {
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	if out != nil && len(data) > 0 {
		return resp.StatusCode, json.Unmarshal(data, out)
	}
	return resp.StatusCode, nil
}

func (c *client) post(ctx context.Context, path string, body, out any) error {
	_, err := c.do(ctx, "POST", path, body, out)
	return err
}

// produce pushes c.rate messages a second in batches, paced by a ticker.
func produce(ctx context.Context, cl *client, c config, pushed, errs *atomic.Int64, lat *latencies) {
	// Random hex compresses about 2:1, like real payloads, unlike a repeated byte.
	rnd := rand.New(rand.NewPCG(1, 2))
	fill := func() string {
		b := make([]byte, max(c.payload-40, 0))
		for i := range b {
			b[i] = "0123456789abcdef"[rnd.IntN(16)]
		}
		return string(b)
	}
	every := time.Duration(float64(time.Second) * float64(c.batch) / float64(max(c.rate, 1)))
	t := time.NewTicker(every)
	defer t.Stop()
	items := make([]map[string]any, c.batch)
	for seq := 0; ; {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for i := range items {
			items[i] = map[string]any{"queue": c.queue, "payload": map[string]any{"seq": seq, "fill": fill()}}
			seq++
		}
		start := time.Now()
		if err := cl.post(ctx, "/api/v1/push", map[string]any{"items": items}, nil); err != nil {
			if ctx.Err() == nil {
				errs.Add(1)
			}
			continue
		}
		lat.add(time.Since(start))
		pushed.Add(int64(len(items)))
	}
}

// consume pops batches for one consumer group and acks them.
func consume(ctx context.Context, cl *client, c config, consumed, errs *atomic.Int64) {
	type msg struct {
		TransactionID string `json:"transactionId"`
		PartitionID   string `json:"partitionId"`
		LeaseID       string `json:"leaseId"`
	}
	for ctx.Err() == nil {
		var res struct {
			Messages []msg `json:"messages"`
		}
		status, err := cl.do(ctx, "GET", fmt.Sprintf("/api/v1/pop/queue/%s?batch=%d&wait=true&timeout=1000&consumerGroup=soak",
			url.PathEscape(c.queue), c.batch), nil, &res)
		if err != nil {
			if ctx.Err() == nil {
				errs.Add(1)
			}
			continue
		}
		if status == http.StatusNoContent || len(res.Messages) == 0 {
			continue
		}
		acks := make([]map[string]any, len(res.Messages))
		for i, m := range res.Messages {
			acks[i] = map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "leaseId": m.LeaseID,
				"status": "completed"}
		}
		if err := cl.post(ctx, "/api/v1/ack/batch", map[string]any{"acknowledgments": acks, "consumerGroup": "soak"}, nil); err != nil {
			if ctx.Err() == nil {
				errs.Add(1)
			}
			continue
		}
		consumed.Add(int64(len(acks)))
	}
}

// latencies keeps the push latencies of the current report interval.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

// p99 returns the 99th percentile since the last call and starts over.
func (l *latencies) p99() time.Duration {
	l.mu.Lock()
	d := l.d
	l.d = nil
	l.mu.Unlock()
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[(len(d)-1)*99/100]
}

func size(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
