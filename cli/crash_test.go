package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/comb-broker/comb/internal/combtest"
)

// TestCrashRecovery pushes and consumes under load, SIGKILLs the server,
// restarts it on the same database and checks that nothing acknowledged was
// lost: every push answered 201 is still there, per-partition order holds,
// and a consumer group's committed cursor survived.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a server binary; skipped with -short")
	}
	const (
		queue      = "crash"
		producers  = 20
		partitions = 4
		leaseSecs  = 3
		loadFor    = 1500 * time.Millisecond
	)

	bin := crashBuildBinary(t)
	db := filepath.Join(t.TempDir(), "comb.db")
	client := crashNewClient()
	srv := crashStartServer(t, bin, db, "first")

	// A short lease lets group g1's batch that was in flight at the kill be
	// redelivered after the restart instead of blocking its partition for
	// the default 300 s, which makes the cursor check below exhaustive.
	shortLease := true
	status, body, err := crashDo(context.Background(), client, http.MethodPost, srv.base+"/api/v1/configure",
		map[string]any{"queue": queue, "options": map[string]any{"leaseTime": leaseSecs}})
	if err != nil || status != http.StatusOK {
		shortLease = false
		t.Logf("configure %s with leaseTime=%d failed (HTTP %d, %v, %s); group g1 skip check disabled",
			queue, leaseSecs, status, err, crashSnippet(body))
	}

	var (
		ctx, stopLoad = context.WithCancel(context.Background())
		wg            sync.WaitGroup
		producerLogs  = make([]*crashProducerLog, producers)
		g1            = &crashConsumerLog{popped: map[string]bool{}, acked: map[string]bool{}}
	)
	defer stopLoad()
	for i := range producers {
		producerLogs[i] = &crashProducerLog{attempted: map[string]crashItem{}, confirmed: map[string]bool{}}
		wg.Go(func() { crashProduce(ctx, client, srv.base, queue, i, partitions, producerLogs[i]) })
	}
	wg.Go(func() { crashConsumeG1(ctx, client, srv.base, queue, g1) })

	time.Sleep(loadFor)
	if err := srv.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill server: %v", err)
	}
	<-srv.exited
	killedAt := time.Now()
	stopLoad()
	wg.Wait()
	client.CloseIdleConnections()

	attempted := map[string]crashItem{}
	confirmed := map[string]crashItem{}
	var producerErrs []string
	for _, pl := range producerLogs {
		for id, it := range pl.attempted {
			attempted[id] = it
		}
		for id := range pl.confirmed {
			confirmed[id] = pl.attempted[id]
		}
		producerErrs = append(producerErrs, pl.errs...)
	}
	if len(producerErrs) > 0 {
		t.Errorf("%d push requests failed before the kill, first: %s", len(producerErrs), producerErrs[0])
	}
	if len(g1.errs) > 0 {
		t.Errorf("%d g1 pop/ack calls failed before the kill, first: %s", len(g1.errs), g1.errs[0])
	}
	t.Logf("before kill: %d items attempted, %d confirmed by 201; g1 popped %d, acked %d",
		len(attempted), len(confirmed), len(g1.popped), len(g1.acked))
	if len(confirmed) == 0 {
		t.Fatal("no push was confirmed before the kill; nothing to verify")
	}

	srv = crashStartServer(t, bin, db, "restarted")

	// (a) + (b): a fresh group sees every confirmed push exactly once, in
	// per-producer order within each partition.
	verify, verr := crashDrain(client, srv.base, queue, "verify", partitions, true)
	for _, e := range verr {
		t.Error(e)
	}
	seen := map[string]bool{}
	dupes := 0
	for _, m := range verify {
		if seen[m.TransactionID] {
			dupes++
			if dupes <= 5 {
				t.Errorf("transactionId %s (partition %s) delivered twice to group verify", m.TransactionID, m.Partition)
			}
		}
		seen[m.TransactionID] = true
	}
	if dupes > 5 {
		t.Errorf("... %d duplicate deliveries to group verify in all", dupes)
	}
	var missing []string
	for id, it := range confirmed {
		if !seen[id] {
			missing = append(missing, fmt.Sprintf("%s (producer %d seq %d %s)", id, it.Producer, it.Seq, it.Partition))
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		t.Errorf("%d of %d confirmed pushes are missing after restart, e.g. %s",
			len(missing), len(confirmed), strings.Join(missing[:min(5, len(missing))], ", "))
	}
	crashCheckMessages(t, verify, attempted)
	t.Logf("after restart: group verify received %d messages (%d confirmed + %d unanswered pushes that were committed)",
		len(verify), len(confirmed), len(verify)-len(confirmed)+len(missing))

	// (c): group g1 resumes from its committed cursor.
	if shortLease {
		if wait := leaseSecs*time.Second + 500*time.Millisecond - time.Since(killedAt); wait > 0 {
			time.Sleep(wait) // let g1's lease from before the kill expire
		}
	}
	again, gerr := crashDrain(client, srv.base, queue, "g1", partitions, false)
	for _, e := range gerr {
		t.Error(e)
	}
	redelivered := map[string]bool{}
	bad := 0
	for _, m := range again {
		redelivered[m.TransactionID] = true
		if g1.acked[m.TransactionID] {
			bad++
			if bad <= 5 {
				t.Errorf("group g1 got %s (partition %s) again after restart although its ack was answered 200 before the kill",
					m.TransactionID, m.Partition)
			}
		}
	}
	if bad > 5 {
		t.Errorf("... %d acknowledged messages redelivered to g1 in all", bad)
	}
	crashCheckMessages(t, again, attempted)
	if shortLease {
		// Nothing g1 never saw may be skipped: every confirmed push that g1
		// did not pop before the kill must come now.
		skipped := 0
		for id, it := range confirmed {
			if !g1.popped[id] && !redelivered[id] {
				skipped++
				if skipped <= 5 {
					t.Errorf("group g1 skipped %s (producer %d seq %d %s): never popped before the kill, not delivered after",
						id, it.Producer, it.Seq, it.Partition)
				}
			}
		}
		if skipped > 5 {
			t.Errorf("... %d confirmed pushes skipped by g1 in all", skipped)
		}
	}
	t.Logf("after restart: group g1 received %d messages", len(again))
	// On disk: each partition's segments tile its log with no gap or
	// overlap, created_at never decreases, no cursor points past the end.
	combtest.CheckInvariants(t, db)
}

// crashItem is one pushed message as the producer built it.
type crashItem struct {
	Producer  int
	Seq       int
	Partition string
}

type crashProducerLog struct {
	attempted map[string]crashItem // every item sent, answered or not
	confirmed map[string]bool      // items answered 201 queued/duplicate
	errs      []string
}

type crashConsumerLog struct {
	popped map[string]bool // delivered to g1 before the kill
	acked  map[string]bool // ack answered 200 with success before the kill
	errs   []string
}

// crashMsg is one delivered message.
type crashMsg struct {
	TransactionID string `json:"transactionId"`
	PartitionID   string `json:"partitionId"`
	Partition     string `json:"partition"`
	LeaseID       string `json:"leaseId"`
	Data          struct {
		Producer *int `json:"producer"`
		Seq      *int `json:"seq"`
	} `json:"data"`
}

type crashServer struct {
	cmd     *exec.Cmd
	base    string
	exited  chan struct{}
	logPath string // its stdout and stderr
}

// crashProduce pushes 1..10 items per request until ctx ends. The producer
// is sequential, so its items reach each partition in seq order.
func crashProduce(ctx context.Context, client *http.Client, base, queue string, producer, partitions int, rec *crashProducerLog) {
	seq := 0
	for ctx.Err() == nil {
		n := 1 + rand.IntN(10)
		items := make([]map[string]any, n)
		ids := make([]string, n)
		for k := range items {
			id := uuid.Must(uuid.NewV7()).String()
			part := fmt.Sprintf("p%d", rand.IntN(partitions))
			ids[k] = id
			rec.attempted[id] = crashItem{Producer: producer, Seq: seq, Partition: part}
			items[k] = map[string]any{
				"queue": queue, "partition": part, "transactionId": id,
				"payload": map[string]int{"producer": producer, "seq": seq},
			}
			seq++
		}
		status, body, err := crashDo(ctx, client, http.MethodPost, base+"/api/v1/push", map[string]any{"items": items})
		if err != nil {
			return // the server is gone (killed) or the test is stopping
		}
		if status != http.StatusCreated {
			rec.errs = append(rec.errs, fmt.Sprintf("push: HTTP %d: %s", status, crashSnippet(body)))
			continue
		}
		var replies []struct {
			Status string `json:"status"`
		}
		if err := json.Unmarshal(body, &replies); err != nil || len(replies) != n {
			rec.errs = append(rec.errs, fmt.Sprintf("push: %d items, reply %s", n, crashSnippet(body)))
			continue
		}
		for k, r := range replies {
			if r.Status == "queued" || r.Status == "duplicate" {
				rec.confirmed[ids[k]] = true
			} else {
				rec.errs = append(rec.errs, fmt.Sprintf("push: item status %q", r.Status))
			}
		}
	}
}

// crashConsumeG1 pops batches of 50 for group g1 and acks them, until ctx
// ends or the server disappears.
func crashConsumeG1(ctx context.Context, client *http.Client, base, queue string, rec *crashConsumerLog) {
	popURL := crashPopURL(base, queue, "g1", 50, false)
	for ctx.Err() == nil {
		msgs, status, err := crashPop(ctx, client, popURL)
		if err != nil {
			if status != 0 {
				rec.errs = append(rec.errs, err.Error())
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return
		}
		if len(msgs) == 0 {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		for _, m := range msgs {
			rec.popped[m.TransactionID] = true
		}
		ok, status, err := crashAck(ctx, client, base, "g1", msgs)
		if err != nil {
			if status != 0 {
				rec.errs = append(rec.errs, err.Error())
				continue
			}
			return
		}
		for _, id := range ok {
			rec.acked[id] = true
		}
	}
}

// crashDrain pops everything group can get from queue (wildcard pops,
// wait=false, batch 1000), acking each batch, until a pop answers 204. It
// then asks each partition directly, which must also be empty.
func crashDrain(client *http.Client, base, queue, group string, partitions int, subscribeAll bool) ([]crashMsg, []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var all []crashMsg
	var errs []string
	drain := func(popURL string) {
		for range 100000 {
			msgs, _, err := crashPop(ctx, client, popURL)
			if err != nil {
				errs = append(errs, fmt.Sprintf("group %s: %v", group, err))
				return
			}
			if len(msgs) == 0 {
				return
			}
			all = append(all, msgs...)
			ok, _, err := crashAck(ctx, client, base, group, msgs)
			if err != nil {
				errs = append(errs, fmt.Sprintf("group %s: %v", group, err))
				return
			}
			if len(ok) != len(msgs) {
				errs = append(errs, fmt.Sprintf("group %s: only %d of %d acks succeeded", group, len(ok), len(msgs)))
				return
			}
		}
	}
	wildcard := crashPopURL(base, queue, group, 1000, subscribeAll)
	drain(wildcard)
	for p := range partitions {
		before := len(all)
		part := fmt.Sprintf("p%d", p)
		drain(crashPartitionPopURL(base, queue, part, group, 1000))
		if n := len(all) - before; n > 0 {
			errs = append(errs, fmt.Sprintf("group %s: wildcard pop answered 204 but partition %s still delivered %d messages", group, part, n))
		}
	}
	return all, errs
}

// crashCheckMessages checks that delivered messages match what was pushed
// (payload, partition) and that, per producer, seq numbers rise within
// each partition in delivery order.
func crashCheckMessages(t *testing.T, msgs []crashMsg, attempted map[string]crashItem) {
	t.Helper()
	type lane struct {
		partition string
		producer  int
	}
	last := map[lane]int{}
	problems := 0
	report := func(format string, args ...any) {
		problems++
		if problems <= 10 {
			t.Errorf(format, args...)
		}
	}
	for _, m := range msgs {
		it, ok := attempted[m.TransactionID]
		if !ok {
			report("delivered transactionId %s was never pushed", m.TransactionID)
			continue
		}
		if m.Partition != it.Partition {
			report("%s pushed to partition %s, delivered from %q", m.TransactionID, it.Partition, m.Partition)
		}
		if m.Data.Producer == nil || m.Data.Seq == nil || *m.Data.Producer != it.Producer || *m.Data.Seq != it.Seq {
			report("%s: payload does not match the push (want producer %d seq %d)", m.TransactionID, it.Producer, it.Seq)
		}
		l := lane{it.Partition, it.Producer}
		if prev, ok := last[l]; ok && it.Seq <= prev {
			report("partition %s producer %d: seq %d delivered after seq %d", it.Partition, it.Producer, it.Seq, prev)
		}
		last[l] = it.Seq
	}
	if problems > 10 {
		t.Errorf("... %d message problems in all", problems)
	}
}

func crashPopURL(base, queue, group string, batch int, subscribeAll bool) string {
	q := url.Values{
		"batch":         {fmt.Sprint(batch)},
		"wait":          {"false"},
		"consumerGroup": {group},
	}
	if subscribeAll {
		q.Set("subscriptionMode", "all")
	}
	return base + "/api/v1/pop/queue/" + url.PathEscape(queue) + "?" + q.Encode()
}

func crashPartitionPopURL(base, queue, partition, group string, batch int) string {
	q := url.Values{
		"batch":         {fmt.Sprint(batch)},
		"wait":          {"false"},
		"consumerGroup": {group},
	}
	return base + "/api/v1/pop/queue/" + url.PathEscape(queue) + "/partition/" + url.PathEscape(partition) + "?" + q.Encode()
}

// crashPop performs one pop. A transport error is returned with status 0.
func crashPop(ctx context.Context, client *http.Client, popURL string) ([]crashMsg, int, error) {
	status, body, err := crashDo(ctx, client, http.MethodGet, popURL, nil)
	if err != nil {
		return nil, 0, err
	}
	switch status {
	case http.StatusNoContent:
		if len(body) != 0 {
			return nil, status, fmt.Errorf("pop: 204 with a body: %s", crashSnippet(body))
		}
		return nil, status, nil
	case http.StatusOK:
	default:
		return nil, status, fmt.Errorf("pop: HTTP %d: %s", status, crashSnippet(body))
	}
	var reply struct {
		Messages []crashMsg `json:"messages"`
	}
	if err := json.Unmarshal(body, &reply); err != nil {
		return nil, status, fmt.Errorf("pop: %v: %s", err, crashSnippet(body))
	}
	return reply.Messages, status, nil
}

// crashAck acks msgs as completed for group and returns the transactionIds
// whose ack succeeded. A transport error is returned with status 0.
func crashAck(ctx context.Context, client *http.Client, base, group string, msgs []crashMsg) ([]string, int, error) {
	acks := make([]map[string]any, len(msgs))
	for i, m := range msgs {
		acks[i] = map[string]any{
			"transactionId": m.TransactionID, "partitionId": m.PartitionID,
			"leaseId": m.LeaseID, "status": "completed",
		}
	}
	status, body, err := crashDo(ctx, client, http.MethodPost, base+"/api/v1/ack/batch",
		map[string]any{"acknowledgments": acks, "consumerGroup": group})
	if err != nil {
		return nil, 0, err
	}
	if status != http.StatusOK {
		return nil, status, fmt.Errorf("ack: HTTP %d: %s", status, crashSnippet(body))
	}
	var replies []struct {
		Success bool    `json:"success"`
		Error   *string `json:"error"`
	}
	if err := json.Unmarshal(body, &replies); err != nil || len(replies) != len(msgs) {
		return nil, status, fmt.Errorf("ack: %d items, reply %s", len(msgs), crashSnippet(body))
	}
	var ok []string
	var firstErr error
	for i, r := range replies {
		if r.Success {
			ok = append(ok, msgs[i].TransactionID)
		} else if firstErr == nil {
			msg := "<null>"
			if r.Error != nil {
				msg = *r.Error
			}
			firstErr = fmt.Errorf("ack: item %s failed: %s", msgs[i].TransactionID, msg)
		}
	}
	return ok, status, firstErr
}

func crashNewClient() *http.Client {
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			MaxIdleConns:        64,
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     30 * time.Second,
		},
	}
}

// crashDo sends a JSON request and reads the whole reply.
func crashDo(ctx context.Context, client *http.Client, method, target string, payload any) (int, []byte, error) {
	var rd io.Reader
	if payload != nil {
		b, err := json.Marshal(payload)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, body, nil
}

func crashSnippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// crashBuildBinary builds the server from the module root into a temp dir.
func crashBuildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "comb")
	// package main is the module root, one directory up.
	cmd := exec.Command("go", "build", "-o", bin, "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func crashFreeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// crashStartServer starts bin on a free port and waits for /health. The
// process is killed at cleanup; its output is logged if the test failed.
func crashStartServer(t *testing.T, bin, db, name string) *crashServer {
	t.Helper()
	return crashStartServerAt(t, bin, db, name, crashFreeAddr(t))
}

// crashStartServerAt is crashStartServer on addr, with extra serve flags:
// a server restarted on the same address is the same upstream to its peers.
func crashStartServerAt(t *testing.T, bin, db, name, addr string, flags ...string) *crashServer {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"serve", "--addr", addr, "--db", db}, flags...)...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("start %s server: %v", name, err)
	}
	srv := &crashServer{cmd: cmd, base: "http://" + addr, exited: make(chan struct{}), logPath: logPath}
	go func() {
		cmd.Wait()
		logFile.Close()
		close(srv.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-srv.exited:
		default:
			cmd.Process.Kill()
			<-srv.exited
		}
		if t.Failed() {
			if out, err := os.ReadFile(logPath); err == nil && len(out) > 0 {
				const tail = 4000
				if len(out) > tail {
					out = out[len(out)-tail:]
				}
				t.Logf("%s server output (tail):\n%s", name, out)
			}
		}
	})

	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-srv.exited:
			t.Fatalf("%s server exited before becoming healthy: %v", name, cmd.ProcessState)
		default:
		}
		resp, err := client.Get(srv.base + "/health")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return srv
			}
			err = errors.New(resp.Status)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s server not healthy within 30s: %v", name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
