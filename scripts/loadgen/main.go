// Command loadgen drives a running comb server over loopback HTTP and
// reports throughput and latency for pushes and pop+ack cycles.
//
// Examples:
//
//	go run ./scripts/loadgen -mode push -batch 100 -producers 50 -duration 10s
//	go run ./scripts/loadgen -mode popack -prefill 200000 -consumers 4 -popbatch 100
//	go run ./scripts/loadgen -mode all -duration 3s -json
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
)

type config struct {
	baseURL    string
	mode       string
	batch      int
	producers  int
	duration   time.Duration
	payload    int
	queue      string
	partitions int
	consumers  int
	popBatch   int
	prefill    int
	jsonOut    bool
}

// result is the outcome of one measured run.
type result struct {
	Run        string  `json:"run"`
	Queue      string  `json:"queue"`
	Batch      int     `json:"batch"`
	Workers    int     `json:"workers"`
	Partitions int     `json:"partitions"`
	Messages   int64   `json:"messages"`
	Requests   int64   `json:"requests"`
	Seconds    float64 `json:"seconds"`
	Rate       float64 `json:"msgPerSec"`
	P50ms      float64 `json:"p50Ms"`
	P99ms      float64 `json:"p99Ms"`
	Errors     int64   `json:"errors"`
	FirstError string  `json:"firstError,omitempty"`
}

func (r result) line() string {
	workers := "producers"
	batch := "batch"
	if r.Run == "popack" {
		workers = "consumers"
		batch = "popbatch"
	}
	return fmt.Sprintf("%s %s=%d %s=%d: %.0f msg/s (p50 %s p99 %s, errors %d)",
		r.Run, batch, r.Batch, workers, r.Workers, r.Rate,
		fmtMs(r.P50ms), fmtMs(r.P99ms), r.Errors)
}

func fmtMs(ms float64) string {
	switch {
	case ms >= 100:
		return fmt.Sprintf("%.0fms", ms)
	case ms >= 10:
		return fmt.Sprintf("%.1fms", ms)
	default:
		return fmt.Sprintf("%.2fms", ms)
	}
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.StringVar(&cfg.baseURL, "url", "http://127.0.0.1:6632", "base URL of the comb server")
	fs.StringVar(&cfg.mode, "mode", "push", "push, popack or all")
	fs.IntVar(&cfg.batch, "batch", 1, "items per push request")
	fs.IntVar(&cfg.producers, "producers", 50, "concurrent producers")
	fs.DurationVar(&cfg.duration, "duration", 10*time.Second, "length of each measured run")
	fs.IntVar(&cfg.payload, "payload", 100, "approximate payload size in bytes")
	fs.StringVar(&cfg.queue, "queue", "", "queue name (default: a generated unique name)")
	fs.IntVar(&cfg.partitions, "partitions", 1, "spread items over partitions p0..pN-1")
	fs.IntVar(&cfg.consumers, "consumers", 4, "concurrent consumers (popack)")
	fs.IntVar(&cfg.popBatch, "popbatch", 100, "max messages per pop (popack)")
	fs.IntVar(&cfg.prefill, "prefill", 200000, "messages pushed before a popack run")
	fs.BoolVar(&cfg.jsonOut, "json", false, "print a JSON summary instead of text")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	switch cfg.mode {
	case "push", "popack", "all":
	default:
		return cfg, fmt.Errorf("-mode must be push, popack or all, not %q", cfg.mode)
	}
	for name, v := range map[string]int{
		"batch": cfg.batch, "producers": cfg.producers, "partitions": cfg.partitions,
		"consumers": cfg.consumers, "popbatch": cfg.popBatch,
	} {
		if v < 1 {
			return cfg, fmt.Errorf("-%s must be at least 1", name)
		}
	}
	if cfg.prefill < 0 || cfg.payload < 0 {
		return cfg, errors.New("-prefill and -payload must not be negative")
	}
	if cfg.duration <= 0 {
		return cfg, errors.New("-duration must be positive")
	}
	cfg.baseURL = strings.TrimRight(cfg.baseURL, "/")
	return cfg, nil
}

// generator holds what every run shares: the settings, one HTTP client and
// the payload padding.
type generator struct {
	cfg    config
	client *http.Client
	pad    string
}

func newGenerator(cfg config) *generator {
	conns := max(cfg.producers, cfg.consumers) + 8
	transport := &http.Transport{
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	// {"i":N,"pad":""} with a typical N is about 20 bytes.
	padLen := max(cfg.payload-20, 0)
	return &generator{
		cfg:    cfg,
		client: &http.Client{Transport: transport, Timeout: 60 * time.Second},
		pad:    strings.Repeat("x", padLen),
	}
}

func run(ctx context.Context, cfg config) error {
	g := newGenerator(cfg)
	defer g.client.CloseIdleConnections()
	if err := g.checkHealth(ctx); err != nil {
		return err
	}
	base := cfg.queue
	if base == "" {
		base = "loadgen-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	}

	var results []result
	emit := func(r result) {
		results = append(results, r)
		if !cfg.jsonOut {
			fmt.Println(r.line())
			if r.FirstError != "" {
				fmt.Fprintln(os.Stderr, "  first error:", r.FirstError)
			}
		}
	}

	switch cfg.mode {
	case "push":
		emit(g.runPush(ctx, base, cfg.batch))
	case "popack":
		r, err := g.runPopAck(ctx, base)
		if err != nil {
			return err
		}
		emit(r)
	case "all":
		for _, b := range []int{1, 10, 100} {
			if ctx.Err() != nil {
				break
			}
			emit(g.runPush(ctx, fmt.Sprintf("%s-push-b%d", base, b), b))
		}
		if ctx.Err() == nil {
			r, err := g.runPopAck(ctx, base+"-popack")
			if err != nil {
				return err
			}
			emit(r)
		}
		if !cfg.jsonOut {
			printTable(results)
		}
	}

	if cfg.jsonOut {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			URL        string   `json:"url"`
			PayloadLen int      `json:"payloadBytes"`
			Duration   string   `json:"duration"`
			Runs       []result `json:"runs"`
		}{cfg.baseURL, cfg.payload, cfg.duration.String(), results})
	}
	return ctx.Err()
}

func printTable(results []result) {
	fmt.Println()
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tbatch\tworkers\tmessages\tmsg/s\tp50\tp99\terrors\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.0f\t%s\t%s\t%d\t\n",
			r.Run, r.Batch, r.Workers, r.Messages, r.Rate, fmtMs(r.P50ms), fmtMs(r.P99ms), r.Errors)
	}
	tw.Flush()
}

func (g *generator) checkHealth(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.cfg.baseURL+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return fmt.Errorf("server not reachable at %s: %w", g.cfg.baseURL, err)
	}
	drain(resp)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /health: HTTP %d", resp.StatusCode)
	}
	return nil
}

// stats collects one worker's observations; workers merge theirs at the end,
// so nothing is shared while requests are in flight.
type stats struct {
	messages  int64
	requests  int64
	errors    int64
	firstErr  string
	latencies []time.Duration
}

func (s *stats) fail(err error) {
	s.errors++
	if s.firstErr == "" {
		s.firstErr = err.Error()
	}
}

func (s *stats) merge(o *stats) {
	s.messages += o.messages
	s.requests += o.requests
	s.errors += o.errors
	if s.firstErr == "" {
		s.firstErr = o.firstErr
	}
	s.latencies = append(s.latencies, o.latencies...)
}

func (s *stats) result(runName, queue string, batch, workers, partitions int, elapsed time.Duration) result {
	sort.Slice(s.latencies, func(i, j int) bool { return s.latencies[i] < s.latencies[j] })
	secs := elapsed.Seconds()
	r := result{
		Run: runName, Queue: queue, Batch: batch, Workers: workers, Partitions: partitions,
		Messages: s.messages, Requests: s.requests, Seconds: secs,
		P50ms: percentileMs(s.latencies, 0.50), P99ms: percentileMs(s.latencies, 0.99),
		Errors: s.errors, FirstError: s.firstErr,
	}
	if secs > 0 {
		r.Rate = float64(s.messages) / secs
	}
	return r
}

func percentileMs(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted)-1) + 0.5)
	return float64(sorted[i]) / float64(time.Millisecond)
}

// ---- push ----

type pushItem struct {
	Queue         string          `json:"queue"`
	Partition     string          `json:"partition"`
	Payload       json.RawMessage `json:"payload"`
	TransactionID string          `json:"transactionId"`
}

type pushReply struct {
	Status string `json:"status"`
	Error  string `json:"error"`
}

// pushOnce sends one push request with n items and returns how many were
// queued. seq numbers the payloads.
func (g *generator) pushOnce(ctx context.Context, queue string, n int, seq *atomic.Int64) (int, error) {
	items := make([]pushItem, n)
	for k := range items {
		i := seq.Add(1) - 1
		items[k] = pushItem{
			Queue:         queue,
			Partition:     "p" + strconv.FormatInt(i%int64(g.cfg.partitions), 10),
			Payload:       json.RawMessage(`{"i":` + strconv.FormatInt(i, 10) + `,"pad":"` + g.pad + `"}`),
			TransactionID: uuid.Must(uuid.NewV7()).String(),
		}
	}
	body, err := json.Marshal(struct {
		Items []pushItem `json:"items"`
	}{items})
	if err != nil {
		return 0, err
	}
	status, data, err := g.do(ctx, http.MethodPost, "/api/v1/push", body)
	if err != nil {
		return 0, err
	}
	if status != http.StatusCreated {
		return 0, fmt.Errorf("push: HTTP %d: %s", status, snippet(data))
	}
	var replies []pushReply
	if err := json.Unmarshal(data, &replies); err != nil {
		return 0, fmt.Errorf("push: bad reply: %v: %s", err, snippet(data))
	}
	if len(replies) != n {
		return 0, fmt.Errorf("push: %d items sent, %d replies", n, len(replies))
	}
	queued := 0
	for _, r := range replies {
		if r.Status == "queued" {
			queued++
		} else if err == nil {
			err = fmt.Errorf("push: item status %q %s", r.Status, r.Error)
		}
	}
	return queued, err
}

// runPush pushes with cfg.producers workers for cfg.duration.
func (g *generator) runPush(ctx context.Context, queue string, batch int) result {
	var (
		seq   atomic.Int64
		mu    sync.Mutex
		total stats
		wg    sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(g.cfg.duration)
	for range g.cfg.producers {
		wg.Go(func() {
			var s stats
			for ctx.Err() == nil && time.Now().Before(deadline) {
				t0 := time.Now()
				queued, err := g.pushOnce(ctx, queue, batch, &seq)
				if ctx.Err() != nil {
					break // interrupted; not a server error
				}
				s.requests++
				s.latencies = append(s.latencies, time.Since(t0))
				s.messages += int64(queued)
				if err != nil {
					s.fail(err)
				}
			}
			mu.Lock()
			total.merge(&s)
			mu.Unlock()
		})
	}
	wg.Wait()
	return total.result("push", queue, batch, g.cfg.producers, g.cfg.partitions, time.Since(start))
}

// prefill pushes n messages at batch 100 with cfg.producers workers and
// returns how many were queued.
func (g *generator) prefill(ctx context.Context, queue string, n int) (int64, error) {
	const batch = 100
	var (
		remaining atomic.Int64
		queued    atomic.Int64
		seq       atomic.Int64
		errMu     sync.Mutex
		firstErr  error
		wg        sync.WaitGroup
	)
	remaining.Store(int64(n))
	for range g.cfg.producers {
		wg.Go(func() {
			for ctx.Err() == nil {
				left := remaining.Add(-batch)
				take := batch
				if left < 0 {
					take += int(left)
				}
				if take <= 0 {
					return
				}
				q, err := g.pushOnce(ctx, queue, take, &seq)
				queued.Add(int64(q))
				if err != nil && ctx.Err() == nil {
					errMu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					errMu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return queued.Load(), err
	}
	return queued.Load(), firstErr
}

// ---- pop + ack ----

type popReply struct {
	Messages []struct {
		TransactionID string `json:"transactionId"`
		PartitionID   string `json:"partitionId"`
		LeaseID       string `json:"leaseId"`
	} `json:"messages"`
}

type ackItem struct {
	TransactionID string `json:"transactionId"`
	PartitionID   string `json:"partitionId"`
	LeaseID       string `json:"leaseId,omitempty"`
	Status        string `json:"status"`
}

type ackReply struct {
	Success bool   `json:"success"`
	Error   string `json:"error"`
}

// popAckOnce pops one batch and acks it; it returns how many messages were
// acknowledged (0 on an empty pop). popCtx bounds only the pop, so ending a
// run frees parked long-polls without abandoning an ack half way.
func (g *generator) popAckOnce(ctx, popCtx context.Context, popPath string) (int, error) {
	status, data, err := g.do(popCtx, http.MethodGet, popPath, nil)
	if err != nil {
		return 0, err
	}
	switch status {
	case http.StatusNoContent:
		return 0, nil
	case http.StatusOK:
	default:
		return 0, fmt.Errorf("pop: HTTP %d: %s", status, snippet(data))
	}
	var pop popReply
	if err := json.Unmarshal(data, &pop); err != nil {
		return 0, fmt.Errorf("pop: bad reply: %v: %s", err, snippet(data))
	}
	if len(pop.Messages) == 0 {
		return 0, nil
	}
	acks := make([]ackItem, len(pop.Messages))
	for i, m := range pop.Messages {
		acks[i] = ackItem{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: m.LeaseID, Status: "completed"}
	}
	body, err := json.Marshal(struct {
		Acknowledgments []ackItem `json:"acknowledgments"`
		ConsumerGroup   *string   `json:"consumerGroup"`
	}{Acknowledgments: acks})
	if err != nil {
		return 0, err
	}
	status, data, err = g.do(ctx, http.MethodPost, "/api/v1/ack/batch", body)
	if err != nil {
		return 0, err
	}
	if status != http.StatusOK {
		return 0, fmt.Errorf("ack: HTTP %d: %s", status, snippet(data))
	}
	var replies []ackReply
	if err := json.Unmarshal(data, &replies); err != nil {
		return 0, fmt.Errorf("ack: bad reply: %v: %s", err, snippet(data))
	}
	if len(replies) != len(acks) {
		return 0, fmt.Errorf("ack: %d items sent, %d replies", len(acks), len(replies))
	}
	acked := 0
	for _, r := range replies {
		if r.Success {
			acked++
		} else if err == nil {
			err = fmt.Errorf("ack: item failed: %s", r.Error)
		}
	}
	return acked, err
}

// runPopAck prefills the queue and measures how fast cfg.consumers drain it.
// The run ends when everything prefilled is acknowledged or cfg.duration
// has passed, whichever comes first.
func (g *generator) runPopAck(ctx context.Context, queue string) (result, error) {
	if !g.cfg.jsonOut {
		fmt.Fprintf(os.Stderr, "prefilling %d messages into %s ...\n", g.cfg.prefill, queue)
	}
	t0 := time.Now()
	target, err := g.prefill(ctx, queue, g.cfg.prefill)
	if ctx.Err() != nil {
		return result{}, ctx.Err()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "prefill: %d queued, first error: %v\n", target, err)
	}
	if !g.cfg.jsonOut {
		el := time.Since(t0)
		fmt.Fprintf(os.Stderr, "prefilled %d in %s (%.0f msg/s)\n", target, el.Round(time.Millisecond), float64(target)/el.Seconds())
	}

	if target == 0 {
		return result{}, errors.New("prefill queued nothing; cannot measure a drain")
	}
	popPath := "/api/v1/pop/queue/" + url.PathEscape(queue) + "?" + url.Values{
		"batch":   {strconv.Itoa(g.cfg.popBatch)},
		"wait":    {"true"},
		"timeout": {"1000"},
	}.Encode()

	// The run stops at the deadline or once everything prefilled is
	// acknowledged; either way parked pops are cancelled so that idle
	// long-poll time is not measured.
	start := time.Now()
	runCtx, stopRun := context.WithDeadline(ctx, start.Add(g.cfg.duration))
	defer stopRun()
	var (
		acked    atomic.Int64
		finished atomic.Int64 // ns since start when the last message was acked
		mu       sync.Mutex
		total    stats
		wg       sync.WaitGroup
	)
	for range g.cfg.consumers {
		wg.Go(func() {
			var s stats
			for runCtx.Err() == nil {
				t0 := time.Now()
				n, err := g.popAckOnce(ctx, runCtx, popPath)
				if n == 0 && runCtx.Err() != nil {
					break // run over or interrupted; not a server error
				}
				s.requests++
				if n > 0 {
					s.latencies = append(s.latencies, time.Since(t0))
					s.messages += int64(n)
					if acked.Add(int64(n)) >= target {
						finished.CompareAndSwap(0, int64(time.Since(start)))
						stopRun()
					}
				}
				if err != nil {
					s.fail(err)
				}
			}
			mu.Lock()
			total.merge(&s)
			mu.Unlock()
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return result{}, ctx.Err()
	}
	elapsed := time.Duration(finished.Load())
	if elapsed == 0 {
		elapsed = time.Since(start)
	}
	return total.result("popack", queue, g.cfg.popBatch, g.cfg.consumers, g.cfg.partitions, elapsed), nil
}

// ---- HTTP ----

// do sends a request and returns the status and the whole body.
func (g *generator) do(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, g.cfg.baseURL+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := g.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, nil, err
	}
	return resp.StatusCode, data, nil
}

func drain(resp *http.Response) {
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

func snippet(b []byte) string {
	const limit = 200
	s := strings.TrimSpace(string(b))
	if len(s) > limit {
		s = s[:limit] + "…"
	}
	return s
}
