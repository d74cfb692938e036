//go:build linux

// Command parked measures how fast parked long-polls wake. It starts a
// real `comb serve` on a fresh database, parks N long-poll pops (each in
// its own consumer group, so one message is for all of them), reports the
// server's CPU and RSS while they wait, pushes one message and reports how
// long each pop took to answer after it, and the server's CPU meanwhile.
//
// It raises its open-file limit to fit N connections on each side. The
// consumers are read by one goroutine from one epoll set (fleet.go), so
// the client takes as little of the processors it shares with the server
// as it can; "client CPU" is what it took.
//
// With -floor MODE it starts, instead of comb, this same program again as
// a server that answers the same requests the same way and does no broker
// work (floor.go): the measurement of it is the floor this machine allows
// for waking N parked HTTP requests, through Go's net/http (nethttp) or
// plain connections (raw).
//
//	go build -o /tmp/comb . && go run ./scripts/parked -bin /tmp/comb -n 2000
//	go run ./scripts/parked -bin /tmp/comb -n 10000 -env GOMEMLIMIT=off
//	go run ./scripts/parked -floor nethttp -n 10000
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

type envList []string

func (e *envList) String() string     { return strings.Join(*e, ",") }
func (e *envList) Set(v string) error { *e = append(*e, v); return nil }

func main() {
	// The floor server is this program run again by -floor: its command
	// line is not one a user types.
	if len(os.Args) > 1 && os.Args[1] == "-serve-floor" {
		serveFloorMain(os.Args[1:])
		return
	}
	bin := flag.String("bin", "", "comb binary to run (this or -floor is required)")
	floor := flag.String("floor", "", "instead of comb, run a server that does no broker work: nethttp (Go's net/http) or raw (plain connections)")
	n := flag.Int("n", 2000, "parked long-polls")
	settle := flag.Duration("settle", 5*time.Second, "how long to measure the server while the pops are parked")
	profile := flag.String("cpuprofile", "", "write the server's CPU profile of a wake (-profile-round) here: from half a second before the push, for -cpuprofile-seconds (serves pprof on loopback)")
	profileSeconds := flag.Int("cpuprofile-seconds", 20, "how long -cpuprofile profiles; a short window leaves out what follows the wake (connections closing, collections)")
	rounds := flag.Int("rounds", 1, "wakes in a row: after each, every consumer acknowledges and parks again")
	profileRound := flag.Int("profile-round", 0, "the round whose wake -cpuprofile and -allocprofile profile (default the last); the first of several is the one whose consumers acknowledge and pop again while the others still wake")
	allocs := flag.String("allocprofile", "", "write the server's allocation profiles before the push and after the last answer to F.before and F.after (compare with go tool pprof -base)")
	memstats := flag.Bool("memstats", false, "after -settle, force two collections in the server and print its live heap and goroutine stacks while the pops are parked (what RSS holds beyond them is memory not yet returned to the system)")
	queueFirst := flag.Bool("queue-first", false, "create the queue (POST /api/v1/configure) before the pops park, so that each parking pop subscribes its group; without it the first push creates the queue and its wake subscribes every group")
	var env envList
	flag.Var(&env, "env", "NAME=VALUE for the server's environment (repeatable), e.g. GOMEMLIMIT=off")
	flag.Parse()
	if (*bin == "") == (*floor == "") {
		fmt.Fprintln(os.Stderr, "parked: one of -bin and -floor is required")
		os.Exit(2)
	}
	if *floor != "" && !validFloor(*floor) {
		fmt.Fprintf(os.Stderr, "parked: -floor %q: want nethttp or raw\n", *floor)
		os.Exit(2)
	}
	if *profileRound < 0 || *profileRound > *rounds {
		fmt.Fprintf(os.Stderr, "parked: -profile-round %d: want 1 to -rounds (%d)\n", *profileRound, *rounds)
		os.Exit(2)
	}
	if *profileRound == 0 {
		*profileRound = *rounds
	}
	if err := run(*bin, *floor, *n, *rounds, *settle, env, probes{*profile, *profileSeconds, *allocs, *memstats, *profileRound}, *queueFirst); err != nil {
		fmt.Fprintln(os.Stderr, "parked:", err)
		os.Exit(1)
	}
}

// probes is what is read from the server through its pprof endpoint.
type probes struct {
	profile  string // CPU profile of round's wake
	seconds  int    // its length
	allocs   string // allocation profiles around round's wake
	memstats bool   // live heap and stacks while parked
	round    int    // the round profiled
}

func (p probes) any() bool { return p.profile != "" || p.allocs != "" || p.memstats }

func run(bin, floor string, n, rounds int, settle time.Duration, env []string, pr probes, queueFirst bool) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("raise open-file limit: %w", err)
	}
	if lim.Cur < uint64(n)+200 {
		return fmt.Errorf("open-file limit %d is too low for %d connections", lim.Cur, n)
	}
	dir, err := os.MkdirTemp("", "parked")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	ln.Close()
	args := []string{"serve", "--addr", addr, "--db", filepath.Join(dir, "comb.db")}
	pprofFlag := "--pprof"
	if floor != "" {
		if bin, err = os.Executable(); err != nil {
			return fmt.Errorf("floor: %w", err)
		}
		args, pprofFlag = []string{"-serve-floor", floor, "-addr", addr}, "-pprof"
	}
	var pprofAddr string
	if pr.any() {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		pprofAddr = l.Addr().String()
		l.Close()
		args = append(args, pprofFlag, pprofAddr)
	}
	srv := exec.Command(bin, args...)
	// The collector's own account of its CPU (GODEBUG=gctrace=1) is read
	// from the server's stderr, to compare with the CPU of the whole wake.
	debug := "GODEBUG=gctrace=1"
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "GODEBUG="); ok {
			debug += "," + v
		}
	}
	srv.Env = append(append(os.Environ(), env...), debug)
	errPipe, err := srv.StderrPipe()
	if err != nil {
		return err
	}
	var gc gcTrace
	if err := srv.Start(); err != nil {
		return err
	}
	traced := make(chan struct{})
	go func() {
		defer close(traced)
		gc.read(errPipe)
	}()
	defer func() {
		srv.Process.Signal(syscall.SIGTERM)
		<-traced
		srv.Wait()
	}()
	base := "http://" + addr
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n + 10, MaxConnsPerHost: 0,
		DialContext: (&net.Dialer{Timeout: 30 * time.Second}).DialContext}}
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := client.Get(base + "/health"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Since(start) > 30*time.Second {
			return errors.New("server did not start")
		}
	}

	if queueFirst && floor == "" {
		resp, err := client.Post(base+"/api/v1/configure", "application/json", strings.NewReader(`{"queue":"parked"}`))
		if err != nil {
			return fmt.Errorf("create the queue: %w", err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("create the queue: %s", resp.Status)
		}
	}

	// Park: each pop subscribes its own group, then waits. With rounds > 1
	// each consumer acknowledges what it got and pops again, so the later
	// wakes are of consumers in their steady state: groups subscribed,
	// cursor rows written, connections that have answered before.
	f, err := newFleet(addr, n, rounds)
	if err != nil {
		return fmt.Errorf("park: %w", err)
	}
	defer f.close()
	for r := range rounds {
		if err := wake(client, base, srv.Process.Pid, &gc, n, r+1, rounds, settle, pprofAddr, pr, f.answers[r], &f.woken[r]); err != nil {
			return err
		}
	}
	return nil
}

// answer is what one parked pop got, and when.
type answer struct {
	at     time.Time
	status int
	got    bool
	err    error
}

// wake waits until n pops are parked, measures the server while they wait,
// pushes the message of round and reports how the pops woke.
func wake(client *http.Client, base string, pid int, gc *gcTrace, n, round, rounds int, settle time.Duration,
	pprofAddr string, pr probes, answers []answer, woken *sync.WaitGroup) error {
	parkStart := time.Now()
	for {
		p, err := parkedPops(client, base)
		if err == nil && p >= int64(n) {
			break
		}
		if time.Since(parkStart) > 5*time.Minute {
			return fmt.Errorf("only %d of %d pops parked: %v", p, n, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if rounds > 1 {
		fmt.Printf("-- round %d\n", round)
	}
	fmt.Printf("parked      %d pops in %v\n", n, time.Since(parkStart).Round(time.Millisecond))

	cpu0, _ := procCPU(pid)
	gc0, _ := gc.total()
	time.Sleep(settle)
	cpu1, _ := procCPU(pid)
	gc1, n1 := gc.total()
	rss, _ := procRSS(pid)
	fmt.Printf("while parked: server CPU %.2f s over %v (%.0f%% of a core), GC CPU %.2f s, RSS %.1f MiB\n",
		(cpu1 - cpu0).Seconds(), settle, 100*(cpu1-cpu0).Seconds()/settle.Seconds(), (gc1 - gc0).Seconds(), float64(rss)/(1<<20))
	if pr.memstats {
		if err := printMemStats(pprofAddr, pid, n); err != nil {
			return fmt.Errorf("memstats: %w", err)
		}
	}

	this := round == pr.round // the round profiled
	profiled := make(chan error, 1)
	if pr.profile != "" && this {
		go func() {
			profiled <- fetchProfile(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", pprofAddr, pr.seconds), pr.profile)
		}()
		time.Sleep(500 * time.Millisecond)
	}
	if pr.allocs != "" && this {
		if err := fetchAllocs(pprofAddr, pr.allocs+".before"); err != nil {
			return fmt.Errorf("allocation profile: %w", err)
		}
	}
	commits1, _ := scrape(client, base)
	faults1 := procFaults(pid)
	cpuPush, _ := procCPU(pid)
	self1 := selfCPU()
	pushAt := time.Now()
	resp, err := client.Post(base+"/api/v1/push", "application/json",
		strings.NewReader(fmt.Sprintf(`{"items":[{"queue":"parked","transactionId":"wake-%d","payload":{"n":%d}}]}`, round, round)))
	if err != nil {
		return fmt.Errorf("push: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("push: %d", resp.StatusCode)
	}
	pushed := time.Since(pushAt)
	woken.Wait()
	self2 := selfCPU()
	cpu2, _ := procCPU(pid)
	rss2, _ := procRSS(pid)
	faults2 := procFaults(pid)
	if pr.allocs != "" && this {
		if err := fetchAllocs(pprofAddr, pr.allocs+".after"); err != nil {
			return fmt.Errorf("allocation profile: %w", err)
		}
	}
	// The trace line of a cycle comes when it ends: give the last a moment.
	time.Sleep(100 * time.Millisecond)
	gc2, n2 := gc.total()
	commits2, _ := scrape(client, base)

	var lat []time.Duration
	var got, failed int
	for _, a := range answers {
		if a.err != nil || a.status != http.StatusOK {
			failed++
			continue
		}
		if a.got {
			got++
		}
		lat = append(lat, a.at.Sub(pushAt))
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(p*float64(len(lat))))]
	}
	fmt.Printf("push        answered in %v\n", pushed.Round(time.Microsecond))
	fmt.Printf("woke        %d of %d with the message, %d failed\n", got, n, failed)
	fmt.Printf("wake        p50 %v  p99 %v  max %v (from the push's start)\n",
		pct(0.50).Round(time.Millisecond), pct(0.99).Round(time.Millisecond), pct(1).Round(time.Millisecond))
	fmt.Printf("after push: server CPU %.2f s until the last answer, GC CPU %.2f s in %d cycles, RSS %.1f MiB, %d page faults\n",
		(cpu2 - cpuPush).Seconds(), (gc2 - gc1).Seconds(), n2-n1, float64(rss2)/(1<<20), faults2-faults1)
	d := func(k string) float64 { return commits2[k] - commits1[k] }
	fmt.Printf("after push: %.0f commits of %.0f writes, %.0f ms committing\n",
		d("comb_commit_batch_size_count"), d("comb_commit_batch_size_sum"), 1000*d("comb_commit_duration_seconds_sum"))
	fmt.Printf("answers by 25 ms:")
	for t, i := 25*time.Millisecond, 0; i < len(lat); t += 25 * time.Millisecond {
		j := i
		for j < len(lat) && lat[j] < t {
			j++
		}
		if j > i {
			fmt.Printf(" %d:%d", t.Milliseconds(), j-i)
		}
		i = j
	}
	fmt.Println()
	// The client runs on the same cores: its share of the wall time is
	// its own CPU over the same span.
	fmt.Printf("after push: client CPU %.2f s until the last answer (this process)\n", (self2 - self1).Seconds())
	if pr.profile != "" && this {
		if err := <-profiled; err != nil {
			return fmt.Errorf("profile: %w", err)
		}
	}
	return nil
}

// fetchAllocs writes the server's allocation profile to path. The runtime
// publishes a cycle's allocations only once the next cycle has run, so
// the profile is asked for twice, each time after a forced collection
// (which net/http/pprof runs for the heap profile only; it holds the
// same allocation samples): the second holds every allocation made
// before the first.
func fetchAllocs(pprofAddr, path string) error {
	url := "http://" + pprofAddr + "/debug/pprof/heap?gc=1"
	if err := fetchProfile(url, path); err != nil {
		return err
	}
	return fetchProfile(url, path)
}

// printMemStats forces two collections in the server (net/http/pprof's
// heap profile with gc=1; the second also finds the stacks the first
// halved) and prints the live heap and the goroutine stacks it reports,
// per parked pop as the whole divided by n.
func printMemStats(pprofAddr string, pid, n int) error {
	var heap, stack int64
	for range 2 {
		resp, err := http.Get("http://" + pprofAddr + "/debug/pprof/heap?debug=1&gc=1")
		if err != nil {
			return err
		}
		heap, stack = -1, -1
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			// "# HeapAlloc = 123" and "# Stack = 456 / 456" (in use / from the system).
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "# HeapAlloc = "); ok {
				heap, _ = strconv.ParseInt(v, 10, 64)
			}
			if v, ok := strings.CutPrefix(line, "# Stack = "); ok {
				inUse, _, _ := strings.Cut(v, " ")
				stack, _ = strconv.ParseInt(inUse, 10, 64)
			}
		}
		err = sc.Err()
		resp.Body.Close()
		if err != nil {
			return err
		}
		if heap < 0 || stack < 0 {
			return fmt.Errorf("no HeapAlloc or Stack line in the heap profile")
		}
	}
	rss, _ := procRSS(pid)
	fmt.Printf("after two collections: live heap %.1f MiB (%.1f KiB a pop), stacks %.1f MiB (%.1f KiB a pop), RSS %.1f MiB\n",
		float64(heap)/(1<<20), float64(heap)/1024/float64(n), float64(stack)/(1<<20), float64(stack)/1024/float64(n), float64(rss)/(1<<20))
	return nil
}

func fetchProfile(url, path string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// gcTrace sums the CPU the server's collector reports, cycle by cycle, in
// the lines GODEBUG=gctrace=1 writes to stderr:
//
//	gc 7 @1.2s 3%: 0.01+2.1+0.02 ms clock, 0.04+0.3/4.1/0.9+0.08 ms cpu, ...
//
// It is the collector's own estimate; a CPU profile (-cpuprofile) is the
// measurement.
type gcTrace struct {
	mu     sync.Mutex
	cpu    time.Duration
	cycles int
}

func (g *gcTrace) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "gc ") {
			continue
		}
		_, rest, ok := strings.Cut(line, " ms clock, ")
		if !ok {
			continue
		}
		fields, _, ok := strings.Cut(rest, " ms cpu")
		if !ok {
			continue
		}
		// Sweep termination + assist/background/idle + mark termination.
		// Idle marking runs only on a P that has nothing else to do, and
		// the trace counts it in wall time, which on a loaded machine is
		// far more than the CPU it got: it is left out.
		var sum float64
		for i, f := range strings.FieldsFunc(fields, func(r rune) bool { return r == '+' || r == '/' }) {
			v, err := strconv.ParseFloat(f, 64)
			if err == nil && i != 3 {
				sum += v
			}
		}
		g.mu.Lock()
		g.cpu += time.Duration(sum * float64(time.Millisecond))
		g.cycles++
		g.mu.Unlock()
	}
}

// total is the collector's CPU and cycles so far.
func (g *gcTrace) total() (time.Duration, int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cpu, g.cycles
}

// scrape reads the server's unlabelled Prometheus samples by name.
func scrape(c *http.Client, base string) (map[string]float64, error) {
	resp, err := c.Get(base + "/metrics/prometheus")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") || strings.Contains(name, "{") {
			continue
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			out[name] = f
		}
	}
	return out, sc.Err()
}

// parkedPops reads the server's comb_parked_pops gauge.
func parkedPops(c *http.Client, base string) (int64, error) {
	resp, err := c.Get(base + "/metrics/prometheus")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "comb_parked_pops "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return int64(f), err
		}
	}
	return 0, errors.New("no comb_parked_pops in /metrics")
}

// procCPU is the user and system CPU time of pid so far.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100, nil // USER_HZ is 100 on Linux
}

// selfCPU is the user and system CPU time of this process so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procFaults is the minor page faults of pid so far: memory touched for
// the first time.
func procFaults(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	n, _ := strconv.ParseInt(f[7], 10, 64)
	return n
}

// procRSS is the resident set of pid in bytes.
func procRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS")
}
