package forward_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/forward"
	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/clock"
	"github.com/comb-broker/comb/internal/combtest"
)

var t0 = time.Date(2026, 7, 30, 8, 0, 0, 0, time.UTC)

// dev is the device id of the runners of these tests; the upstream sees
// each transactionId behind it.
const dev = "dev-1:"

// startRunner starts a runner over b, stopped at cleanup before b closes.
func startRunner(t *testing.T, b *broker.Broker, opts forward.Options) *forward.Runner {
	t.Helper()
	if opts.DeviceID == "" {
		opts.DeviceID = "dev-1"
	}
	opts.BufferSettle = cmpOr(opts.BufferSettle, 10*time.Millisecond)
	opts.BufferStall = cmpOr(opts.BufferStall, 50*time.Millisecond)
	opts.MinBackoff = cmpOr(opts.MinBackoff, time.Millisecond)
	opts.MaxBackoff = cmpOr(opts.MaxBackoff, 10*time.Millisecond)
	opts.Poll = cmpOr(opts.Poll, 200*time.Millisecond)
	r := forward.New(b, opts)
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r
}

func cmpOr(a, b time.Duration) time.Duration {
	if a != 0 {
		return a
	}
	return b
}

func push(t *testing.T, b *broker.Broker, items ...combtype.PushItem) {
	t.Helper()
	if _, err := b.Push(context.Background(), items); err != nil {
		t.Fatal(err)
	}
}

// popAll pops everything group gets from queue on s, acking as it goes.
func popAll(t *testing.T, s *combtest.Server, queue, group string) []combtest.PopMessage {
	t.Helper()
	var out []combtest.PopMessage
	for {
		r := s.Pop("/api/v1/pop/queue/" + queue + "?batch=1000&consumerGroup=" + group)
		if len(r.Messages) == 0 {
			return out
		}
		for _, m := range r.Messages {
			s.Ack(m, "completed", group)
		}
		out = append(out, r.Messages...)
	}
}

// waitLag waits until forwarder name's lag is want and, since the
// counters move just after the local ack, until it has forwarded at least
// forwarded messages.
func waitLag(t *testing.T, r *forward.Runner, name string, want, forwarded int64) *broker.ForwarderStatus {
	t.Helper()
	var st *broker.ForwarderStatus
	combtest.CheckFor(t, 10*time.Second, func() error {
		var err error
		if st, err = r.Get(context.Background(), "", name); err != nil {
			return err
		}
		if st.Lag != want || st.Forwarded < forwarded {
			return fmt.Errorf("lag %d, forwarded %d; want %d, %d (state %s, last error %q)", st.Lag, st.Forwarded, want,
				forwarded, st.State, st.LastError)
		}
		return nil
	})
	return st
}

func TestAPushForwarderCopiesPartitionsTransactionIDsPayloadsAndTraceIDsInOrder(t *testing.T) {
	up := combtest.MustServer(t, combtest.Options{})
	clk := clock.NewManual(t0)
	b := combtest.MustOpenBroker(t, combtest.Options{})
	const trace = "0b9a3c2e-8f1d-4e5a-9b7c-1d2e3f4a5b6c"
	for i := range 30 {
		it := combtype.PushItem{Queue: "telemetry", Partition: fmt.Sprintf("p%d", i%3), TxnID: fmt.Sprintf("tx-%02d", i),
			Payload: fmt.Appendf(nil, `{"seq":%d}`, i)}
		if i == 4 {
			it.TraceID = trace
		}
		push(t, b, it)
	}
	r := startRunner(t, b, forward.Options{Clock: clk})
	if _, err := r.Create(context.Background(), &combtype.Forwarder{Name: "up", Queue: "telemetry", UpstreamURL: up.URL + "/",
		UpstreamQueue: "from-edge", Batch: 7}); err != nil {
		t.Fatal(err)
	}
	st := waitLag(t, r, "up", 0, 30)
	if st.Forwarded != 30 || !st.LastSuccessAt.Equal(t0) || st.State != "running" || st.Group != "comb-forward.up" {
		t.Errorf("status %+v: want 30 forwarded, last success at the clock's time, running, group comb-forward.up", st)
	}
	got := popAll(t, up, "from-edge", "check")
	if len(got) != 30 {
		t.Fatalf("upstream holds %d messages, want 30", len(got))
	}
	last := map[string]int{}
	for _, m := range got {
		var d struct{ Seq int }
		json.Unmarshal(m.Data, &d)
		if want := dev + fmt.Sprintf("tx-%02d", d.Seq); m.TransactionID != want || m.Partition != fmt.Sprintf("p%d", d.Seq%3) {
			t.Errorf("upstream message %s in %s carries seq %d", m.TransactionID, m.Partition, d.Seq)
		}
		if prev, ok := last[m.Partition]; ok && d.Seq <= prev {
			t.Errorf("partition %s: seq %d after %d", m.Partition, d.Seq, prev)
		}
		last[m.Partition] = d.Seq
		if (d.Seq == 4) != (m.TraceID != nil && *m.TraceID == trace) {
			t.Errorf("seq %d arrived with traceId %v", d.Seq, m.TraceID)
		}
	}
}

func TestAMessageTheUpstreamRefusesForGoodIsDeadLetteredLocallyAndThePartitionMovesOn(t *testing.T) {
	up := combtest.MustServer(t, combtest.Options{HTTP: func(c *httpd.Config) { c.MaxBodyBytes = 4096 }})
	b := combtest.MustOpenBroker(t, combtest.Options{})
	big := `{"blob":"` + strings.Repeat("x", 8000) + `"}`
	push(t, b, combtype.PushItem{Queue: "q", TxnID: "a", Payload: []byte(`{"n":1}`)},
		combtype.PushItem{Queue: "q", TxnID: "big", Payload: []byte(big)},
		combtype.PushItem{Queue: "q", TxnID: "c", Payload: []byte(`{"n":3}`)})
	r := startRunner(t, b, forward.Options{})
	if _, err := r.Create(context.Background(), &combtype.Forwarder{Name: "up", Queue: "q", UpstreamURL: up.URL}); err != nil {
		t.Fatal(err)
	}
	st := waitLag(t, r, "up", 0, 2)
	if st.Forwarded != 2 || st.DeadLettered != 1 || !strings.Contains(st.LastError, "413") {
		t.Errorf("status: forwarded %d, dead-lettered %d, last error %q; want 2, 1 and the upstream's 413",
			st.Forwarded, st.DeadLettered, st.LastError)
	}
	got := popAll(t, up, "q", "check")
	if len(got) != 2 || got[0].TransactionID != dev+"a" || got[1].TransactionID != dev+"c" {
		t.Errorf("upstream holds %v, want a then c", got)
	}
	dead, _, err := b.DLQList(context.Background(), combtype.DLQFilter{Queue: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 1 || dead[0].TxnID != "big" || dead[0].Group != "comb-forward.up" ||
		!strings.Contains(dead[0].ErrorMessage, "413") || !strings.Contains(dead[0].ErrorMessage, "larger than 4096") {
		t.Errorf("local DLQ %+v: want only big, for the forwarder's group, with the upstream's error", dead)
	}
}

func TestWhileTheUpstreamIsDownTheForwarderBacksOffExponentiallyWithBoundedJitterAndAcksNothing(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String()
	l.Close() // nothing listens there now
	b := combtest.MustOpenBroker(t, combtest.Options{})
	push(t, b, combtype.PushItem{Queue: "q", TxnID: "a", Payload: []byte(`1`)})
	var mu sync.Mutex
	var waits []time.Duration
	enough := make(chan struct{})
	r := startRunner(t, b, forward.Options{
		MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second,
		Jitter: func() float64 { return 0.5 },
		Sleep: func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			waits = append(waits, d)
			n := len(waits)
			mu.Unlock()
			if n == 7 {
				close(enough)
			}
			if n >= 7 {
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		},
	})
	if _, err := r.Create(context.Background(), &combtype.Forwarder{Name: "up", Queue: "q", UpstreamURL: down}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-enough:
	case <-time.After(10 * time.Second):
		t.Fatal("the forwarder did not retry 7 times")
	}
	st, err := r.Get(context.Background(), "", "up")
	if err != nil {
		t.Fatal(err)
	}
	if st.State != "backoff" || !strings.Contains(st.LastError, "unreachable") || st.Lag != 1 || st.Forwarded != 0 {
		t.Errorf("status %+v: want backoff, the connection error, lag 1, nothing forwarded", st)
	}
	mu.Lock()
	defer mu.Unlock()
	// d = min(100ms << k, 1s); the wait is d/2 + jitter*d/2.
	want := []time.Duration{75, 150, 300, 600, 750, 750, 750}
	for i, w := range want {
		if waits[i] != w*time.Millisecond {
			t.Errorf("waits %v, want %v ms", waits, want)
			break
		}
	}
}

func TestAPullForwarderFeedsTheLocalQueueFromAnUpstreamGroupInOrder(t *testing.T) {
	up := combtest.MustServer(t, combtest.Options{})
	for i := range 25 {
		up.Push(map[string]any{"queue": "commands", "partition": fmt.Sprintf("dev%d", i%2), "transactionId": fmt.Sprintf("c%02d", i),
			"payload": map[string]int{"seq": i}})
	}
	local := combtest.MustServer(t, combtest.Options{})
	r := startRunner(t, local.Broker, forward.Options{})
	if _, err := r.Create(context.Background(), &combtype.Forwarder{Name: "down", Direction: "pull", Queue: "cmds",
		UpstreamQueue: "commands", UpstreamURL: up.URL, Batch: 4}); err != nil {
		t.Fatal(err)
	}
	var got []combtest.PopMessage
	combtest.CheckFor(t, 10*time.Second, func() error {
		got = append(got, popAll(t, local, "cmds", "device")...)
		if len(got) < 25 {
			return fmt.Errorf("%d of 25 commands arrived", len(got))
		}
		return nil
	})
	last := map[string]int{}
	for _, m := range got {
		var d struct{ Seq int }
		json.Unmarshal(m.Data, &d)
		if m.TransactionID != fmt.Sprintf("c%02d", d.Seq) || m.Partition != fmt.Sprintf("dev%d", d.Seq%2) {
			t.Errorf("local message %s in %s carries seq %d", m.TransactionID, m.Partition, d.Seq)
		}
		if prev, ok := last[m.Partition]; ok && d.Seq <= prev {
			t.Errorf("partition %s: seq %d after %d", m.Partition, d.Seq, prev)
		}
		last[m.Partition] = d.Seq
	}
	// Acked upstream: the forwarder's group has nothing left there.
	combtest.CheckFor(t, 5*time.Second, func() error {
		groups, err := up.Broker.GroupList(context.Background())
		if err != nil {
			return err
		}
		for _, g := range groups {
			if g.Group == "comb-forward.down" && g.TotalLag == 0 {
				return nil
			}
		}
		return fmt.Errorf("upstream groups %+v", groups)
	})
}

func TestAPullBatchLeftUnackedByACrashIsGivenBackUpstreamAtStart(t *testing.T) {
	up := combtest.MustServer(t, combtest.Options{})
	for i := range 3 {
		up.Push(map[string]any{"queue": "commands", "transactionId": fmt.Sprintf("c%d", i), "payload": i})
	}
	// The crashed run popped the batch (the default lease is 300 s) and
	// recorded what it owed before pushing locally.
	popped := up.Pop("/api/v1/pop/queue/commands?batch=10&consumerGroup=comb-forward.down")
	if len(popped.Messages) != 3 {
		t.Fatalf("popped %d", len(popped.Messages))
	}
	var items []map[string]string
	for _, m := range popped.Messages {
		items = append(items, map[string]string{"transactionId": m.TransactionID, "partitionId": m.PartitionID,
			"leaseId": m.LeaseID, "status": "completed"})
	}
	owed, _ := json.Marshal(map[string]any{"leaseId": popped.Messages[0].LeaseID, "items": items})
	local := combtest.MustServer(t, combtest.Options{})
	ctx := context.Background()
	f := &combtype.Forwarder{Name: "down", Direction: "pull", Queue: "commands", UpstreamURL: up.URL, Paused: true}
	if err := local.Broker.Forwarders().Put(ctx, f, false); err != nil {
		t.Fatal(err)
	}
	if err := local.Broker.Forwarders().SetPendingAck(ctx, "down", string(owed)); err != nil {
		t.Fatal(err)
	}
	r := startRunner(t, local.Broker, forward.Options{})
	if _, err := r.SetPaused(ctx, "", "down", false); err != nil {
		t.Fatal(err)
	}
	combtest.CheckFor(t, 10*time.Second, func() error {
		if n, err := local.Broker.GroupBacklog(ctx, combtype.BacklogRequest{Queue: "commands", Group: "device"}); err != nil || n != 3 {
			return fmt.Errorf("local backlog %d, %v; want the 3 commands long before the 300 s lease ends", n, err)
		}
		return nil
	})
}

func TestARestartedPushForwarderDropsTheLeaseItsGroupLeftBehind(t *testing.T) {
	up := combtest.MustServer(t, combtest.Options{})
	b := combtest.MustOpenBroker(t, combtest.Options{})
	push(t, b, combtype.PushItem{Queue: "q", TxnID: "a", Payload: []byte(`1`)})
	// A previous run popped and died before acking: a 300 s lease.
	res, err := b.Pop(context.Background(), combtype.PopRequest{Queue: "q", Group: "comb-forward.up", Batch: 10})
	if err != nil || len(res.Messages) != 1 {
		t.Fatalf("pop: %v %v", res, err)
	}
	r := startRunner(t, b, forward.Options{})
	if _, err := r.Create(context.Background(), &combtype.Forwarder{Name: "up", Queue: "q", UpstreamURL: up.URL}); err != nil {
		t.Fatal(err)
	}
	waitLag(t, r, "up", 0, 1)
	if got := popAll(t, up, "q", "check"); len(got) != 1 {
		t.Errorf("upstream holds %d messages, want 1", len(got))
	}
}

func TestMessagesRetentionEvictsBeforeTheyAreForwardedAreCountedAndThePausePersists(t *testing.T) {
	up := combtest.MustServer(t, combtest.Options{})
	clk := clock.NewManual(t0)
	b := combtest.MustOpenBroker(t, combtest.Options{Clock: clk,
		Broker: func(o *broker.Options) { o.RetentionInterval = -1 }})
	ctx := context.Background()
	opts := combtype.QueueOptions{LeaseTime: 300, RetryLimit: 3, RetentionEnabled: true, RetentionSeconds: 60}
	if _, _, err := b.QueueConfigure(ctx, combtype.ConfigureRequest{Queue: "q", Options: opts}); err != nil {
		t.Fatal(err)
	}
	push(t, b, combtype.PushItem{Queue: "q", TxnID: "first", Payload: []byte(`1`)})
	r := startRunner(t, b, forward.Options{Clock: clk})
	if _, err := r.Create(ctx, &combtype.Forwarder{Name: "up", Queue: "q", UpstreamURL: up.URL}); err != nil {
		t.Fatal(err)
	}
	waitLag(t, r, "up", 0, 1)
	if _, err := r.SetPaused(ctx, "", "up", true); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		push(t, b, combtype.PushItem{Queue: "q", TxnID: fmt.Sprintf("lost-%d", i), Payload: []byte(`2`)})
	}
	clk.Advance(2 * time.Minute)
	if _, err := b.RetentionSweep(ctx); err != nil {
		t.Fatal(err)
	}
	push(t, b, combtype.PushItem{Queue: "q", TxnID: "last", Payload: []byte(`3`)})

	// A runner started anew finds it paused.
	r.Stop()
	r = startRunner(t, b, forward.Options{Clock: clk})
	if st, err := r.Get(ctx, "", "up"); err != nil || st.State != "paused" || st.Lag != 1 {
		t.Fatalf("after a restart: %+v, %v; want paused with lag 1", st, err)
	}
	if _, err := r.SetPaused(ctx, "", "up", false); err != nil {
		t.Fatal(err)
	}
	waitLag(t, r, "up", 0, 1)
	// A status is read in parts (the stored definition, then the lag), so
	// one read may see the lag of after the batch and the count of before.
	combtest.CheckFor(t, 10*time.Second, func() error {
		st, err := r.Get(ctx, "", "up")
		if err != nil {
			return err
		}
		if st.Evicted != 4 || !strings.Contains(st.LastError, "evicted 4") {
			return fmt.Errorf("evicted %d, last error %q; want the 4 messages retention removed unforwarded", st.Evicted, st.LastError)
		}
		return nil
	})
	got := popAll(t, up, "q", "check")
	if len(got) != 2 || got[0].TransactionID != dev+"first" || got[1].TransactionID != dev+"last" {
		t.Errorf("upstream holds %v, want first and last", got)
	}
}

func TestInvalidDefinitionsAreRefusedAndNothingIsStored(t *testing.T) {
	b := combtest.MustOpenBroker(t, combtest.Options{})
	r := startRunner(t, b, forward.Options{})
	for _, f := range []combtype.Forwarder{
		{Name: "", Queue: "q", UpstreamURL: "http://h"},
		{Name: "a b", Queue: "q", UpstreamURL: "http://h"},
		{Name: "n", Queue: "", UpstreamURL: "http://h"},
		{Name: "n", Queue: "q", UpstreamURL: "ftp://h"},
		{Name: "n", Queue: "q", UpstreamURL: "h:1"},
		{Name: "n", Queue: "q", UpstreamURL: "http://h", Direction: "sideways"},
		{Name: "n", Queue: "q.*", UpstreamURL: "http://h", Direction: "pull"},
		{Name: "n", Queue: "q.*", UpstreamURL: "http://h", UpstreamQueue: "other"},
		{Name: "n", Queue: "q[", UpstreamURL: "http://h"},
		{Name: "n", Queue: "q", UpstreamURL: "http://h", Batch: combtype.ForwarderMaxBatch + 1},
	} {
		if _, err := r.Create(context.Background(), &f); !errors.Is(err, combtype.ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", f, err)
		}
	}
	if list, err := r.List(context.Background(), ""); err != nil || len(list) != 0 {
		t.Errorf("stored %v, %v", list, err)
	}
}

func TestAPatternForwarderForwardsEveryMatchingQueueUnderItsOwnName(t *testing.T) {
	up := combtest.MustServer(t, combtest.Options{})
	b := combtest.MustOpenBroker(t, combtest.Options{})
	push(t, b, combtype.PushItem{Queue: "sensors.a", TxnID: "a", Payload: []byte(`1`)},
		combtype.PushItem{Queue: "sensors.b", TxnID: "b", Payload: []byte(`2`)},
		combtype.PushItem{Queue: "other", TxnID: "o", Payload: []byte(`3`)})
	r := startRunner(t, b, forward.Options{})
	if _, err := r.Create(context.Background(), &combtype.Forwarder{Name: "s", Queue: "sensors.*", UpstreamURL: up.URL}); err != nil {
		t.Fatal(err)
	}
	// A queue that appears later is picked up too.
	push(t, b, combtype.PushItem{Queue: "sensors.c", TxnID: "c", Payload: []byte(`4`)})
	combtest.CheckFor(t, 10*time.Second, func() error {
		for _, q := range []string{"sensors.a", "sensors.b", "sensors.c"} {
			if n, err := up.Broker.GroupBacklog(context.Background(), combtype.BacklogRequest{Queue: q, Group: "check"}); err != nil || n != 1 {
				return fmt.Errorf("upstream %s holds %d, %v", q, n, err)
			}
		}
		return nil
	})
	if n, _ := up.Broker.GroupBacklog(context.Background(), combtype.BacklogRequest{Queue: "other", Group: "check"}); n != 0 {
		t.Errorf("the non-matching queue reached the upstream: %d messages", n)
	}
}

func TestAForwarderReportsHowFarBehindItIsAndLogsItsRecovery(t *testing.T) {
	up := combtest.MustServer(t, combtest.Options{})
	target, err := url.Parse(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	// The link: down (503) until opened, then the real upstream.
	var open atomic.Bool
	proxy := httputil.NewSingleHostReverseProxy(target)
	link := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !open.Load() {
			http.Error(w, `{"error":"link down"}`, http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer link.Close()

	clk := clock.NewManual(t0)
	b := combtest.MustOpenBroker(t, combtest.Options{Clock: clk})
	for i := range 3 {
		push(t, b, combtype.PushItem{Queue: "q", TxnID: fmt.Sprintf("m%d", i), Payload: []byte(`1`)})
	}
	clk.Advance(90 * time.Second)
	var logs combtest.Logs
	r := startRunner(t, b, forward.Options{Clock: clk, Logger: logs.Logger()})
	ctx := context.Background()
	if _, err := r.Create(ctx, &combtype.Forwarder{Name: "up", Queue: "q", UpstreamURL: link.URL}); err != nil {
		t.Fatal(err)
	}
	combtest.CheckFor(t, 10*time.Second, func() error {
		st, err := r.Get(ctx, "", "up")
		if err != nil {
			return err
		}
		if st.State != "backoff" || st.Lag != 3 || st.OldestUnforwardedAge != 90*time.Second || !st.OldestUnforwardedAt.Equal(t0) ||
			st.LagSeconds != -1 || !st.LastErrorAt.Equal(t0.Add(90*time.Second)) || !strings.Contains(st.LastError, "link down") {
			return fmt.Errorf("while the link is down: %+v", st)
		}
		return nil
	})
	clk.Advance(30 * time.Second)
	open.Store(true)
	st := waitLag(t, r, "up", 0, 3)
	if st.LagSeconds != 120 || st.OldestUnforwardedAge != 0 || !st.OldestUnforwardedAt.IsZero() || !st.LastSuccessAt.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("once delivered: lag %d s, oldest %v (%v), last success %v; want 120 s, none, and the clock's time",
			int(st.LagSeconds), st.OldestUnforwardedAge, st.OldestUnforwardedAt, st.LastSuccessAt)
	}
	if out := logs.String(); strings.Count(out, "forwarder recovered") != 1 || !strings.Contains(out, "failingFor=30s") {
		t.Errorf("want one recovery line, failing for the 30 s the clock moved:\n%s", out)
	}
}

func TestItemsACombUpstreamParksInMaintenanceAreAckedOnlyOnceStoredAndInOrder(t *testing.T) {
	up := combtest.MustServer(t, combtest.Options{})
	ctx := context.Background()
	if _, err := up.Broker.MaintenanceSetPush(ctx, true); err != nil {
		t.Fatal(err)
	}
	b := combtest.MustOpenBroker(t, combtest.Options{})
	for i := range 6 {
		push(t, b, combtype.PushItem{Queue: "q", TxnID: fmt.Sprintf("m%d", i), Payload: []byte(`1`)})
	}
	r := startRunner(t, b, forward.Options{})
	if _, err := r.Create(ctx, &combtype.Forwarder{Name: "up", Queue: "q", UpstreamURL: up.URL, Batch: 3}); err != nil {
		t.Fatal(err)
	}
	combtest.CheckFor(t, 10*time.Second, func() error {
		st, err := r.Get(ctx, "", "up")
		if err != nil {
			return err
		}
		if !strings.Contains(st.LastError, "maintenance is on") {
			return fmt.Errorf("last error %q; want the upstream's maintenance", st.LastError)
		}
		return nil
	})
	time.Sleep(300 * time.Millisecond) // many retries at the test's backoff
	if st, err := r.Get(ctx, "", "up"); err != nil || st.Lag != 6 || st.Forwarded != 0 || st.DeadLettered != 0 {
		t.Fatalf("during maintenance: %+v, %v; want all 6 waiting, none acked or dead-lettered", st, err)
	}
	if _, err := up.Broker.MaintenanceSetPush(ctx, false); err != nil {
		t.Fatal(err)
	}
	waitLag(t, r, "up", 0, 6)
	got := popAll(t, up, "q", "check")
	var ids []string
	for _, m := range got {
		ids = append(ids, m.TransactionID)
	}
	if want := []string{dev + "m0", dev + "m1", dev + "m2", dev + "m3", dev + "m4", dev + "m5"}; fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Errorf("upstream holds %v, want %v", ids, want)
	}
}
