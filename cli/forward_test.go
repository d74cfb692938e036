package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/comb-broker/comb/internal/combtest"
	"github.com/comb-broker/comb/internal/queentest"
)

// TestForwardersSurviveUpstreamAndDeviceCrashes runs a device and an
// upstream as two comb serve processes. The device buffers while the
// upstream is down; once it is up, the device's push forwarder drains the
// buffer and its pull forwarder brings commands down, through two SIGKILLs
// of the upstream and one of the device. At the end the upstream holds
// exactly the device's messages and the device exactly the upstream's
// commands: none missing, none stored twice, each partition in order.
func TestForwardersSurviveUpstreamAndDeviceCrashes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills server binaries; skipped with -short")
	}
	const (
		telemetry  = 6000 // device -> upstream
		commands   = 3000 // upstream -> device
		partitions = 4
	)
	bin := crashBuildBinary(t)
	dir := t.TempDir()
	upDB, devDB := filepath.Join(dir, "upstream.db"), filepath.Join(dir, "device.db")
	upAddr, devAddr := crashFreeAddr(t), crashFreeAddr(t)
	devFlags := []string{"--device-id", "dev-1",
		"--forward", "name=up,queue=telemetry,batch=50,upstream=http://" + upAddr,
		"--forward", "name=down,direction=pull,queue=commands,batch=50,upstream=http://" + upAddr,
		"--forward-max-backoff", "300ms", "--forward-poll", "1s",
	}
	client := crashNewClient()
	ctx := context.Background()

	dev := crashStartServerAt(t, bin, devDB, "device-1", devAddr, devFlags...)
	sent := forwardPushAll(t, client, dev.base, "telemetry", 0, telemetry, partitions)
	if st := forwardStatus(t, client, dev.base, "up"); st.Lag != telemetry || st.LastError == nil {
		t.Errorf("with the upstream down: lag %d, last error %v; want lag %d and the connection error",
			st.Lag, st.LastError, telemetry)
	}

	up := crashStartServerAt(t, bin, upDB, "upstream-1", upAddr)
	// A pop whose reply an upstream crash swallowed leaves its batch leased
	// upstream until the lease expires; a short lease keeps that wait short.
	if status, body, err := crashDo(ctx, client, http.MethodPost, up.base+"/api/v1/configure",
		map[string]any{"queue": "commands", "options": map[string]any{"leaseTime": 2}}); err != nil || status != http.StatusOK {
		t.Fatalf("configure commands: HTTP %d %v %s", status, err, crashSnippet(body))
	}
	for id, it := range forwardPushAll(t, client, up.base, "commands", 1, commands, partitions) {
		sent[id] = it
	}

	// Kill each side while the buffer is still draining.
	killAt := func(name string, srv *crashServer, below int64) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			lag := forwardStatus(t, client, dev.base, "up").Lag
			if lag <= below || time.Now().After(deadline) {
				t.Logf("kill -9 %s at device lag %d", name, lag)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		srv.cmd.Process.Kill()
		<-srv.exited
	}
	killAt("upstream-1", up, telemetry*4/5)
	up = crashStartServerAt(t, bin, upDB, "upstream-2", upAddr)
	killAt("device-1", dev, telemetry*3/5)
	dev = crashStartServerAt(t, bin, devDB, "device-2", devAddr, devFlags...)
	killAt("upstream-2", up, telemetry*2/5)
	up = crashStartServerAt(t, bin, upDB, "upstream-3", upAddr)

	deadline := time.Now().Add(30 * time.Second)
	for {
		st := forwardStatus(t, client, dev.base, "up")
		if st.Lag == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("device lag still %d after 30 s (state %s, last error %v)", st.Lag, st.State, st.LastError)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The pull side is done when the upstream group has nothing left.
	for {
		status, body, err := crashDo(ctx, client, http.MethodGet, up.base+"/api/v1/consumer-groups", nil)
		var groups []struct {
			Name     string `json:"name"`
			TotalLag int64  `json:"totalLag"`
		}
		if err == nil && status == http.StatusOK && json.Unmarshal(body, &groups) == nil {
			lag := int64(-1)
			for _, g := range groups {
				if g.Name == "comb-forward.down" {
					lag = g.TotalLag
				}
			}
			if lag == 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("upstream group comb-forward.down still lagging after 30 s: %s", crashSnippet(body))
		}
		time.Sleep(50 * time.Millisecond)
	}

	forwardCheckExactly(t, client, up.base, "telemetry", partitions, sent, 0, telemetry, "dev-1:")
	forwardCheckExactly(t, client, dev.base, "commands", partitions, sent, 1, commands, "")
	combtest.CheckInvariants(t, upDB)
	combtest.CheckInvariants(t, devDB)
}

// forwardPushAll pushes n messages to queue in requests of 100, payload
// {producer, seq} spread over partitions, and fails the test unless every
// push is answered 201 queued.
func forwardPushAll(t *testing.T, client *http.Client, base, queue string, producer, n, partitions int) map[string]crashItem {
	t.Helper()
	sent := map[string]crashItem{}
	for start := 0; start < n; start += 100 {
		var items []map[string]any
		for seq := start; seq < min(start+100, n); seq++ {
			id := uuid.Must(uuid.NewV7()).String()
			part := fmt.Sprintf("p%d", seq%partitions)
			sent[id] = crashItem{Producer: producer, Seq: seq, Partition: part}
			items = append(items, map[string]any{"queue": queue, "partition": part, "transactionId": id,
				"payload": map[string]int{"producer": producer, "seq": seq}})
		}
		status, body, err := crashDo(context.Background(), client, http.MethodPost, base+"/api/v1/push", map[string]any{"items": items})
		if err != nil || status != http.StatusCreated {
			t.Fatalf("push to %s: HTTP %d %v %s", queue, status, err, crashSnippet(body))
		}
	}
	return sent
}

type forwardState struct {
	State     string  `json:"state"`
	Lag       int64   `json:"lag"`
	Forwarded int64   `json:"forwarded"`
	LastError *string `json:"lastError"`
}

func forwardStatus(t *testing.T, client *http.Client, base, name string) forwardState {
	t.Helper()
	status, body, err := crashDo(context.Background(), client, http.MethodGet, base+"/api/v1/forwarders/"+name, nil)
	var st forwardState
	if err != nil || status != http.StatusOK || json.Unmarshal(body, &st) != nil {
		t.Fatalf("forwarder %s status: HTTP %d %v %s", name, status, err, crashSnippet(body))
	}
	return st
}

// forwardCheckExactly drains queue at base with a fresh group and checks it
// holds each message producer sent exactly once, with its transactionId
// behind prefix, in order per partition, and nothing else.
func forwardCheckExactly(t *testing.T, client *http.Client, base, queue string, partitions int,
	sent map[string]crashItem, producer, want int, prefix string) {
	t.Helper()
	got, errs := crashDrain(client, base, queue, "verify", partitions, true)
	for _, e := range errs {
		t.Error(e)
	}
	for i := range got {
		id, ok := strings.CutPrefix(got[i].TransactionID, prefix)
		if !ok {
			t.Errorf("%s: %s lacks the device's prefix %q", queue, got[i].TransactionID, prefix)
		}
		got[i].TransactionID = id
	}
	seen := map[string]bool{}
	for _, m := range got {
		if seen[m.TransactionID] {
			t.Errorf("%s: %s delivered twice to one group", queue, m.TransactionID)
		}
		seen[m.TransactionID] = true
	}
	missing := 0
	for id, it := range sent {
		if it.Producer == producer && !seen[id] {
			missing++
		}
	}
	if missing > 0 || len(got) != want {
		t.Errorf("%s: %d messages delivered, %d distinct, %d of %d sent missing", queue, len(got), len(seen), missing, want)
	}
	crashCheckMessages(t, got, sent)
}

// queenItem is one message sent through a forwarder to or from Queen.
type queenItem struct {
	ID        string // transactionId where it was first pushed
	Partition string
	Seq       int
	TraceID   string
}

// queenMsg is one message as a pop of Queen or comb delivers it.
type queenMsg struct {
	TransactionID string  `json:"transactionId"`
	PartitionID   string  `json:"partitionId"`
	Partition     string  `json:"partition"`
	LeaseID       string  `json:"leaseId"`
	TraceID       *string `json:"traceId"`
	Data          struct {
		Seq *int `json:"seq"`
	} `json:"data"`
}

// TestForwardingToAndFromARealQueenSurvivesQueenKillsAndACombKill runs
// comb serve as its own process with a push forwarder into a real Queen
// (on PostgreSQL) and a pull forwarder out of it. Each direction in turn
// goes through two SIGKILLs of Queen and one of comb, mid-stream. At the
// end Queen holds each of the device's messages exactly once, in order per
// partition, with payload, partition and traceId as pushed and the
// transactionId behind the device's prefix; the device holds each of
// Queen's messages exactly once, the same way, with the transactionId as
// Queen had it.
func TestForwardingToAndFromARealQueenSurvivesQueenKillsAndACombKill(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Queen and kills servers; skipped with -short")
	}
	const (
		n          = 3000 // each way
		partitions = 4
		prefix     = "dev-a:"
	)
	q := queentest.Start(t)
	bin := crashBuildBinary(t)
	db := filepath.Join(t.TempDir(), "device.db")
	addr := crashFreeAddr(t)
	flags := []string{"--device-id", "dev-a",
		"--forward", "name=up,queue=telemetry,batch=50,upstream=" + q.URL,
		"--forward", "name=down,direction=pull,queue=commands,batch=50,upstream=" + q.URL,
		"--forward-max-backoff", "300ms", "--forward-poll", "1s"}
	client := crashNewClient()
	dev := crashStartServerAt(t, bin, db, "device-1", addr, flags...)

	// Push direction: the device's backlog drains into Queen through the
	// kills.
	sent := queenPushAll(t, client, dev.base, "telemetry", n, partitions, http.StatusCreated)
	kills := 0
	killAt := func(progress func() int64, at int64, victim string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for progress() < at && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		t.Logf("kill -9 %s at progress %d of %d", victim, progress(), n)
		kills++
		if victim == "queen" {
			q.Kill()
			q.Restart()
			return
		}
		dev.cmd.Process.Kill()
		<-dev.exited
		dev = crashStartServerAt(t, bin, db, fmt.Sprintf("device-%d", kills+1), addr, flags...)
	}
	pushed := func() int64 {
		status, body, err := crashDo(context.Background(), client, http.MethodGet, dev.base+"/api/v1/forwarders/up", nil)
		var st forwardState
		if err != nil || status != http.StatusOK || json.Unmarshal(body, &st) != nil {
			return 0 // restarting
		}
		return n - st.Lag
	}
	killAt(pushed, n/5, "queen")
	killAt(pushed, 2*n/5, "comb")
	killAt(pushed, 3*n/5, "queen")
	combtest.CheckFor(t, 60*time.Second, func() error {
		if st := forwardStatus(t, client, dev.base, "up"); st.Lag != 0 {
			return fmt.Errorf("device lag %d (state %s, last error %v)", st.Lag, st.State, st.LastError)
		}
		return nil
	})
	got := queenDrain(t, client, q.URL, "telemetry", "verify-telemetry", partitions)
	queenCheckExactly(t, "Queen telemetry", got, sent, prefix)

	// Pull direction: Queen's messages come down through the kills. A pop
	// whose reply a Queen kill swallowed stays leased until the lease
	// expires; a short lease keeps that wait short.
	if status, body, err := crashDo(context.Background(), client, http.MethodPost, q.URL+"/api/v1/configure",
		map[string]any{"queue": "commands", "options": map[string]any{"leaseTime": 2}}); err != nil || status/100 != 2 {
		t.Fatalf("configure commands on Queen: HTTP %d %v %s", status, err, crashSnippet(body))
	}
	commands := queenPushAll(t, client, q.URL, "commands", n, partitions, http.StatusOK)
	pulled := func() int64 {
		status, body, err := crashDo(context.Background(), client, http.MethodGet, dev.base+"/api/v1/resources/queues/commands", nil)
		var r struct {
			Totals struct {
				Total int64 `json:"total"`
			} `json:"totals"`
		}
		if err != nil || status != http.StatusOK || json.Unmarshal(body, &r) != nil {
			return 0
		}
		return r.Totals.Total
	}
	killAt(pulled, n/5, "queen")
	killAt(pulled, 2*n/5, "comb")
	killAt(pulled, 3*n/5, "queen")
	combtest.CheckFor(t, 90*time.Second, func() error {
		if got := pulled(); got < n {
			return fmt.Errorf("%d of %d commands on the device", got, n)
		}
		return nil
	})
	got = queenDrain(t, client, dev.base, "commands", "verify-commands", partitions)
	queenCheckExactly(t, "device commands", got, commands, "")
	if t.Failed() {
		t.Logf("queen log tail:\n%s", lastN(q.Log(), 3000))
	}
}

// queenPushAll pushes n messages to queue at base in requests of 100,
// payload {seq}, a traceId each, spread over partitions; every request
// must be answered want with every item queued.
func queenPushAll(t *testing.T, client *http.Client, base, queue string, n, partitions, want int) map[string]queenItem {
	t.Helper()
	sent := map[string]queenItem{}
	for start := 0; start < n; start += 100 {
		var items []map[string]any
		for seq := start; seq < min(start+100, n); seq++ {
			it := queenItem{ID: uuid.Must(uuid.NewV7()).String(), Partition: fmt.Sprintf("p%d", seq%partitions), Seq: seq,
				TraceID: uuid.NewString()}
			sent[it.ID] = it
			items = append(items, map[string]any{"queue": queue, "partition": it.Partition, "transactionId": it.ID,
				"traceId": it.TraceID, "payload": map[string]int{"seq": seq}})
		}
		status, body, err := crashDo(context.Background(), client, http.MethodPost, base+"/api/v1/push", map[string]any{"items": items})
		if err != nil || status != want || strings.Count(string(body), `"queued"`) != len(items) {
			t.Fatalf("push to %s at %s: HTTP %d %v %s", queue, base, status, err, crashSnippet(body))
		}
	}
	return sent
}

// queenDrain pops everything of queue's partitions p0... at base (Queen
// or comb) with a new consumer group that starts from the beginning,
// acking each batch, in delivery order. Each partition is popped by name:
// Queen finds a partition for a queue-wide pop through a lookup table
// that its buffer replay does not update at once.
func queenDrain(t *testing.T, client *http.Client, base, queue, group string, partitions int) []queenMsg {
	t.Helper()
	var all []queenMsg
	for p := range partitions {
		all = append(all, queenDrainPartition(t, client, base, queue, fmt.Sprintf("p%d", p), group)...)
	}
	return all
}

func queenDrainPartition(t *testing.T, client *http.Client, base, queue, partition, group string) []queenMsg {
	t.Helper()
	popURL := base + "/api/v1/pop/queue/" + url.PathEscape(queue) + "/partition/" + url.PathEscape(partition) + "?" +
		url.Values{"batch": {"500"}, "wait": {"false"}, "consumerGroup": {group}, "subscriptionMode": {"all"}}.Encode()
	var all []queenMsg
	ctx := context.Background()
	for empty := 0; empty < 2; {
		status, body, err := crashDo(ctx, client, http.MethodGet, popURL, nil)
		if err != nil || (status != http.StatusOK && status != http.StatusNoContent) {
			t.Fatalf("drain %s: HTTP %d %v %s", queue, status, err, crashSnippet(body))
		}
		var reply struct {
			Messages []queenMsg `json:"messages"`
		}
		if status == http.StatusOK {
			if err := json.Unmarshal(body, &reply); err != nil {
				t.Fatalf("drain %s: %v: %s", queue, err, crashSnippet(body))
			}
		}
		if len(reply.Messages) == 0 {
			empty++ // Queen may answer empty while it moves to the next partition
			time.Sleep(100 * time.Millisecond)
			continue
		}
		empty = 0
		all = append(all, reply.Messages...)
		acks := make([]map[string]any, len(reply.Messages))
		for i, m := range reply.Messages {
			acks[i] = map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "leaseId": m.LeaseID,
				"status": "completed"}
		}
		status, body, err = crashDo(ctx, client, http.MethodPost, base+"/api/v1/ack/batch",
			map[string]any{"acknowledgments": acks, "consumerGroup": group})
		if err != nil || status != http.StatusOK {
			t.Fatalf("drain %s: ack: HTTP %d %v %s", queue, status, err, crashSnippet(body))
		}
	}
	return all
}

// queenCheckExactly checks that got holds each message of sent exactly
// once, with transactionId prefix+ID, its partition, payload and traceId,
// in order within each partition, and nothing else.
func queenCheckExactly(t *testing.T, what string, got []queenMsg, sent map[string]queenItem, prefix string) {
	t.Helper()
	seen := map[string]bool{}
	last := map[string]int{}
	problems := 0
	report := func(format string, args ...any) {
		if problems++; problems <= 10 {
			t.Errorf(what+": "+format, args...)
		}
	}
	for _, m := range got {
		id, ok := strings.CutPrefix(m.TransactionID, prefix)
		it, known := sent[id]
		switch {
		case !ok || !known:
			report("%s was never sent", m.TransactionID)
			continue
		case seen[id]:
			report("%s delivered twice", m.TransactionID)
		case m.Partition != it.Partition || m.Data.Seq == nil || *m.Data.Seq != it.Seq:
			report("%s arrived in %s with payload seq %v; sent to %s with seq %d", m.TransactionID, m.Partition, m.Data.Seq,
				it.Partition, it.Seq)
		case m.TraceID == nil || *m.TraceID != it.TraceID:
			report("%s arrived with traceId %v, sent with %s", m.TransactionID, m.TraceID, it.TraceID)
		}
		if prev, ok := last[it.Partition]; ok && it.Seq <= prev {
			report("partition %s: seq %d after %d", it.Partition, it.Seq, prev)
		}
		last[it.Partition], seen[id] = it.Seq, true
	}
	if len(seen) != len(sent) || len(got) != len(sent) {
		t.Errorf("%s: %d delivered, %d distinct, %d sent", what, len(got), len(seen), len(sent))
	}
}

func lastN(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
