package forward_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/forward"
	"github.com/comb-broker/comb/internal/combtest"
	"github.com/comb-broker/comb/internal/queentest"
)

// These tests forward into a real Queen on PostgreSQL. Queen answers a
// push 200 (comb 201) with each item queued, duplicate or buffered, and
// parks a whole request whose insert its database refuses in its file
// buffer, answering every item buffered; its replay of that request then
// fails for ever.

// queenMessages pops everything of queue's partitions from Queen with a
// new group that starts at the beginning, acking as it goes, and returns
// the transactionIds in delivery order per partition. Each partition is
// popped by name: Queen finds a partition for a queue-wide pop through a
// lookup table that its buffer replay does not update at once.
func queenMessages(t *testing.T, q *queentest.Queen, queue, group string, partitions ...string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, p := range partitions {
		queenDrainPartition(t, q, queue, p, group, out)
	}
	return out
}

func queenDrainPartition(t *testing.T, q *queentest.Queen, queue, partition, group string, out map[string][]string) {
	t.Helper()
	queen := &combtest.Client{TB: t, URL: q.URL, HTTP: http.DefaultClient}
	popPath := "/api/v1/pop/queue/" + url.PathEscape(queue) + "/partition/" + url.PathEscape(partition) + "?" +
		url.Values{"batch": {"1000"}, "wait": {"false"}, "consumerGroup": {group}, "subscriptionMode": {"all"}}.Encode()
	for empty := 0; empty < 2; {
		r := queen.Do(http.MethodGet, popPath, nil)
		status, body := r.Status, r.Body
		var reply struct {
			Messages []struct {
				TransactionID string `json:"transactionId"`
				PartitionID   string `json:"partitionId"`
				Partition     string `json:"partition"`
				LeaseID       string `json:"leaseId"`
			} `json:"messages"`
		}
		if status != http.StatusOK || json.Unmarshal(body, &reply) != nil {
			t.Fatalf("pop %s from Queen: HTTP %d %s", queue, status, body)
		}
		if len(reply.Messages) == 0 {
			empty++
			time.Sleep(100 * time.Millisecond)
			continue
		}
		empty = 0
		var acks []map[string]string
		for _, m := range reply.Messages {
			out[m.Partition] = append(out[m.Partition], m.TransactionID)
			acks = append(acks, map[string]string{"transactionId": m.TransactionID, "partitionId": m.PartitionID,
				"leaseId": m.LeaseID, "status": "completed"})
		}
		if r := queen.Do(http.MethodPost, "/api/v1/ack/batch",
			map[string]any{"acknowledgments": acks, "consumerGroup": group}); r.Status != http.StatusOK {
			t.Fatalf("ack on Queen: HTTP %d %s", r.Status, r.Body)
		}
	}
}

// poison is a message Queen cannot store.
type poison struct {
	why  string
	item combtype.PushItem
	// noPrefix: the forwarder sends transactionIds as they are (a prefix
	// would make a long one fit by digesting it).
	noPrefix bool
	// queenSays is a piece of the error the local DLQ must carry.
	queenSays string
}

func TestMessagesARealQueenCannotStoreAreDeadLetteredLocallyAndTheRestOfTheBatchArrives(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Queen; skipped with -short")
	}
	q := queentest.Start(t)
	long := strings.Repeat("x", 300)
	for _, tc := range []struct {
		name string
		// candidates: the first two the local broker accepts are used;
		// later ones stand in for any a stricter local push refuses.
		candidates []poison
	}{
		{"refused with 400", []poison{
			{why: "lone surrogate", item: combtype.PushItem{Payload: []byte(`{"a":"\ud800"}`)}, queenSays: "surrogate"},
			{why: "number beyond a double", item: combtype.PushItem{Payload: []byte(`{"a":1e400}`)}, queenSays: "number overflow"},
		}},
		{"parked in Queen's buffer", []poison{
			{why: "NUL in payload", item: combtype.PushItem{Payload: []byte(`{"a":"x\u0000y"}`)}, queenSays: "buffered"},
			{why: "300-character transactionId", item: combtype.PushItem{TxnID: long, Payload: []byte(`1`)}, noPrefix: true,
				queenSays: "buffered"},
			{why: "traceId that is not a UUID", item: combtype.PushItem{TraceID: "trace-1", Payload: []byte(`1`)}, queenSays: "buffered"},
			{why: "300-character partition", item: combtype.PushItem{Partition: long, Payload: []byte(`1`)}, queenSays: "buffered"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			queue := "q" + strings.ReplaceAll(strings.ReplaceAll(tc.name, " ", ""), "'", "")
			b := combtest.MustOpenBroker(t, combtest.Options{})
			ctx := context.Background()
			// A batch of 10; the local broker stores 8 good messages and
			// 2 poisoned ones at positions 3 and 7.
			var bad []poison
			noPrefix := false
			good := map[string]bool{}
			var goodOrder []string
			next := 0
			for i := range 10 {
				if i == 3 || i == 7 {
					for ; next < len(tc.candidates); next++ {
						p := tc.candidates[next]
						p.item.Queue = queue
						p.item.TxnID = fmt.Sprintf("%s%d", p.item.TxnID, i)
						if p.item.Partition == "" {
							p.item.Partition = "Default"
						}
						if _, err := b.Push(ctx, []combtype.PushItem{p.item}); err != nil {
							if !errors.Is(err, combtype.ErrInvalid) {
								t.Fatal(err)
							}
							t.Logf("the local broker refuses the %s poison: %v", p.why, err)
							continue
						}
						bad = append(bad, p)
						noPrefix = noPrefix || p.noPrefix
						next++
						break
					}
					continue
				}
				id := fmt.Sprintf("good-%d", i)
				push(t, b, combtype.PushItem{Queue: queue, TxnID: id, Payload: fmt.Appendf(nil, `{"seq":%d}`, i)})
				good[id] = true
				goodOrder = append(goodOrder, id)
			}
			if len(bad) == 0 {
				t.Skip("the local broker refuses every poison of this kind at push; nothing of it can reach a forwarder")
			}
			r := startRunner(t, b, forward.Options{})
			f := &combtype.Forwarder{Name: "up", Queue: queue, UpstreamURL: q.URL, Batch: 10}
			prefix := dev
			if noPrefix {
				f.IDPrefix, prefix = combtype.ForwarderNoIDPrefix, ""
			}
			if _, err := r.Create(ctx, f); err != nil {
				t.Fatal(err)
			}
			var st *broker.ForwarderStatus
			combtest.CheckFor(t, 60*time.Second, func() error {
				var err error
				if st, err = r.Get(ctx, "", "up"); err != nil {
					return err
				}
				if st.Lag != 0 || st.Forwarded+st.DeadLettered < 10-2+int64(len(bad)) {
					return fmt.Errorf("lag %d, forwarded %d, dead-lettered %d (state %s, last error %q)", st.Lag, st.Forwarded,
						st.DeadLettered, st.State, st.LastError)
				}
				return nil
			})
			if st.Forwarded != 8 || st.DeadLettered != int64(len(bad)) {
				t.Errorf("forwarded %d, dead-lettered %d; want 8 and %d", st.Forwarded, st.DeadLettered, len(bad))
			}
			got := queenMessages(t, q, queue, "check", "Default")
			var ids []string
			for _, part := range got {
				ids = append(ids, part...)
			}
			want := make([]string, len(goodOrder))
			for i, id := range goodOrder {
				want[i] = prefix + id
			}
			if fmt.Sprint(ids) != fmt.Sprint(want) {
				t.Errorf("Queen holds %v, want the good ones, in order: %v", ids, want)
			}
			dead, _, err := b.DLQList(ctx, combtype.DLQFilter{Queue: queue})
			if err != nil {
				t.Fatal(err)
			}
			if len(dead) != len(bad) {
				t.Fatalf("local DLQ holds %d messages, want the %d poisoned: %+v", len(dead), len(bad), dead)
			}
			for _, p := range bad {
				found := false
				for _, d := range dead {
					if d.TxnID == p.item.TxnID {
						found = true
						if !strings.Contains(d.ErrorMessage, p.queenSays) || !strings.Contains(d.ErrorMessage, q.URL) {
							t.Errorf("%s: DLQ error %q; want Queen's answer (%q) and the upstream", p.why, d.ErrorMessage, p.queenSays)
						}
					}
				}
				if !found {
					t.Errorf("%s: %s not in the local DLQ", p.why, p.item.TxnID)
				}
			}
		})
	}
}

func TestItemsARealQueenParksInMaintenanceAreAckedOnlyOnceItStoresThem(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Queen; skipped with -short")
	}
	q := queentest.Start(t)
	queen := &combtest.Client{TB: t, URL: q.URL, HTTP: http.DefaultClient}
	ctx := context.Background()
	if r := queen.Do(http.MethodPost, "/api/v1/system/maintenance", map[string]bool{"enabled": true}); r.Status != http.StatusOK {
		t.Fatalf("maintenance on: HTTP %d %s", r.Status, r.Body)
	}
	b := combtest.MustOpenBroker(t, combtest.Options{})
	for i := range 20 {
		push(t, b, combtype.PushItem{Queue: "m", Partition: fmt.Sprintf("p%d", i%2), TxnID: fmt.Sprintf("m-%02d", i),
			Payload: fmt.Appendf(nil, `{"seq":%d}`, i)})
	}
	r := startRunner(t, b, forward.Options{BufferSettle: 50 * time.Millisecond,
		// Queen starts its replay up to a second after maintenance ends:
		// a shorter stall would resend the items before it and race it.
		BufferStall: 5 * time.Second})
	if _, err := r.Create(ctx, &combtype.Forwarder{Name: "up", Queue: "m", UpstreamURL: q.URL, Batch: 20}); err != nil {
		t.Fatal(err)
	}
	// Queen answers every push buffered and stores nothing while its
	// maintenance is on: nothing may be acked, nothing dead-lettered.
	combtest.CheckFor(t, 10*time.Second, func() error {
		st, err := r.Get(ctx, "", "up")
		if err != nil {
			return err
		}
		if !strings.Contains(st.LastError, "buffered") || !strings.Contains(st.LastError, "maintenance is on") {
			return fmt.Errorf("last error %q; want the buffered answer and the maintenance", st.LastError)
		}
		return nil
	})
	time.Sleep(time.Second)
	st, err := r.Get(ctx, "", "up")
	if err != nil {
		t.Fatal(err)
	}
	if st.Lag != 20 || st.Forwarded != 0 || st.DeadLettered != 0 {
		t.Errorf("during maintenance: lag %d, forwarded %d, dead-lettered %d; want 20, 0, 0", st.Lag, st.Forwarded, st.DeadLettered)
	}
	if r := queen.Do(http.MethodPost, "/api/v1/system/maintenance", map[string]bool{"enabled": false}); r.Status != http.StatusOK {
		t.Fatalf("maintenance off: HTTP %d %s", r.Status, r.Body)
	}
	st = waitLag(t, r, "up", 0, 20)
	if st.DeadLettered != 0 {
		t.Errorf("dead-lettered %d, want 0", st.DeadLettered)
	}
	got := queenMessages(t, q, "m", "check", "p0", "p1")
	for p, ids := range got {
		var want []string
		for i := range 20 {
			if fmt.Sprintf("p%d", i%2) == p {
				want = append(want, fmt.Sprintf("%sm-%02d", dev, i))
			}
		}
		if fmt.Sprint(ids) != fmt.Sprint(want) {
			t.Errorf("partition %s in Queen: %v, want each once in order: %v", p, ids, want)
		}
	}
	if len(got["p0"])+len(got["p1"]) != 20 {
		t.Errorf("Queen holds %v, want 20 messages in p0 and p1", got)
	}
}

func TestTwoDevicesUsingTheSameTransactionIDsIntoOneQueenPartitionBothArrive(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Queen; skipped with -short")
	}
	q := queentest.Start(t)
	ctx := context.Background()
	// Two devices with their own databases and no device id given: each
	// chooses one and keeps it.
	var ids []string
	for range 2 {
		b := combtest.MustOpenBroker(t, combtest.Options{})
		push(t, b, combtype.PushItem{Queue: "readings", Partition: "site-1", TxnID: "reading-1", Payload: []byte(`{"v":1}`)})
		r := forward.New(b, forward.Options{MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond})
		if err := r.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Stop)
		if _, err := r.Create(ctx, &combtype.Forwarder{Name: "up", Queue: "readings", UpstreamURL: q.URL}); err != nil {
			t.Fatal(err)
		}
		st := waitLag(t, r, "up", 0, 1)
		if st.Duplicates != 0 {
			t.Errorf("device %s: Queen answered duplicate", st.IDPrefix)
		}
		id, err := r.DeviceID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// The id is kept: a runner started anew over the same database
		// has it too.
		r2 := forward.New(b, forward.Options{})
		if id2, err := r2.DeviceID(ctx); err != nil || id2 != id {
			t.Errorf("device id %q, then %q (%v)", id, id2, err)
		}
		ids = append(ids, id)
	}
	got := queenMessages(t, q, "readings", "check", "site-1")["site-1"]
	want := []string{ids[0] + ":reading-1", ids[1] + ":reading-1"}
	if ids[0] == ids[1] || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Queen holds %v, want both devices' reading-1: %v", got, want)
	}

	// Without the prefix the second device's reading is taken for a resend
	// of the first's: it is not stored, and the forwarder counts it.
	var dups int64
	for i := range 2 {
		b := combtest.MustOpenBroker(t, combtest.Options{})
		push(t, b, combtype.PushItem{Queue: "bare", Partition: "site-1", TxnID: "reading-1", Payload: fmt.Appendf(nil, `{"v":%d}`, i)})
		r := startRunner(t, b, forward.Options{})
		if _, err := r.Create(ctx, &combtype.Forwarder{Name: "up", Queue: "bare", UpstreamURL: q.URL, IDPrefix: combtype.ForwarderNoIDPrefix}); err != nil {
			t.Fatal(err)
		}
		dups += waitLag(t, r, "up", 0, 1).Duplicates
	}
	if got := queenMessages(t, q, "bare", "check", "site-1")["site-1"]; len(got) != 1 || dups != 1 {
		t.Errorf("with idPrefix none: Queen holds %v and the forwarders counted %d duplicates; want one reading and 1", got, dups)
	}
}
