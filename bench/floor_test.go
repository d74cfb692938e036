package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// startTestFloor serves a floor of mode on a loopback port until the test
// ends.
func startTestFloor(t *testing.T, mode, client string) *combServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveFloor(ctx, mode, ln) }()
	c := newHTTPTarget("floor "+mode, ln.Addr().String(), client)
	t.Cleanup(func() {
		c.client.CloseIdleConnections()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serveFloor: %v", err)
		}
	})
	return c
}

// combPushReply is what comb serve answered a push of one message.
const combPushReply = `[{"index":0,"transaction_id":"0193a0b0-0000-7000-8000-000000000001",` +
	`"transactionId":"0193a0b0-0000-7000-8000-000000000001","status":"queued",` +
	`"message_id":"2dd23db4-bc5a-85f7-a800-000000000000","partition_id":"01a23606-2137-7c0f-9671-879a2f387795",` +
	`"trace_id":null,"queueName":"orders"}]`

// keys returns the keys of the first object in a JSON array, in order.
func keys(t *testing.T, data []byte) []string {
	t.Helper()
	var items []json.RawMessage
	if err := json.Unmarshal(data, &items); err != nil || len(items) == 0 {
		t.Fatalf("reply %s: %v", data, err)
	}
	dec := json.NewDecoder(bytes.NewReader(items[0]))
	var out []string
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, k.(string))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestFloorAnswersAsComb(t *testing.T) {
	for _, mode := range floorModes() {
		for _, client := range []string{"std", "lean"} {
			t.Run(mode+"/"+client, func(t *testing.T) {
				c := startTestFloor(t, mode, client)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				st, body, err := c.do(ctx, http.MethodGet, "/health", nil)
				if err != nil || st != http.StatusOK {
					t.Fatalf("health: %d %s %v", st, body, err)
				}
				pl := newPayloads()
				var seq atomic.Int64
				conn := c.conn()
				defer conn.Close()
				for _, n := range []int{1, 3, 100} {
					if got, err := c.pushOnce(ctx, conn, pushBody(nil, "orders", pl, &seq, n, 10), n); err != nil || got != n {
						t.Fatalf("push %d: %d queued, %v", n, got, err)
					}
				}
				st, reply, err := conn.do(ctx, http.MethodPost, "/api/v1/push", pushBody(nil, "orders", pl, &seq, 1, 10))
				if err != nil || st != http.StatusCreated {
					t.Fatalf("push: %d %s %v", st, reply, err)
				}
				if got, want := keys(t, reply), keys(t, []byte(combPushReply)); !slices.Equal(got, want) {
					t.Errorf("push reply keys %v, comb's %v", got, want)
				}
				if len(reply) != len(combPushReply) {
					t.Errorf("push reply of %d bytes, comb's %d: %s", len(reply), len(combPushReply), reply)
				}
				path := "/api/v1/pop/queue/orders?consumerGroup=g0&batch=100&wait=true&timeout=1000"
				var ackBody []byte
				if n, err := c.popAckOnce(ctx, conn, path, "g0", &ackBody); err != nil || n != 100 {
					t.Fatalf("pop+ack: %d acked, %v", n, err)
				}
				st, body, err = conn.do(ctx, http.MethodPost, "/api/v1/push", []byte(`{"items":[{"partition":"p"}]}`))
				if err != nil || st != http.StatusBadRequest {
					t.Errorf("push without a queue: %d %s %v", st, body, err)
				}
				st, _, err = conn.do(ctx, http.MethodGet, "/nowhere", nil)
				if err != nil || st != http.StatusNotFound {
					t.Errorf("unknown route: %d %v", st, err)
				}
			})
		}
	}
}

func BenchmarkFloorPushAnswer(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		b.Run("batch"+strconv.Itoa(n), func(b *testing.B) {
			f := newFloor()
			var seq atomic.Int64
			body := pushBody(nil, "orders", f.pl, &seq, n, 10)
			var out []byte
			b.ReportAllocs()
			for b.Loop() {
				var st int
				st, _, out = f.answer(http.MethodPost, "/api/v1/push", "", body, out[:0])
				if st != http.StatusCreated {
					b.Fatalf("push: %d %s", st, out)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n)/1e3, "µs/msg")
		})
	}
}
