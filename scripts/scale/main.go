// Command scale measures how comb's costs grow with the number of
// partitions in one queue and with the number of consumer groups on one
// queue. It builds each database once (kept in -dir, so a rerun measures
// again without building), serves it with the real HTTP handler on
// 127.0.0.1 and drives it with Go's standard net/http client, as Queen's Go
// SDK does. Every figure is the median (and the 90th percentile) of -n
// requests, in the same run, so the ratios between sizes are what count.
//
//	go run ./scripts/scale -dir /var/tmp/combscale -sizes 100,10000,100000,1000000 -out bench/results/scale.md
//	go run ./scripts/scale -dir /var/tmp/combscale -sizes 100 -groups 10000
//	go run ./scripts/scale -dir /var/tmp/combscale -sizes 100,100000,1000000 -groups 0 -firstpop 5
//
// The databases are built with synchronous=NORMAL (building is not what is
// measured); the measurements open them with the default FULL.
package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/httpd"
)

const queue = "scale"

// skip matches the listing paths -skip leaves out.
var skip *regexp.Regexp

// liveTotals is -live-totals, passed to the broker that serves the
// measurements.
var liveTotals int

func main() {
	dir := flag.String("dir", filepath.Join(os.TempDir(), "combscale"), "where the databases are built and kept")
	sizes := flag.String("sizes", "100,10000,100000,1000000", "partition counts, comma-separated")
	groups := flag.Int("groups", 10000, "consumer groups on one queue for the groups table (0 skips it)")
	groupsMode := flag.String("groups-mode", "all", "subscription mode of the groups table's groups: all or new")
	groupsWrites := flag.Int("groups-writes", 0, "segments written to each partition of the groups table's queue after its groups subscribed: a group with no cursor row on a partition is read at the partition's head when it subscribed (new) or at its floor (all)")
	n := flag.Int("n", 50, "requests per measurement")
	out := flag.String("out", "", "also write the markdown tables here")
	buildOnly := flag.Bool("build-only", false, "build the databases and stop")
	firstPops := flag.Int("firstpop", 0, "measure only the first pops of this many new consumer groups per subscription mode and size")
	flag.BoolVar(&firstPopSettle, "firstpop-settle", true, "time first pops once the background sums made at open are done (false: right after open, beside them)")
	fpSkip := flag.String("firstpop-skip", "", "mode@size pairs -firstpop does not measure, comma-separated (timestamp@1000000)")
	skipRoutes := flag.String("skip", "", "regular expression of listing paths not to measure (they are reported as such)")
	listingsOnly := flag.Bool("listings-only", false, "time only the listings, from the open on, of databases measured before (their groups exist)")
	flag.IntVar(&liveTotals, "live-totals", 0, "most partitions a queue's totals are summed for on every read (0: the broker's default; 2000000 sums every queue on every read, as before the background sums)")
	flag.Parse()
	if *skipRoutes != "" {
		re, err := regexp.Compile(*skipRoutes)
		if err != nil {
			fatal(err)
		}
		skip = re
	}
	if *groupsMode != "all" && *groupsMode != "new" {
		fatal(fmt.Errorf("-groups-mode %q: want all or new", *groupsMode))
	}
	if *groupsWrites < 0 {
		fatal(fmt.Errorf("-groups-writes %d: want 0 or more", *groupsWrites))
	}
	gdb := filepath.Join(*dir, fmt.Sprintf("g%d.db", *groups))
	if *groupsMode != "all" || *groupsWrites > 0 {
		gdb = filepath.Join(*dir, fmt.Sprintf("g%d-%s-w%d.db", *groups, *groupsMode, *groupsWrites))
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		fatal(err)
	}
	var md strings.Builder
	fmt.Fprintf(&md, "command: `go run ./scripts/scale %s`\n\n", strings.Join(os.Args[1:], " "))
	var counts []int
	for _, s := range strings.Split(*sizes, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || v <= 0 {
			fatal(fmt.Errorf("bad size %q", s))
		}
		counts = append(counts, v)
	}
	ctx := context.Background()
	for _, c := range counts {
		if err := buildPartitions(ctx, filepath.Join(*dir, fmt.Sprintf("p%d.db", c)), c); err != nil {
			fatal(err)
		}
	}
	if *groups > 0 {
		if err := buildGroups(ctx, gdb, *groups, *groupsMode, *groupsWrites); err != nil {
			fatal(err)
		}
	}
	if *buildOnly {
		return
	}
	if *firstPops > 0 {
		firstPopSkip = map[string]bool{}
		for _, m := range strings.Split(*fpSkip, ",") {
			firstPopSkip[strings.TrimSpace(m)] = true
		}
		var rows [][]string
		for _, c := range counts {
			r, err := measureFirstPops(ctx, filepath.Join(*dir, fmt.Sprintf("p%d.db", c)), c, *firstPops)
			if err != nil {
				fatal(err)
			}
			rows = append(rows, r)
		}
		md.WriteString(table(firstPopCols, counts, rows))
		fmt.Print(md.String())
		if *out != "" {
			if err := os.WriteFile(*out, []byte(md.String()), 0o644); err != nil {
				fatal(err)
			}
		}
		return
	}
	if *listingsOnly {
		var rows [][]string
		for _, c := range counts {
			r, err := measureListings(ctx, filepath.Join(*dir, fmt.Sprintf("p%d.db", c)), max(*n/5, 3))
			if err != nil {
				fatal(err)
			}
			rows = append(rows, r)
		}
		md.WriteString(table(append([]string{"open (ms)"}, listingCols...), counts, rows))
		fmt.Print(md.String())
		if *out != "" {
			if err := os.WriteFile(*out, []byte(md.String()), 0o644); err != nil {
				fatal(err)
			}
		}
		return
	}
	var rows [][]string
	for _, c := range counts {
		r, err := measurePartitions(ctx, filepath.Join(*dir, fmt.Sprintf("p%d.db", c)), c, *n)
		if err != nil {
			fatal(err)
		}
		rows = append(rows, r)
	}
	if len(rows) > 0 {
		md.WriteString(table(partitionCols, counts, rows))
	}
	if *groups > 0 {
		g, err := measureGroups(ctx, gdb, *groups, *n)
		if err != nil {
			fatal(err)
		}
		md.WriteString("\n" + g)
	}
	fmt.Print(md.String())
	if *out != "" {
		if err := os.WriteFile(*out, []byte(md.String()), 0o644); err != nil {
			fatal(err)
		}
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "scale:", err)
	os.Exit(1)
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// buildPartitions makes a database with n partitions in one queue, one
// message each, unless it exists already.
func buildPartitions(ctx context.Context, path string, n int) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	tmp := path + ".building"
	os.Remove(tmp)
	b, err := broker.Open(ctx, broker.Options{Path: tmp, Synchronous: "NORMAL", RetentionInterval: -1, Logger: quietLogger()})
	if err != nil {
		return err
	}
	start := time.Now()
	payload := []byte(`{"n":1,"text":"scale"}`)
	const batch = 10_000
	items := make([]combtype.PushItem, 0, batch)
	for i := 0; i < n; i += batch {
		items = items[:0]
		for j := i; j < min(i+batch, n); j++ {
			items = append(items, combtype.PushItem{Queue: queue, Partition: fmt.Sprintf("p%07d", j), Payload: payload})
		}
		if _, err := b.Push(ctx, items); err != nil {
			b.Close()
			return fmt.Errorf("build %s: %w", path, err)
		}
		if i > 0 && i%(100*batch) == 0 {
			fmt.Fprintf(os.Stderr, "scale: %s: %d partitions, %s\n", filepath.Base(path), i, time.Since(start).Round(time.Second))
		}
	}
	if err := b.Close(); err != nil {
		return err
	}
	for _, suffix := range []string{"-wal", "-shm", ".reserve"} {
		os.Remove(tmp + suffix)
	}
	fmt.Fprintf(os.Stderr, "scale: built %s (%d partitions) in %s\n", filepath.Base(path), n, time.Since(start).Round(time.Millisecond))
	return os.Rename(tmp, path)
}

// buildGroups makes a database with one queue of 10 partitions, 10
// messages each, and n consumer groups subscribed with mode that have
// each popped once, and then writes one segment to each partition writes
// times over.
func buildGroups(ctx context.Context, path string, n int, mode string, writes int) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	tmp := path + ".building"
	os.Remove(tmp)
	b, err := broker.Open(ctx, broker.Options{Path: tmp, Synchronous: "NORMAL", RetentionInterval: -1, Logger: quietLogger()})
	if err != nil {
		return err
	}
	start := time.Now()
	var items []combtype.PushItem
	for p := range 10 {
		for range 10 {
			items = append(items, combtype.PushItem{Queue: queue, Partition: fmt.Sprintf("p%d", p), Payload: []byte(`{"g":1}`)})
		}
	}
	if _, err := b.Push(ctx, items); err != nil {
		b.Close()
		return err
	}
	for g := range n {
		if _, err := b.Pop(ctx, combtype.PopRequest{Queue: queue, Group: groupName(g), Batch: 1, AutoAck: true,
			SubscriptionMode: mode}); err != nil {
			b.Close()
			return fmt.Errorf("build %s: pop: %w", path, err)
		}
	}
	for range writes {
		round := make([]combtype.PushItem, 10)
		for p := range round {
			round[p] = combtype.PushItem{Queue: queue, Partition: fmt.Sprintf("p%d", p), Payload: []byte(`{"g":2}`)}
		}
		if _, err := b.Push(ctx, round); err != nil {
			b.Close()
			return fmt.Errorf("build %s: push: %w", path, err)
		}
	}
	if err := b.Close(); err != nil {
		return err
	}
	for _, suffix := range []string{"-wal", "-shm", ".reserve"} {
		os.Remove(tmp + suffix)
	}
	fmt.Fprintf(os.Stderr, "scale: built %s (%d groups) in %s\n", filepath.Base(path), n, time.Since(start).Round(time.Millisecond))
	return os.Rename(tmp, path)
}

func groupName(i int) string { return fmt.Sprintf("g%05d", i) }

// server serves path over HTTP on 127.0.0.1.
type server struct {
	b    *broker.Broker
	url  string
	stop func() error
	cl   *http.Client
	open time.Duration
}

func serve(ctx context.Context, path string) (*server, error) {
	start := time.Now()
	b, err := broker.Open(ctx, broker.Options{Path: path, RetentionInterval: -1, Logger: quietLogger(),
		LiveTotalsPartitions: liveTotals})
	if err != nil {
		return nil, err
	}
	open := time.Since(start)
	cfg := httpd.Config{Logger: quietLogger()}
	ln, err := httpd.Listen("127.0.0.1:0", cfg)
	if err != nil {
		b.Close()
		return nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- httpd.NewServer(b, cfg).Serve(sctx, ln) }()
	s := &server{b: b, url: "http://" + ln.Addr().String(), open: open,
		cl: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}}
	var once sync.Once
	var stopErr error
	s.stop = func() error {
		once.Do(func() {
			cancel()
			stopErr = errors.Join(<-done, b.Close())
		})
		return stopErr
	}
	return s, nil
}

// do sends one request and returns its status, body and time.
func (s *server) do(method, path string, body any) (int, []byte, time.Duration, error) {
	var rd io.Reader
	if body != nil {
		buf, err := json.Marshal(body)
		if err != nil {
			return 0, nil, 0, err
		}
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	if err != nil {
		return 0, nil, 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	start := time.Now()
	resp, err := s.cl.Do(req)
	if err != nil {
		return 0, nil, 0, err
	}
	out, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, out, time.Since(start), err
}

// timing is a set of request times.
type timing []time.Duration

func (t timing) String() string {
	if len(t) == 0 {
		return "—"
	}
	s := slices.Clone(t)
	slices.Sort(s)
	return fmt.Sprintf("%s / %s", ms(s[len(s)/2]), ms(s[len(s)*9/10]))
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 2, 64)
}

// warm sends path once, untimed as a measurement, and returns its time: a
// route whose large queues are summed in the background makes the first
// sum on its first read. A scrape of /metrics/prometheus leaves a large
// queue out until the refresher has summed it (and one whose store reads
// time out), so for it warm waits, up to two minutes, until the queue's
// series appear, and says how long that took.
//
// A deep offset may be refused with a 400 that points to after: warm
// returns the status, which the timed requests must then answer.
func (s *server) warm(path string) (string, int, error) {
	code, body, d, err := s.do("GET", path, nil)
	if err != nil {
		return "", 0, err
	}
	if code == http.StatusBadRequest && strings.Contains(path, "offset=") && bytes.Contains(body, []byte("after")) {
		return ms(d), code, nil
	}
	if code != http.StatusOK {
		return "", 0, fmt.Errorf("GET %s: %d %s", path, code, truncate(body))
	}
	first := ms(d)
	if path != "/metrics/prometheus" {
		return first, code, nil
	}
	start := time.Now()
	for !bytes.Contains(body, []byte(`comb_queue_depth{queue="`+queue+`"`)) {
		if time.Since(start) > 2*time.Minute {
			// Reported, not fatal: a scrape that times out on its store
			// reads leaves the queue out (comb_scrape_errors).
			return fmt.Sprintf("%s, no series of the queue after %.0f s", first, time.Since(start).Seconds()), code, nil
		}
		time.Sleep(200 * time.Millisecond)
		if code, body, _, err = s.do("GET", path, nil); err != nil || code != http.StatusOK {
			return "", 0, fmt.Errorf("GET %s: %d %v", path, code, err)
		}
	}
	return fmt.Sprintf("%s, series after %.1f s", first, time.Since(start).Seconds()), code, nil
}

// positionAt is the after position (the partition id) of the queue's
// partition at offset in creation order: the queue details and the
// group's cursors (every partition, on the databases built here) both
// page after it.
func positionAt(path string, offset int) (string, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		return "", err
	}
	defer db.Close()
	var id int64
	if err := db.QueryRow(`SELECT id FROM partitions WHERE queue_id = (SELECT id FROM queues WHERE name = ?)
		ORDER BY id LIMIT 1 OFFSET ?`, queue, max(offset, 0)).Scan(&id); err != nil {
		return "", fmt.Errorf("position at %d: %w", offset, err)
	}
	return strconv.FormatInt(id, 10), nil
}

// get times n GETs of path, which must answer want.
// waitSummed polls the groups listing until its first pair carries a
// background sum (statsAge 0 or more) and tells how long that took; 0 when
// the pairs carry no statsAge (summed on every read) or the sum did not
// come within limit.
func (s *server) waitSummed(limit time.Duration) (time.Duration, error) {
	start := time.Now()
	for time.Since(start) < limit {
		code, body, _, err := s.do("GET", "/api/v1/consumer-groups?limit=2", nil)
		if err != nil {
			return 0, err
		}
		if code != http.StatusOK {
			return 0, fmt.Errorf("groups listing: %d %s", code, truncate(body))
		}
		var page []struct {
			StatsAge *int64 `json:"statsAge"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return 0, fmt.Errorf("groups listing: %w", err)
		}
		if len(page) == 0 || page[0].StatsAge == nil {
			return 0, nil
		}
		if *page[0].StatsAge >= 0 {
			return time.Since(start), nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return 0, nil
}

func (s *server) get(path string, n int, want int) (timing, int, error) {
	var t timing
	size := 0
	for i := range n {
		code, body, d, err := s.do("GET", path, nil)
		if err != nil {
			return nil, 0, err
		}
		if code != want {
			return nil, 0, fmt.Errorf("GET %s: %d %s", path, code, truncate(body))
		}
		t, size = append(t, d), len(body)
		if i == 0 && d > time.Second {
			break // a slow route is timed once
		}
	}
	fmt.Fprintf(os.Stderr, "scale:   GET %s: %s (%s)\n", path, t, kb(size))
	return t, size, nil
}

func truncate(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

type popReply struct {
	Messages []struct {
		TransactionID string `json:"transactionId"`
		PartitionID   string `json:"partitionId"`
		LeaseID       string `json:"leaseId"`
	} `json:"messages"`
}

// popAck pops one message for group and acks it, timing the pop and the ack.
func (s *server) popAck(q, group string) (time.Duration, time.Duration, error) {
	path := "/api/v1/pop/queue/" + q + "?batch=1&wait=false"
	if group != "" {
		path += "&consumerGroup=" + group
	}
	code, body, dPop, err := s.do("GET", path, nil)
	if err != nil {
		return 0, 0, err
	}
	if code != http.StatusOK {
		return 0, 0, fmt.Errorf("pop %s: %d %s", path, code, truncate(body))
	}
	var r popReply
	if err := json.Unmarshal(body, &r); err != nil || len(r.Messages) == 0 {
		return 0, 0, fmt.Errorf("pop %s: %v %s", path, err, truncate(body))
	}
	m := r.Messages[0]
	ack := map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "leaseId": m.LeaseID,
		"status": "completed"}
	if group != "" {
		ack["consumerGroup"] = group
	}
	code, body, dAck, err := s.do("POST", "/api/v1/ack", ack)
	if err != nil {
		return 0, 0, err
	}
	if code != http.StatusOK || bytes.Contains(body, []byte(`"success":false`)) {
		return 0, 0, fmt.Errorf("ack: %d %s", code, truncate(body))
	}
	return dPop, dAck, nil
}

// idlePops times reps pops of a group subscribed to every message that
// has nothing due: moved to the end of every partition by a seek (timed
// once, when the group is new), it may have something anywhere.
func (s *server) idlePops(reps int) (string, error) {
	const group = "scale-idle"
	_, known, _, err := s.do("GET", "/api/v1/consumer-groups/"+group+"?limit=1", nil)
	if err != nil {
		return "", err
	}
	seek := "— (group exists)"
	if string(known) == "{}" {
		// Pushes into another queue while the seek runs tell how long the
		// seek holds the writer, which every write shares.
		stop, done := make(chan struct{}), make(chan error, 1)
		var during timing
		go func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					done <- nil
					return
				case <-time.After(50 * time.Millisecond):
				}
				code, body, d, err := s.do("POST", "/api/v1/push", map[string]any{"items": []any{map[string]any{
					"queue": queue + "-beside", "partition": "p", "payload": map[string]any{"i": i}}}})
				if err == nil && code != http.StatusCreated {
					err = fmt.Errorf("push beside the seek: %d %s", code, truncate(body))
				}
				if err != nil {
					done <- err
					return
				}
				during = append(during, d)
			}
		}()
		code, body, d, err := s.do("POST", "/api/v1/consumer-groups/"+group+"/queues/"+queue+"/seek", map[string]any{"toEnd": true})
		close(stop)
		if perr := <-done; err == nil {
			err = perr
		}
		if err != nil {
			return "", err
		}
		if code != http.StatusOK {
			return "", fmt.Errorf("seek: %d %s", code, truncate(body))
		}
		worst := slices.Max(append(during, 0))
		seek = fmt.Sprintf("%s; %d pushes to another queue meanwhile %s, slowest %s", ms(d), len(during), during, ms(worst))
	}
	path := "/api/v1/pop/queue/" + queue + "?batch=1&wait=false&subscriptionMode=all&consumerGroup=" + group
	var t timing
	slow := 0
	for i := range reps + 1 {
		code, body, d, err := s.do("GET", path, nil)
		if err != nil {
			return "", err
		}
		if code != http.StatusOK && code != http.StatusNoContent {
			return "", fmt.Errorf("pop %s: %d %s", path, code, truncate(body))
		}
		if bytes.Contains(body, []byte(`"transactionId"`)) {
			return "", fmt.Errorf("pop %s: a message, want none: %s", path, truncate(body))
		}
		if i > 0 { // the first subscribes the group, in the writer
			t = append(t, d)
		}
		if i > 0 && d > time.Second {
			if slow++; slow == 3 {
				break // slow pops are timed three times
			}
		}
	}
	fmt.Fprintf(os.Stderr, "scale:   idle group: seek %s ms, pop %s, first %s\n", seek, t, ms(t[0]))
	return fmt.Sprintf("%s (first %s; seek %s)", t, ms(t[0]), seek), nil
}

var partitionCols = []string{
	"open (ms)",
	"push 1 msg into a new partition",
	"first pop of a new group (subscribes)",
	"pop b1, group",
	"ack",
	"pop b1, queue mode",
	"pop b1, group of every message with nothing due (its seek to the end)",
	"queue detail, default reply",
	"queue detail, page limit=100 in the middle",
	"queue detail, last page by offset",
	"queue detail, last page by after",
	"consumer-groups listing",
	"group's partitions, limit=100",
	"group's partitions, last page by offset",
	"group's partitions, last page by after",
	"lagging, minLagSeconds=0, limit=100",
	"messages?queue, limit=100",
	"dlq?queue, limit=100",
	"resources/queues",
	"status/queues/:queue, default reply",
	"metrics/prometheus",
}

func measurePartitions(ctx context.Context, path string, n, reps int) ([]string, error) {
	s, err := serve(ctx, path)
	if err != nil {
		return nil, err
	}
	defer s.stop()
	row := []string{ms(s.open)}
	stamp := time.Now().UnixNano()

	var push timing
	for i := range reps {
		item := map[string]any{"items": []any{map[string]any{"queue": queue,
			"partition": fmt.Sprintf("new-%d-%d", stamp, i), "payload": map[string]any{"i": i}}}}
		code, body, d, err := s.do("POST", "/api/v1/push", item)
		if err != nil {
			return nil, err
		}
		if code != http.StatusCreated {
			return nil, fmt.Errorf("push: %d %s", code, truncate(body))
		}
		push = append(push, d)
	}
	row = append(row, push.String())
	fmt.Fprintf(os.Stderr, "scale: %d partitions: open %s ms, push %s\n", n, ms(s.open), push)

	// One group per database, so a rerun does not seed another cursor on
	// every partition; its first pop is timed only when it is new.
	group := "scale-g"
	_, known, _, err := s.do("GET", "/api/v1/consumer-groups/"+group+"?limit=1", nil)
	if err != nil {
		return nil, err
	}
	first, _, err := s.popAck(queue, group)
	if err != nil {
		return nil, err
	}
	if string(known) == "{}" {
		row = append(row, ms(first))
	} else {
		row = append(row, "— (group exists)")
	}
	fmt.Fprintf(os.Stderr, "scale:   first pop of a new group %s ms\n", ms(first))
	var pops, acks, qpops timing
	for range reps {
		p, a, err := s.popAck(queue, group)
		if err != nil {
			return nil, err
		}
		pops, acks = append(pops, p), append(acks, a)
		q, _, err := s.popAck(queue, "")
		if err != nil {
			return nil, err
		}
		qpops = append(qpops, q)
	}
	row = append(row, pops.String(), acks.String(), qpops.String())
	fmt.Fprintf(os.Stderr, "scale:   pop %s, ack %s, queue-mode pop %s\n", pops, acks, qpops)
	idle, err := s.idlePops(reps)
	if err != nil {
		return nil, err
	}
	row = append(row, idle)

	cells, err := s.listings(path, n+reps, max(reps/5, 3), group)
	if err != nil {
		return nil, err
	}
	return append(row, cells...), s.stop()
}

// listingCols are the columns listings fills, in partitionCols.
var listingCols = partitionCols[len(partitionCols)-14:]

// listings times each listing route once (the first request) and then
// reps times, on a queue of total partitions read through group's
// cursors.
func (s *server) listings(path string, total, reps int, group string) ([]string, error) {
	// The position the last page of 100 starts after, read from the
	// database: past an offset of 10,000 the routes answer 400 and point
	// to after, so the position cannot be asked for with an offset.
	last, err := positionAt(path, total-101)
	if err != nil {
		return nil, err
	}
	after, gafter := last, "after="+last
	pages := []string{
		"/api/v1/resources/queues/" + queue,
		fmt.Sprintf("/api/v1/resources/queues/%s?limit=100&offset=%d", queue, total/2),
		fmt.Sprintf("/api/v1/resources/queues/%s?limit=100&offset=%d", queue, max(total-100, 0)),
		fmt.Sprintf("/api/v1/resources/queues/%s?limit=100&after=%s", queue, after),
		"/api/v1/consumer-groups",
		"/api/v1/consumer-groups/" + group + "?limit=100",
		fmt.Sprintf("/api/v1/consumer-groups/%s?limit=100&offset=%d", group, max(total-100, 0)),
		fmt.Sprintf("/api/v1/consumer-groups/%s?limit=100&%s", group, gafter),
		"/api/v1/consumer-groups/lagging?minLagSeconds=0&limit=100",
		"/api/v1/messages?queue=" + queue + "&limit=100&from=2000-01-01",
		"/api/v1/dlq?queue=" + queue + "&limit=100",
		"/api/v1/resources/queues",
		"/api/v1/status/queues/" + queue,
		"/metrics/prometheus",
	}
	var row []string
	for _, p := range pages {
		if skip != nil && skip.MatchString(p) {
			row = append(row, "not measured")
			continue
		}
		first, code, err := s.warm(p)
		if err != nil {
			return nil, err
		}
		t, size, err := s.get(p, reps, code)
		if err != nil {
			return nil, err
		}
		cell := fmt.Sprintf("%s (%s; first %s)", t, kb(size), first)
		if code == http.StatusBadRequest {
			cell = "400, use after: " + cell
		}
		row = append(row, cell)
	}
	return row, nil
}

// measureListings opens a database measurePartitions used before (its
// groups exist) and times only the listings, the first request of each
// route right after the open included.
func measureListings(ctx context.Context, path string, reps int) ([]string, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		return nil, err
	}
	var total int
	err = db.QueryRow(`SELECT COUNT(*) FROM partitions WHERE queue_id = (SELECT id FROM queues WHERE name = ?)`,
		queue).Scan(&total)
	db.Close()
	if err != nil {
		return nil, fmt.Errorf("count partitions: %w", err)
	}
	s, err := serve(ctx, path)
	if err != nil {
		return nil, err
	}
	defer s.stop()
	fmt.Fprintf(os.Stderr, "scale: %d partitions: open %s ms, listings only\n", total, ms(s.open))
	row, err := s.listings(path, total, reps, "scale-g")
	if err != nil {
		return nil, err
	}
	return append([]string{ms(s.open)}, row...), s.stop()
}

func kb(n int) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%d KB", n/1024)
}

func table(cols []string, counts []int, rows [][]string) string {
	var b strings.Builder
	b.WriteString("Partitions in one queue (one message each). Times in ms, median / p90; listing cells also give the reply size and the time of the first, untimed request.\n\n")
	b.WriteString("| measure |")
	for _, c := range counts {
		fmt.Fprintf(&b, " %d |", c)
	}
	b.WriteString("\n|---|")
	for range counts {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for i, col := range cols {
		fmt.Fprintf(&b, "| %s |", col)
		for _, r := range rows {
			fmt.Fprintf(&b, " %s |", r[i])
		}
		b.WriteString("\n")
	}
	return b.String()
}

func measureGroups(ctx context.Context, path string, groups, reps int) (string, error) {
	s, err := serve(ctx, path)
	if err != nil {
		return "", err
	}
	defer s.stop()
	var b strings.Builder
	fmt.Fprintf(&b, "%d consumer groups on one queue of 10 partitions. Times in ms, median / p90.\n\n| measure | value |\n|---|---|\n", groups)
	fmt.Fprintf(&b, "| open | %s |\n", ms(s.open))
	var push timing
	for i := range reps {
		item := map[string]any{"items": []any{map[string]any{"queue": queue, "partition": fmt.Sprintf("p%d", i%10),
			"payload": map[string]any{"i": i}}}}
		code, body, d, err := s.do("POST", "/api/v1/push", item)
		if err != nil {
			return "", err
		}
		if code != http.StatusCreated {
			return "", fmt.Errorf("push: %d %s", code, truncate(body))
		}
		push = append(push, d)
	}
	fmt.Fprintf(&b, "| push 1 msg | %s |\n", push)
	var pops, acks timing
	for i := range reps {
		p, a, err := s.popAck(queue, groupName(i*(groups/reps)))
		if err != nil {
			return "", err
		}
		pops, acks = append(pops, p), append(acks, a)
	}
	fmt.Fprintf(&b, "| pop b1, one of the groups | %s |\n| ack | %s |\n", pops, acks)
	listings := []string{
		"/api/v1/consumer-groups",
		"/api/v1/consumer-groups?limit=100",
		fmt.Sprintf("/api/v1/consumer-groups?limit=100&offset=%d", groups-100),
		"/api/v1/consumer-groups/" + groupName(groups/2),
		"/api/v1/consumer-groups/lagging?minLagSeconds=0&limit=100",
		"/api/v1/resources/queues/" + queue,
		"/api/v1/messages?queue=" + queue + "&limit=100",
		"/api/v1/status",
	}
	for _, p := range listings {
		t, size, err := s.get(p, max(reps/5, 3), http.StatusOK)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "| GET %s | %s (%s) |\n", strings.TrimPrefix(p, "/api/v1"), t, kb(size))
	}
	// A queue past the live limits is answered from a background sum
	// (statsAge); until the first is made its figures are empty, which
	// costs nothing. The listings again once it is made, if it is.
	summed, err := s.waitSummed(time.Minute)
	if err != nil {
		return "", err
	}
	if summed > 0 {
		fmt.Fprintf(&b, "| the background sum ready after | %s |\n", ms(summed))
		for _, p := range listings {
			t, size, err := s.get(p, max(reps/5, 3), http.StatusOK)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(&b, "| summed: GET %s | %s (%s) |\n", strings.TrimPrefix(p, "/api/v1"), t, kb(size))
		}
	}
	code, body, _, err := s.do("POST", "/api/v1/configure", map[string]any{"queue": queue,
		"options": map[string]any{"retentionEnabled": true, "retentionSeconds": 1}})
	if err != nil || code != http.StatusOK {
		return "", fmt.Errorf("configure: %d %s %v", code, truncate(body), err)
	}
	time.Sleep(2 * time.Second)
	start := time.Now()
	rep, err := s.b.RetentionSweep(ctx)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(&b, "| retention sweep (%d segments, %d messages) | %s |\n", rep.Segments, rep.Frames, ms(time.Since(start)))
	return b.String(), s.stop()
}
