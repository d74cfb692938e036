// Command hostile runs hostile inputs against a real `comb serve` process
// and reports, per case, what the server answered, its peak resident
// memory (VmHWM from /proc/PID/status, so Linux only) and the latency of a
// well-behaved client pushing one small message at a time meanwhile.
//
// Every case gets a fresh server on a fresh database, so each peak is the
// case's own. A baseline case with no hostile input runs first; compare
// the others' figures with it, taken in the same run.
//
// Example:
//
//	go build -o /tmp/comb . && go run ./scripts/hostile -comb /tmp/comb
//	go run ./scripts/hostile -comb /tmp/comb -cases items-1M,body-100MB-x4
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/comb-broker/comb/broker"
)

type config struct {
	comb     string
	dir      string
	cases    string
	hold     time.Duration // how long a trickle case waits for the server to cut it
	bodyMB   int           // size of the oversized bodies
	extraArg []string
}

// outcome is what one case observed.
type outcome struct {
	name     string
	status   string // the hostile requests' answers
	detail   string
	took     time.Duration
	hwmKB    int64
	lat      []time.Duration // the small pusher's round trips
	latErrs  int
	firstErr string
}

// hostileCase runs its input against the server at base and describes the answer.
type hostileCase struct {
	name string
	what string
	run  func(ctx context.Context, cfg *config, base string) (status, detail string)
	// serveArgs are the case's own arguments for comb serve, after
	// -serve-args.
	serveArgs []string
}

func main() {
	var cfg config
	fs := flag.NewFlagSet("hostile", flag.ExitOnError)
	fs.StringVar(&cfg.comb, "comb", "comb", "path of the comb binary to run")
	fs.StringVar(&cfg.dir, "dir", "", "directory for the databases (default: a temporary one, removed after)")
	fs.StringVar(&cfg.cases, "cases", "all", "comma-separated case names, or all; -list shows them")
	fs.DurationVar(&cfg.hold, "hold", 40*time.Second, "longest a trickle case waits for the server to cut it")
	fs.IntVar(&cfg.bodyMB, "body-mb", 100, "size in MB of the oversized bodies")
	list := fs.Bool("list", false, "list the cases and exit")
	extra := fs.String("serve-args", "", "extra arguments for comb serve, space-separated")
	fs.Parse(os.Args[1:])
	if *extra != "" {
		cfg.extraArg = strings.Fields(*extra)
	}
	all := cases()
	if *list {
		for _, c := range all {
			fmt.Printf("%-18s %s\n", c.name, c.what)
		}
		return
	}
	if cfg.dir == "" {
		d, err := os.MkdirTemp("", "comb-hostile-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "hostile:", err)
			os.Exit(1)
		}
		defer os.RemoveAll(d)
		cfg.dir = d
	}
	var run []hostileCase
	for _, c := range all {
		if cfg.cases == "all" || slices.Contains(strings.Split(cfg.cases, ","), c.name) {
			run = append(run, c)
		}
	}
	fmt.Printf("%-18s %-34s %10s %9s %9s %9s %6s  %s\n", "case", "status", "took", "peakRSS", "p50", "p99", "errs", "detail")
	for _, c := range run {
		o, err := runCase(&cfg, c)
		if err != nil {
			fmt.Printf("%-18s error: %v\n", c.name, err)
			continue
		}
		p50, p99 := percentile(o.lat, 50), percentile(o.lat, 99)
		fmt.Printf("%-18s %-34s %10s %8.1fM %9s %9s %6d  %s\n", o.name, o.status, o.took.Round(time.Millisecond),
			float64(o.hwmKB)/1024, fmtDur(p50), fmtDur(p99), o.latErrs, o.detail)
		if o.firstErr != "" {
			fmt.Printf("%-18s   small pusher's first error: %s\n", "", o.firstErr)
		}
	}
}

func fmtDur(d time.Duration) string {
	if d >= 100*time.Millisecond {
		return d.Round(time.Millisecond).String()
	}
	return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
}

func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

// server is one running `comb serve`.
type server struct {
	cmd  *exec.Cmd
	base string
	done chan struct{}
}

var servingAddr = regexp.MustCompile(`msg="comb serving" addr=(\S+)`)

func startServer(cfg *config, name string, extra []string) (*server, error) {
	db := filepath.Join(cfg.dir, name+".db")
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--db", db, "--retention-interval", "0"}, cfg.extraArg...)
	args = append(args, extra...)
	cmd := exec.Command(cfg.comb, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.comb, err)
	}
	s := &server{cmd: cmd, done: make(chan struct{})}
	addr := make(chan string, 1)
	logf, _ := os.Create(filepath.Join(cfg.dir, name+".log"))
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if logf != nil {
				fmt.Fprintln(logf, line)
			}
			if m := servingAddr.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
		if logf != nil {
			logf.Close()
		}
	}()
	select {
	case a := <-addr:
		s.base = "http://" + a
		return s, nil
	case <-time.After(20 * time.Second):
		s.stop()
		return nil, errors.New("server did not start within 20 s")
	}
}

func (s *server) stop() {
	s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(15 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd.Wait()
}

// hwm reads the server's peak resident set size in kB.
func (s *server) hwm() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return -1
}

func runCase(cfg *config, c hostileCase) (*outcome, error) {
	s, err := startServer(cfg, c.name, c.serveArgs)
	if err != nil {
		return nil, err
	}
	defer s.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	o := &outcome{name: c.name}
	// The small pusher: what every other client sees while the case runs.
	pctx, pstop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		o.lat, o.latErrs, o.firstErr = smallPusher(pctx, s.base)
	}()
	time.Sleep(300 * time.Millisecond) // a few round trips before the case starts
	start := time.Now()
	o.status, o.detail = c.run(ctx, cfg, s.base)
	o.took = time.Since(start)
	time.Sleep(300 * time.Millisecond)
	pstop()
	wg.Wait()
	o.hwmKB = s.hwm()
	return o, nil
}

// smallPusher pushes one 50-byte message at a time until ctx ends.
func smallPusher(ctx context.Context, base string) (lat []time.Duration, errs int, first string) {
	client := &http.Client{Timeout: 60 * time.Second}
	body := []byte(`{"items":[{"queue":"small","payload":{"n":1,"pad":"0123456789012345678901234567890123"}}]}`)
	for ctx.Err() == nil {
		t0 := time.Now()
		resp, err := client.Post(base+"/api/v1/push", "application/json", bytes.NewReader(body))
		d := time.Since(t0)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("HTTP %d", resp.StatusCode)
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			errs++
			if first == "" {
				first = err.Error()
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		lat = append(lat, d)
		time.Sleep(5 * time.Millisecond)
	}
	return lat, errs, first
}

func cases() []hostileCase {
	return []hostileCase{
		{"baseline", "no hostile input: the small pusher alone", func(ctx context.Context, cfg *config, base string) (string, string) {
			time.Sleep(3 * time.Second)
			return "-", ""
		}, nil},
		{"items-1M", "one push of 1,000,000 tiny items (~28 MB)", func(ctx context.Context, cfg *config, base string) (string, string) {
			var b bytes.Buffer
			b.WriteString(`{"items":[`)
			for i := range 1_000_000 {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(`{"queue":"h","payload":{}}`)
			}
			b.WriteString(`]}`)
			st, body := post(ctx, base+"/api/v1/push", b.Bytes())
			return st, fmt.Sprintf("%d MB body; %s", b.Len()>>20, body)
		}, nil},
		{"items-max-x4", "four pushes at once of 10,000 items of 1 KiB", func(ctx context.Context, cfg *config, base string) (string, string) {
			pad := strings.Repeat("x", 1000)
			var b bytes.Buffer
			b.WriteString(`{"items":[`)
			for i := range 10_000 {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `{"queue":"big","partition":"p%d","payload":{"s":%q}}`, i%4, pad)
			}
			b.WriteString(`]}`)
			return parallel(4, func() (string, string) {
				st, body := post(ctx, base+"/api/v1/push", b.Bytes())
				return st, body
			})
		}, nil},
		{"body-100MB-x4", "four pushes at once declaring a 100 MB Content-Length", func(ctx context.Context, cfg *config, base string) (string, string) {
			return parallel(4, func() (string, string) { return rawBody(ctx, base, int64(cfg.bodyMB)<<20, false, 0) })
		}, nil},
		{"chunked-100MB-x4", "four chunked pushes at once of 100 MB each", func(ctx context.Context, cfg *config, base string) (string, string) {
			return parallel(4, func() (string, string) { return rawBody(ctx, base, int64(cfg.bodyMB)<<20, true, 0) })
		}, nil},
		{"valid-60MB-x4", "four valid pushes at once of 60 items of 1 MB", func(ctx context.Context, cfg *config, base string) (string, string) {
			pad := strings.Repeat("y", 1<<20)
			var b bytes.Buffer
			b.WriteString(`{"items":[`)
			for i := range 60 {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `{"queue":"huge","payload":%q}`, pad)
			}
			b.WriteString(`]}`)
			return parallel(4, func() (string, string) { return post(ctx, base+"/api/v1/push", b.Bytes()) })
		}, nil},
		{"long-names", "1 MB queue name, partition name, transactionId, consumer group; then a /metrics scrape", func(ctx context.Context, cfg *config, base string) (string, string) {
			long := strings.Repeat("n", 1<<20)
			var sts []string
			for _, item := range []string{
				fmt.Sprintf(`{"queue":%q,"payload":1}`, long),
				fmt.Sprintf(`{"queue":"q","partition":%q,"payload":1}`, long),
				fmt.Sprintf(`{"queue":"q","transactionId":%q,"payload":1}`, long),
			} {
				st, _ := post(ctx, base+"/api/v1/push", []byte(`{"items":[`+item+`]}`))
				sts = append(sts, st)
			}
			st, _ := get(ctx, base+"/api/v1/pop/queue/small?consumerGroup="+long+"&wait=false")
			sts = append(sts, st)
			size := int64(-1)
			if resp, err := http.Get(base + "/metrics/prometheus"); err == nil {
				size, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			return strings.Join(sts, ","), fmt.Sprintf("a Prometheus scrape is then %d bytes", size)
		}, nil},
		{"nul-and-junk", "payloads with \\u0000, invalid JSON, a 100,000-deep nesting", func(ctx context.Context, cfg *config, base string) (string, string) {
			var sts []string
			for _, body := range []string{
				`{"items":[{"queue":"q","payload":{"s":"a\u0000b"}}]}`,
				`{"items":[{"queue":"q","payload":hello}]}`,
				`{"items":[{"queue":"q","payload":` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}]}`,
			} {
				st, _ := post(ctx, base+"/api/v1/push", []byte(body))
				sts = append(sts, st)
			}
			return strings.Join(sts, ","), ""
		}, nil},
		{"body-trickle", "a push body of 1 KB sent a byte a second", func(ctx context.Context, cfg *config, base string) (string, string) {
			return rawBody(ctx, base, 1024, false, time.Second, cfg.hold)
		}, nil},
		{"header-trickle", "request headers sent a byte a second", func(ctx context.Context, cfg *config, base string) (string, string) {
			return headerTrickle(ctx, base, cfg.hold)
		}, nil},
		{"big-headers-x200", "200 connections each sending a header line of 1,000,000 bytes, then waiting", func(ctx context.Context, cfg *config, base string) (string, string) {
			return bigHeaders(ctx, base, 200, 1_000_000)
		}, nil},
		{"stream-62MB", "a stream cycle of 99,000 state ops of 600 bytes (62 MB), then a state/get of the whole shard", func(ctx context.Context, cfg *config, base string) (string, string) {
			return streamShard(ctx, base, 99_000, 580)
		}, nil},
		{"stream-ops-1M", "a stream cycle of 1,000,000 state ops (past the bound); a 1 MB state key", func(ctx context.Context, cfg *config, base string) (string, string) {
			qid, st, body := registerQuery(ctx, base)
			if qid == "" {
				return st, body
			}
			st1, body1 := post(ctx, base+"/streams/v1/cycle", cycleBody(qid, 1_000_000, 0))
			st2, body2 := post(ctx, base+"/streams/v1/cycle", []byte(`{"query_id":"`+qid+`","partition_id":"`+hostileShard+
				`","state_ops":[{"type":"upsert","key":"`+strings.Repeat("k", 1<<20)+`","value":{}}]}`))
			return st1 + "," + st2, truncate(body1, 60) + " | " + truncate(body2, 60)
		}, nil},
		{"queues-past-bound", "pushes of 100 items, each item to a queue of its own, until 1,000 queues past the default --max-queues are asked for; then the status, a scrape and the listings", func(ctx context.Context, cfg *config, base string) (string, string) {
			answers := map[string]int{}
			var refusal string
			for p := range broker.DefaultMaxQueues/100 + 10 {
				var b bytes.Buffer
				b.WriteString(`{"items":[`)
				for i := range 100 {
					if i > 0 {
						b.WriteByte(',')
					}
					fmt.Fprintf(&b, `{"queue":"q%04d-%03d","payload":1}`, p, i)
				}
				b.WriteString(`]}`)
				st, body := post(ctx, base+"/api/v1/push", b.Bytes())
				answers[st]++
				if st != "201" && refusal == "" {
					refusal = body
				}
			}
			return fmt.Sprint(answers), refusal + " | " + timedGets(ctx, base, "/api/v1/status", "/metrics/prometheus",
				"/api/v1/status/queues?limit=0", "/api/v1/resources/queues", "/api/v1/consumer-groups")
		}, nil},
		{"groups-past-bound", "pops of one queue, each naming a consumer group of its own, until 1,000 groups past the default --max-groups are asked for (8 at once); then the status, a scrape, the listings and the queue's detail", func(ctx context.Context, cfg *config, base string) (string, string) {
			if st, body := post(ctx, base+"/api/v1/push", []byte(`{"items":[{"queue":"g","payload":1}]}`)); st != "201" {
				return st, body
			}
			var mu sync.Mutex
			answers := map[string]int{}
			var refusal string
			var next atomic.Int64
			const workers = 8
			var wg sync.WaitGroup
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := next.Add(1); i <= broker.DefaultMaxGroups+1000; i = next.Add(1) {
						st, body := get(ctx, fmt.Sprintf("%s/api/v1/pop/queue/g?consumerGroup=g%07d&batch=1&wait=false&autoAck=true", base, i))
						mu.Lock()
						answers[st]++
						if st != "200" && st != "204" && refusal == "" {
							refusal = body
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			return fmt.Sprint(answers), refusal + " | " + timedGets(ctx, base, "/api/v1/status", "/metrics/prometheus",
				"/api/v1/consumer-groups?limit=10", "/api/v1/consumer-groups?limit=10", "/api/v1/resources/queues/g",
				"/api/v1/status/queues?limit=0", "/api/v1/consumer-groups/lagging?limit=10")
		}, nil},
		{"snapshots-and-queries-past-bound", "snapshots of one queue and streaming queries reading it, each until 100 past the default --max-snapshots and --max-stream-queries are asked for (4 at once); then the snapshot listing and the queue's delete", func(ctx context.Context, cfg *config, base string) (string, string) {
			if st, body := post(ctx, base+"/api/v1/push", []byte(`{"items":[{"queue":"s","payload":1}]}`)); st != "201" {
				return st, body
			}
			var mu sync.Mutex
			answers := map[string]int{}
			var refusals []string
			ask := func(n int, req func(i int) (string, string)) {
				var next atomic.Int64
				var wg sync.WaitGroup
				var refusal string
				for range 4 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := next.Add(1); i <= int64(n)+100; i = next.Add(1) {
							st, body := req(int(i))
							mu.Lock()
							answers[st]++
							if st != "200" && st != "201" && refusal == "" {
								refusal = body
							}
							mu.Unlock()
						}
					}()
				}
				wg.Wait()
				refusals = append(refusals, refusal)
			}
			ask(broker.DefaultMaxSnapshots, func(i int) (string, string) {
				return post(ctx, base+"/api/v1/snapshots", fmt.Appendf(nil, `{"name":"s%06d","consumerGroup":"g","queue":"s"}`, i))
			})
			ask(broker.DefaultMaxStreamQueries, func(i int) (string, string) {
				return post(ctx, base+"/streams/v1/queries", fmt.Appendf(nil, `{"name":"q%06d","source_queue":"s","config_hash":"h"}`, i))
			})
			listing := timedGets(ctx, base, "/api/v1/snapshots?limit=10")
			req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, base+"/api/v1/resources/queues/s", nil)
			start := time.Now()
			st, _ := do(req)
			return fmt.Sprint(answers), strings.Join(refusals, " | ") + " | " + listing +
				fmt.Sprintf("; DELETE /api/v1/resources/queues/s %s %v", st, time.Since(start).Round(time.Millisecond))
		}, nil},
		{"forwarders-5000", "5,000 forwarders created, each to an upstream that refuses connections, then 20 s of them retrying, the listing and the status", func(ctx context.Context, cfg *config, base string) (string, string) {
			answers := map[string]int{}
			var refusal string
			for i := range 5000 {
				body := fmt.Sprintf(`{"name":"f%05d","queue":"q%d","upstream":"http://127.0.0.1:9"}`, i, i%10)
				st, b := post(ctx, base+"/api/v1/forwarders", []byte(body))
				answers[st]++
				if st != "201" && refusal == "" {
					refusal = b
				}
			}
			time.Sleep(20 * time.Second)
			return fmt.Sprint(answers), refusal + " | " + timedGets(ctx, base, "/api/v1/forwarders", "/api/v1/status")
		}, nil},
		{"payload-63MB", "one push of one message whose payload is 63 MB of 1,500,000 small objects", func(ctx context.Context, cfg *config, base string) (string, string) {
			return post(ctx, base+"/api/v1/push", smallObjects(`{"items":[{"queue":"h","payload":{"arr":[`, `]}}]}`, 1_500_000))
		}, nil},
		{"binary-63MB", "one push of one message whose payload is a 63 MB string of random bytes in base64 (a photo, say), which does not compress", func(ctx context.Context, cfg *config, base string) (string, string) {
			body := `{"items":[{"queue":"h","payload":"` + base64.StdEncoding.EncodeToString(noise(1, 47<<20)) + `"}]}`
			return post(ctx, base+"/api/v1/push", []byte(body))
		}, nil},
		{"binary-60MB-x4", "four pushes at once of 60 items of 1 MB of random bytes in base64, which do not compress", func(ctx context.Context, cfg *config, base string) (string, string) {
			return parallel(4, func() (string, string) {
				var b bytes.Buffer
				b.WriteString(`{"items":[`)
				for i := range 60 {
					if i > 0 {
						b.WriteByte(',')
					}
					fmt.Fprintf(&b, `{"queue":"huge","payload":%q}`, base64.StdEncoding.EncodeToString(noise(uint64(i), 3<<18)))
				}
				b.WriteString(`]}`)
				return post(ctx, base+"/api/v1/push", b.Bytes())
			})
		}, nil},
		{"trace-63MB", "a trace whose data is 63 MB (past the 1 MiB a trace's body may hold)", func(ctx context.Context, cfg *config, base string) (string, string) {
			resp, err := http.Post(base+"/api/v1/push", "application/json",
				strings.NewReader(`{"items":[{"queue":"t","transactionId":"t1","payload":1}]}`))
			if err != nil {
				return "err", err.Error()
			}
			var pushed []struct {
				PartitionID string `json:"partition_id"`
			}
			err = json.NewDecoder(resp.Body).Decode(&pushed)
			resp.Body.Close()
			if err != nil || len(pushed) != 1 {
				return strconv.Itoa(resp.StatusCode), fmt.Sprintf("push before the trace: %v", err)
			}
			return post(ctx, base+"/api/v1/traces", smallObjects(`{"transactionId":"t1","partitionId":"`+pushed[0].PartitionID+
				`","traceNames":["n"],"data":{"arr":[`, `]}}`, 1_500_000))
		}, nil},
		{"redrive-1M-ids", "a DLQ re-drive naming 1,000,000 message ids (40 MB)", func(ctx context.Context, cfg *config, base string) (string, string) {
			var b bytes.Buffer
			b.WriteString(`{"queue":"h","ids":[`)
			for i := range 1_000_000 {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `"%08x-0000-0000-0000-000000000000"`, i)
			}
			b.WriteString(`]}`)
			return post(ctx, base+"/api/v1/dlq/redrive", b.Bytes())
		}, nil},
		{"pops-4MiB-x100", "200 messages of 1 MB pushed, then 100 pops at once, each for a group of its own and a batch of 100 (4 MiB of payload each)", func(ctx context.Context, cfg *config, base string) (string, string) {
			for p := range 10 {
				var b bytes.Buffer
				b.WriteString(`{"items":[`)
				for i := range 20 {
					if i > 0 {
						b.WriteByte(',')
					}
					fmt.Fprintf(&b, `{"queue":"bq","partition":"p%d","payload":%q}`, i%4, strings.Repeat(string(rune('a'+p)), 1<<20))
				}
				b.WriteString(`]}`)
				if st, body := post(ctx, base+"/api/v1/push", b.Bytes()); st != "201" {
					return st, body
				}
			}
			var n atomic.Int64
			st, detail := parallel(100, func() (string, string) {
				k := n.Add(1)
				st, body := get(ctx, fmt.Sprintf("%s/api/v1/pop/queue/bq?batch=100&partitions=4&wait=false&consumerGroup=g%d", base, k))
				return st, body
			})
			return summarize(st), detail
		}, nil},
		{"lookup-20MB-x30", "one message of 20 MB, then 30 lookups of it at once (GET /api/v1/messages/:partitionId/:transactionId)", func(ctx context.Context, cfg *config, base string) (string, string) {
			resp, err := http.Post(base+"/api/v1/push", "application/json",
				strings.NewReader(`{"items":[{"queue":"lq","transactionId":"big","payload":"`+strings.Repeat("z", 20<<20)+`"}]}`))
			if err != nil {
				return "err", err.Error()
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			m := regexp.MustCompile(`"partition_id":"([^"]+)"`).FindSubmatch(body)
			if m == nil {
				return resp.Status, truncate(string(body), 120)
			}
			st, _ := parallel(30, func() (string, string) { return get(ctx, base+"/api/v1/messages/"+string(m[1])+"/big") })
			return summarize(st), ""
		}, nil},
		{"pops-20MB-x30", "one message of 20 MB, then 30 pops at once, each for a group of its own", func(ctx context.Context, cfg *config, base string) (string, string) {
			if st, body := post(ctx, base+"/api/v1/push", []byte(`{"items":[{"queue":"pq20","payload":"`+strings.Repeat("z", 20<<20)+`"}]}`)); st != "201" {
				return st, body
			}
			var n atomic.Int64
			st, _ := parallel(30, func() (string, string) {
				return get(ctx, fmt.Sprintf("%s/api/v1/pop/queue/pq20?wait=false&consumerGroup=g%d", base, n.Add(1)))
			})
			return summarize(st), ""
		}, nil},
		{"parked-3MB-x300", "300 long-polls parked, each for a group of its own, then one message of 3 MB that each of them is handed", func(ctx context.Context, cfg *config, base string) (string, string) {
			post(ctx, base+"/api/v1/configure", []byte(`{"queue":"pq"}`))
			var n atomic.Int64
			done := make(chan [2]string, 1)
			go func() {
				st, detail := parallel(300, func() (string, string) {
					k := n.Add(1)
					return get(ctx, fmt.Sprintf("%s/api/v1/pop/queue/pq?wait=true&timeout=30000&subscriptionMode=new&consumerGroup=g%d", base, k))
				})
				done <- [2]string{st, detail}
			}()
			time.Sleep(3 * time.Second)
			if st, body := post(ctx, base+"/api/v1/push", []byte(`{"items":[{"queue":"pq","payload":"`+strings.Repeat("y", 3<<20)+`"}]}`)); st != "201" {
				return st, body
			}
			r := <-done
			return summarize(r[0]), ""
		}, nil},
		{"parked-5000", "5,000 connections each parking a long-poll pop, against --max-conns 2000", func(ctx context.Context, cfg *config, base string) (string, string) {
			return parkedFlood(ctx, base, 5000, 5*time.Second)
		}, []string{"--max-conns", "2000"}},
	}
}

// summarize counts the answers of a comma-separated list of statuses.
func summarize(statuses string) string {
	count := map[string]int{}
	for _, st := range strings.Split(statuses, ",") {
		count[st]++
	}
	return fmt.Sprint(count)
}

// noise is n random bytes, the same for the same seed.
func noise(seed uint64, n int) []byte {
	b := make([]byte, n+8)
	rng := rand.New(rand.NewPCG(seed, 2))
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(b[i:], rng.Uint64())
	}
	return b[:n]
}

// smallObjects is prefix, n small JSON objects separated by commas, and
// suffix.
func smallObjects(prefix, suffix string, n int) []byte {
	var b bytes.Buffer
	b.WriteString(prefix)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"k":%d,"v":"xxxxxxxxxxxxxxxxxxxx"}`, i)
	}
	b.WriteString(suffix)
	return b.Bytes()
}

// parkedFlood opens n connections, each sending a pop that waits up to a
// minute, holds them for hold, then closes them; it yields how each was
// answered: "parked" for those still waiting at the end.
func parkedFlood(ctx context.Context, base string, n int, hold time.Duration) (string, string) {
	host := strings.TrimPrefix(base, "http://")
	count := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	conns := make([]net.Conn, 0, n)
	for i := range n {
		c, err := net.Dial("tcp", host)
		if err != nil {
			count["dial error"]++
			continue
		}
		conns = append(conns, c)
		fmt.Fprintf(c, "GET /api/v1/pop/queue/flood?consumerGroup=g%d&wait=true&timeout=60000 HTTP/1.1\r\nHost: %s\r\n\r\n", i, host)
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := "parked"
			select {
			case st = <-statusOf(c):
			case <-time.After(hold):
			case <-ctx.Done():
			}
			mu.Lock()
			count[st]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, c := range conns {
		c.Close()
	}
	return fmt.Sprintf("%d parked", count["parked"]), fmt.Sprintf("%v", count)
}

// hostileShard is the state shard the stream cases write.
const hostileShard = "6f1c2d3e-4b5a-4c6d-8e7f-901a2b3c4d5e"

// registerQuery registers a streaming query and returns its id.
func registerQuery(ctx context.Context, base string) (qid, status, body string) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/streams/v1/queries",
		strings.NewReader(`{"name":"hostile","source_queue":"src","config_hash":"h","reset":false}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", "err", err.Error()
	}
	defer resp.Body.Close()
	var reg struct {
		QueryID string `json:"query_id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&reg); err != nil || reg.QueryID == "" {
		return "", strconv.Itoa(resp.StatusCode), fmt.Sprintf("register: %v", err)
	}
	return reg.QueryID, "", ""
}

// cycleBody is a cycle of n upserts of values padded to pad bytes.
func cycleBody(qid string, n, pad int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"query_id":"` + qid + `","partition_id":"` + hostileShard + `","state_ops":[`)
	p := strings.Repeat("p", pad)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"type":"upsert","key":"k%d","value":{"v":%d,"pad":%q}}`, i, i, p)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// streamShard writes n state rows in one cycle and reads the shard back
// whole; the detail gives both sizes.
func streamShard(ctx context.Context, base string, n, pad int) (string, string) {
	qid, st, body := registerQuery(ctx, base)
	if qid == "" {
		return st, body
	}
	cycle := cycleBody(qid, n, pad)
	st1, body1 := post(ctx, base+"/streams/v1/cycle", cycle)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/streams/v1/state/get",
		strings.NewReader(`{"query_id":"`+qid+`","partition_id":"`+hostileShard+`"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return st1 + ",err", err.Error()
	}
	defer resp.Body.Close()
	got, err := io.Copy(io.Discard, resp.Body)
	return st1 + "," + strconv.Itoa(resp.StatusCode), fmt.Sprintf("cycle of %d MB: %s | state/get %d MB %v",
		len(cycle)>>20, truncate(body1, 50), got>>20, err)
}

// bigHeaders opens n connections, sends on each a request whose one
// header line is size bytes long, unfinished, and waits for the server
// to answer or close each (or for 15 s). The status is what most of
// them got.
func bigHeaders(ctx context.Context, base string, n, size int) (string, string) {
	host := strings.TrimPrefix(base, "http://")
	req := []byte("GET /health HTTP/1.1\r\nHost: " + host + "\r\nX-Big: " + strings.Repeat("h", size))
	got := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = bigHeader(ctx, host, req)
		}()
	}
	wg.Wait()
	count := map[string]int{}
	for _, g := range got {
		count[g]++
	}
	var most string
	for g, c := range count {
		if c > count[most] || (c == count[most] && g < most) {
			most = g
		}
	}
	return most, fmt.Sprintf("%v", count)
}

// statusOf reads the answer to the request being sent on conn and yields
// its status, or "closed" when the connection ends without one.
func statusOf(conn net.Conn) <-chan string {
	status := make(chan string, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			status <- "closed"
			return
		}
		resp.Body.Close()
		status <- strconv.Itoa(resp.StatusCode)
	}()
	return status
}

func bigHeader(ctx context.Context, host string, req []byte) string {
	conn, err := net.Dial("tcp", host)
	if err != nil {
		return "err"
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(15 * time.Second))
	answered := statusOf(conn)
	conn.Write(req) // fails once the server has answered and closed
	select {
	case a := <-answered:
		return a
	case <-ctx.Done():
		return "err"
	}
}

func parallel(n int, f func() (string, string)) (string, string) {
	sts, details := make([]string, n), make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sts[i], details[i] = f()
		}()
	}
	wg.Wait()
	return strings.Join(sts, ","), details[0]
}

func post(ctx context.Context, url string, body []byte) (string, string) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return do(req)
}

func get(ctx context.Context, url string) (string, string) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	return do(req)
}

func do(req *http.Request) (string, string) {
	resp, err := (&http.Client{Timeout: 5 * time.Minute}).Do(req)
	if err != nil {
		return "err", err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return strconv.Itoa(resp.StatusCode), truncate(string(b), 120)
}

// timedGets GETs each path in turn and says what each answered and how
// long it took.
func timedGets(ctx context.Context, base string, paths ...string) string {
	reads := make([]string, len(paths))
	for i, path := range paths {
		start := time.Now()
		st, _ := get(ctx, base+path)
		reads[i] = fmt.Sprintf("%s %s %v", path, st, time.Since(start).Round(time.Millisecond))
	}
	return strings.Join(reads, "; ")
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// rawBody sends a push over a raw connection: a body of size bytes, with
// its Content-Length or chunked, paced a byte per every gap when gap > 0,
// for at most hold (0: no bound). It reports the answer and how much of
// the body the server took before answering or closing.
func rawBody(ctx context.Context, base string, size int64, chunked bool, gap time.Duration, hold ...time.Duration) (string, string) {
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		return "err", err.Error()
	}
	defer conn.Close()
	host := strings.TrimPrefix(base, "http://")
	hdr := "POST /api/v1/push HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\n"
	if chunked {
		hdr += "Transfer-Encoding: chunked\r\n\r\n"
	} else {
		hdr += fmt.Sprintf("Content-Length: %d\r\n\r\n", size)
	}
	if _, err := io.WriteString(conn, hdr); err != nil {
		return "err", err.Error()
	}
	answer := statusOf(conn)
	start := time.Now()
	var deadline <-chan time.Time
	if len(hold) > 0 && hold[0] > 0 {
		deadline = time.After(hold[0])
	}
	prefix := []byte(`{"items":[{"queue":"h","payload":"`)
	chunk := bytes.Repeat([]byte("z"), 64<<10)
	if gap > 0 {
		chunk = chunk[:1]
	}
	var sent int64
	status := ""
	for sent < size && status == "" {
		select {
		case status = <-answer:
			continue
		case <-deadline:
			return "held", fmt.Sprintf("connection still open after %s, %d bytes sent", time.Since(start).Round(time.Second), sent)
		case <-ctx.Done():
			return "err", ctx.Err().Error()
		default:
		}
		p := chunk
		if sent < int64(len(prefix)) { // a valid start, so the answer is about the body's size or pace
			p = prefix[sent:]
			if gap > 0 {
				p = p[:1]
			}
		}
		p = p[:min(int64(len(p)), size-sent)]
		var werr error
		if chunked {
			_, werr = fmt.Fprintf(conn, "%x\r\n%s\r\n", len(p), p)
		} else {
			_, werr = conn.Write(p)
		}
		if werr != nil {
			break
		}
		sent += int64(len(p))
		if gap > 0 {
			time.Sleep(gap)
		}
	}
	if chunked && sent >= size {
		io.WriteString(conn, "0\r\n\r\n")
	}
	if status == "" {
		select {
		case status = <-answer:
		case <-time.After(2 * time.Minute):
			status = "no answer"
		}
	}
	return status, fmt.Sprintf("server answered after %d of %d body bytes, %s", sent, size, time.Since(start).Round(10*time.Millisecond))
}

// headerTrickle sends a request's headers a byte a second and reports when
// the server cut the connection.
func headerTrickle(ctx context.Context, base string, hold time.Duration) (string, string) {
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		return "err", err.Error()
	}
	defer conn.Close()
	closed := make(chan struct{})
	go func() {
		io.Copy(io.Discard, conn)
		close(closed)
	}()
	req := "GET /health HTTP/1.1\r\nHost: " + strings.TrimPrefix(base, "http://") + "\r\nX-Slow: " + strings.Repeat("a", 1000)
	start := time.Now()
	for i := 0; i < len(req); i++ {
		select {
		case <-closed:
			return "closed", fmt.Sprintf("cut after %s", time.Since(start).Round(100*time.Millisecond))
		case <-time.After(time.Second):
		case <-ctx.Done():
			return "err", ctx.Err().Error()
		}
		if time.Since(start) > hold {
			return "held", fmt.Sprintf("connection still open after %s", hold)
		}
		if _, err := conn.Write([]byte{req[i]}); err != nil {
			return "closed", fmt.Sprintf("cut after %s", time.Since(start).Round(100*time.Millisecond))
		}
	}
	return "sent", "all headers went through"
}
