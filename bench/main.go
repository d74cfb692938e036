// Command bench runs comb and an embedded NATS JetStream server side by side
// on this machine, drives both with the same payload and concurrency, and
// prints one table of rates and ratios.
//
// comb runs as a separate `comb serve` process built from the repository,
// so the HTTP path is measured as clients see it; JetStream runs embedded in
// this process, once with its default flush policy and once with
// sync_always, which fsyncs every write the way comb does every commit.
//
// A real Queen (the C++ broker on PostgreSQL whose HTTP API comb serves)
// runs beside them from the kit at -queen, on its own PostgreSQL 15 with
// durable defaults, driven by the same HTTP client code as comb.
//
// comb and Queen are driven by Go's net/http client by default, as Queen's
// Go SDK drives them. The lean HTTP/1.1 client (-client lean, leanhttp.go:
// one persistent connection per worker, one Write per request) spends less
// CPU per request, so on a small machine a row measures more of the server
// and less of the client. Each HTTP row prints the server's CPU per message
// (read from /proc: comb's process; Queen's process plus every PostgreSQL
// process) and this process's, to show which one a rate is bound by.
// JetStream runs inside this process, so its CPU cannot be told apart from
// its client's.
//
// With -floor, each row also runs a floor: this binary started again as a
// server of the push, pop and ack routes that stores nothing (floor.go),
// to show what this machine allows an HTTP server at all. The nethttp
// floor is Go's net/http server configured as `comb serve` configures it;
// the raw floor speaks HTTP/1.1 itself over each connection, so the two
// differ by what net/http costs. Each floor is driven as comb is, and its
// CPU per message read from /proc as comb's is.
//
//	cd bench && go run . -duration 5s -queen /path/to/shared/queen
//	cd bench && go run . -only push1,push10,push100 -floor nethttp,raw -queen ""
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

type config struct {
	repo       string
	combBin    string
	duration   time.Duration
	conns      int
	partitions int
	consumers  int
	popBatch   int
	prefill    int
	groups     int
	fanPrefill int
	only       string
	pprof      string
	keep       bool
	noJS       bool
	client     string
	queenKit   string
	floors     []string
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == floorFlag {
		os.Exit(floorMain(os.Args[2:]))
	}
	var cfg config
	flag.StringVar(&cfg.repo, "repo", "..", "comb repository to build `comb serve` from")
	flag.StringVar(&cfg.combBin, "comb", "", "use this comb binary instead of building one")
	flag.DurationVar(&cfg.duration, "duration", 5*time.Second, "length of each push run and the longest a drain may take")
	flag.IntVar(&cfg.conns, "conns", 50, "producer connections in push runs")
	flag.IntVar(&cfg.partitions, "partitions", 10, "partitions (subjects) producers spread over")
	flag.IntVar(&cfg.consumers, "consumers", 8, "consumers of one group in the pop+ack run")
	flag.IntVar(&cfg.popBatch, "popbatch", 100, "messages per pop / fetch")
	flag.IntVar(&cfg.prefill, "prefill", 100000, "messages stored before the pop+ack run")
	flag.IntVar(&cfg.groups, "groups", 10, "consumer groups in the fan-out run")
	flag.IntVar(&cfg.fanPrefill, "fanout-prefill", 20000, "messages stored before the fan-out run (each group reads them all)")
	flag.StringVar(&cfg.only, "only", "", "comma-separated rows to run (push1,push10,push100,popack,fanout); empty runs all")
	flag.StringVar(&cfg.pprof, "pprof", "", "run comb serve with --pprof on this loopback address, to profile it during a row")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the data directories")
	flag.BoolVar(&cfg.noJS, "comb-only", false, "run comb only, to compare builds of comb with each other (prints no JetStream ratios)")
	flag.StringVar(&cfg.client, "client", "std", "HTTP client driving comb and Queen: std (Go's net/http, as Queen's Go SDK) "+
		"or lean (one connection per worker, one Write per request: less client CPU per request)")
	flag.StringVar(&cfg.queenKit, "queen", "../../shared/queen", "Queen kit (run.sh) to run real Queen from; empty skips Queen")
	floors := flag.String("floor", "", "comma-separated floor servers to run beside comb in every row ("+
		strings.Join(floorModes(), ", ")+"): this binary serving the routes without storing anything")
	flag.Parse()
	if *floors != "" {
		for _, m := range strings.Split(*floors, ",") {
			if m = strings.TrimSpace(m); !slices.Contains(floorModes(), m) {
				fmt.Fprintf(os.Stderr, "bench: -floor %q: want %s\n", m, strings.Join(floorModes(), " or "))
				os.Exit(2)
			}
			cfg.floors = append(cfg.floors, m)
		}
	}
	if cfg.client != "lean" && cfg.client != "std" {
		fmt.Fprintf(os.Stderr, "bench: -client %q: want lean or std\n", cfg.client)
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// row is one shape measured on every system.
type row struct {
	key   string
	label string
	comb  func(ctx context.Context, c *combServer) (float64, error)
	js    func(ctx context.Context, j *jsServer) (float64, error)
}

func run(ctx context.Context, cfg config) error {
	dir, err := os.MkdirTemp("", "comb-bench-")
	if err != nil {
		return err
	}
	if !cfg.keep {
		defer os.RemoveAll(dir)
	}
	bin := cfg.combBin
	if bin == "" {
		bin = filepath.Join(dir, "comb")
		fmt.Fprintln(os.Stderr, "building comb from", cfg.repo)
		if err := buildComb(ctx, cfg.repo, bin); err != nil {
			return err
		}
	}
	pl := newPayloads()
	fmt.Fprintf(os.Stderr, "payload %d bytes, %d conns, %d partitions, %s per run\n", len(pl.at(0)), cfg.conns, cfg.partitions, cfg.duration)

	push := func(batch int) row {
		return row{
			key:   "push" + strconv.Itoa(batch),
			label: fmt.Sprintf("push batch %d, %d conns, %d partitions", batch, cfg.conns, cfg.partitions),
			comb: func(ctx context.Context, c *combServer) (float64, error) {
				return c.push(ctx, cfg, pl, "orders", batch)
			},
			js: func(ctx context.Context, j *jsServer) (float64, error) {
				return j.push(ctx, cfg, pl, batch)
			},
		}
	}
	rows := []row{
		push(1), push(10), push(100),
		{
			key:   "popack",
			label: fmt.Sprintf("pop+ack batch %d, %d consumers of 1 group, %d partitions", cfg.popBatch, cfg.consumers, cfg.consumers),
			comb: func(ctx context.Context, c *combServer) (float64, error) {
				return c.popAck(ctx, cfg, pl, cfg.consumers, cfg.consumers, 1, cfg.prefill)
			},
			js: func(ctx context.Context, j *jsServer) (float64, error) {
				return j.fetchAck(ctx, cfg, pl, cfg.consumers, cfg.consumers, 1, cfg.prefill)
			},
		},
		{
			key:   "fanout",
			label: fmt.Sprintf("fan-out: %d groups x 1 consumer, pop+ack batch %d, %d partitions", cfg.groups, cfg.popBatch, cfg.consumers),
			comb: func(ctx context.Context, c *combServer) (float64, error) {
				return c.popAck(ctx, cfg, pl, cfg.consumers, 1, cfg.groups, cfg.fanPrefill)
			},
			js: func(ctx context.Context, j *jsServer) (float64, error) {
				return j.fetchAck(ctx, cfg, pl, cfg.consumers, 1, cfg.groups, cfg.fanPrefill)
			},
		},
	}
	if cfg.only != "" {
		want := map[string]bool{}
		for _, k := range strings.Split(cfg.only, ",") {
			want[strings.TrimSpace(k)] = true
		}
		kept := rows[:0]
		for _, r := range rows {
			if want[r.key] {
				kept = append(kept, r)
			}
		}
		rows = kept
	}

	type outcome struct {
		comb, jsDefault, jsSync, queen float64
		combCPU, queenCPU              float64 // server µs CPU per message
		mem, queenMem                  memStats
		floors                         []floorOutcome // in the order of cfg.floors
	}
	withQueen := cfg.queenKit != ""
	if withQueen {
		if _, err := os.Stat(filepath.Join(cfg.queenKit, "run.sh")); err != nil {
			fmt.Fprintf(os.Stderr, "no Queen kit at %s (-queen): running without Queen\n", cfg.queenKit)
			withQueen = false
		}
	}
	results := make([]outcome, len(rows))
	for i, r := range rows {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var o outcome
		// Every system gets a fresh store for every row, so no run pays for
		// the previous one's backlog.
		c, err := startComb(ctx, bin, filepath.Join(dir, fmt.Sprintf("comb-%d", i)), cfg.pprof, cfg.client)
		if err != nil {
			return err
		}
		o.comb, err = r.comb(ctx, c)
		o.mem, o.combCPU = c.stop(), c.cpuPerMsg
		if err != nil {
			return fmt.Errorf("comb %s: %w", r.label, err)
		}
		fmt.Fprintf(os.Stderr, "%-60s comb        %9.0f msg/s\n", r.label, o.comb)
		for _, mode := range cfg.floors {
			f, err := startFloor(ctx, mode, filepath.Join(dir, fmt.Sprintf("floor-%s-%d", mode, i)), cfg.client)
			if err != nil {
				return err
			}
			rate, err := r.comb(ctx, f)
			f.stop()
			if err != nil {
				return fmt.Errorf("%s %s: %w", f.name, r.label, err)
			}
			o.floors = append(o.floors, floorOutcome{rate: rate, cpu: f.cpuPerMsg})
			fmt.Fprintf(os.Stderr, "%-60s %-11s %9.0f msg/s\n", r.label, f.name, rate)
		}
		if withQueen {
			q, err := startQueen(ctx, cfg.queenKit, filepath.Join(dir, fmt.Sprintf("queen-%d", i)), cfg.client)
			if err != nil {
				return err
			}
			o.queen, err = r.comb(ctx, q)
			o.queenMem, o.queenCPU = q.stop(), q.cpuPerMsg
			if err != nil {
				return fmt.Errorf("queen %s: %w", r.label, err)
			}
			fmt.Fprintf(os.Stderr, "%-60s queen       %9.0f msg/s\n", r.label, o.queen)
		}
		for _, sync := range []bool{false, true} {
			if cfg.noJS {
				break
			}
			j, err := startJetStream(filepath.Join(dir, fmt.Sprintf("js-%d-%v", i, sync)), sync)
			if err != nil {
				return err
			}
			rate, err := r.js(ctx, j)
			j.stop()
			if err != nil {
				return fmt.Errorf("jetstream %s: %w", r.label, err)
			}
			name := "js default"
			if sync {
				o.jsSync, name = rate, "js fsync"
			} else {
				o.jsDefault = rate
			}
			fmt.Fprintf(os.Stderr, "%-60s %-11s %9.0f msg/s\n", r.label, name, rate)
		}
		results[i] = o
	}

	fmt.Printf("\ncomb vs NATS JetStream and Queen, same machine, same run; %d-byte JSON payload; %s per run\n\n", len(pl.at(0)), cfg.duration)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	var floorHead strings.Builder
	for _, m := range cfg.floors {
		fmt.Fprintf(&floorHead, "floor %s msg/s\tfloor %s CPU µs/msg\t", m, m)
	}
	fmt.Fprintln(tw, "shape\tcomb msg/s\tJS default msg/s\tcomb/JS default\tJS fsync msg/s\tcomb/JS fsync\tQueen msg/s\tcomb/Queen\t"+
		"comb CPU µs/msg\tQueen+PG CPU µs/msg\tcomb RSS idle/peak MB\tQueen+PG idle/peak MB\tcomb disk B/msg\t"+floorHead.String())
	for i, r := range rows {
		o := results[i]
		disk := "-"
		if o.mem.bytesPerMsg > 0 {
			disk = fmt.Sprintf("%.0f", o.mem.bytesPerMsg)
		}
		js := []string{"-", "-", "-", "-"}
		if !cfg.noJS {
			js = []string{fmt.Sprintf("%.0f", o.jsDefault), fmt.Sprintf("%.2fx", ratio(o.comb, o.jsDefault)),
				fmt.Sprintf("%.0f", o.jsSync), fmt.Sprintf("%.2fx", ratio(o.comb, o.jsSync))}
		}
		qn := []string{"-", "-", "-", "-"}
		if withQueen {
			qn = []string{fmt.Sprintf("%.0f", o.queen), fmt.Sprintf("%.2fx", ratio(o.comb, o.queen)),
				fmt.Sprintf("%.0f", o.queenCPU), fmt.Sprintf("%.0f / %.0f", o.queenMem.idleMB, o.queenMem.peakMB)}
		}
		var fl strings.Builder
		for _, f := range o.floors {
			fmt.Fprintf(&fl, "%.0f\t%.1f\t", f.rate, f.cpu)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t%.0f\t%s\t%.1f / %.1f\t%s\t%s\t%s\n", r.label, o.comb, js[0], js[1], js[2], js[3],
			qn[0], qn[1], o.combCPU, qn[2], o.mem.idleMB, o.mem.peakMB, qn[3], disk, fl.String())
	}
	tw.Flush()
	fmt.Println("\nQueen: the kit's unmodified Queen on PostgreSQL 15 with durable defaults; its CPU is Queen's process plus every PostgreSQL")
	fmt.Println("process, its memory Queen's RSS plus PostgreSQL's PSS (its processes share their buffers). JetStream's CPU is not")
	fmt.Println("shown: it runs inside the load generator.")
	fmt.Println("\nJS default: async publish, fsync every 2 min (JetStream's default); JS fsync: sync_always.")
	fmt.Println("comb answers a push or an ack only after its commit is fsynced (synchronous=FULL); a pop that only leases is not synced.")
	fmt.Printf("comb and Queen are driven by the %s HTTP client (-client).\n", cfg.client)
	if len(cfg.floors) > 0 {
		fmt.Println("\nfloor: this binary serving the same routes, storing nothing: it decodes each body and answers comb's status with a")
		fmt.Println("reply of comb's shape; nethttp is Go's net/http server set up as comb serve sets it, raw hand-parsed HTTP/1.1 on")
		fmt.Println("each connection. Driven by the same client as comb, its CPU read from /proc as comb's is.")
	}
	return nil
}

// floorOutcome is what a row measured of one floor.
type floorOutcome struct {
	rate, cpu float64 // msg/s, server µs CPU per message
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// payloads are the message bodies both systems carry: one JSON order of
// about 200 bytes per sequence number, built ahead of time so that building
// them costs neither side anything while measured.
type payloads struct{ bodies [][]byte }

func newPayloads() *payloads {
	const n = 4096
	p := &payloads{bodies: make([][]byte, n)}
	for i := range n {
		p.bodies[i] = fmt.Appendf(nil,
			`{"orderId":"ord-%08d","customerId":"cus-%06d","items":[{"sku":"SKU-%05d","qty":%d,"price":%d.99},{"sku":"SKU-%05d","qty":1,"price":4.50}],"currency":"EUR","total":%d.49,"status":"placed","ts":1764547200%03d}`,
			i, i%99991, i%50000, 1+i%5, 10+i%90, (i*7)%50000, 15+i%90, i%1000)
	}
	return p
}

func (p *payloads) at(i int64) []byte { return p.bodies[i%int64(len(p.bodies))] }
