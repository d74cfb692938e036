//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The floor's pop reply must cost what comb's does: its bytes are those
// json.Marshal writes for the same reply.
func TestAppendPopReplyIsJSONMarshal(t *testing.T) {
	for _, s := range []string{"plain", `q"uo\te`, "<&>", "ünï", "tab\there", ""} {
		r := popReply{Success: true, Queue: s, Partition: "Default", PartitionID: newID(), LeaseID: newID(),
			ConsumerGroup: "g-" + s, PartitionsClaimed: 1,
			Messages: []popMessage{
				{ID: newID(), TransactionID: s, PartitionID: "p", Partition: "Default", Queue: s, LeaseID: "l",
					ConsumerGroup: s, Data: json.RawMessage(`{"n":1,"s":"x"}`), CreatedAt: "2026-12-02T09:06:53.560061Z"},
				{ID: "b", TransactionID: "t", RetryCount: 2},
			}}
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendPopReply(nil, r); string(got) != string(want) {
			t.Errorf("%q:\n got %s\nwant %s", s, got, want)
		}
	}
}

// A floor answers the measurement's requests: parked pops wake with the
// pushed message, acks answer, and it stops when asked.
func TestFloorWakesParkedPops(t *testing.T) {
	for _, mode := range []string{floorNetHTTP, floorRaw} {
		t.Run(mode, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			served := make(chan error, 1)
			go func() { served <- serveFloor(ctx, mode, ln, "") }()
			defer func() {
				cancel()
				if err := <-served; err != nil {
					t.Errorf("serve: %v", err)
				}
			}()
			base := "http://" + ln.Addr().String()
			c := &http.Client{Timeout: 10 * time.Second}
			const pops = 3
			type got struct {
				status int
				body   string
				err    error
			}
			answers := make(chan got, pops)
			for i := range pops {
				go func() {
					resp, err := c.Get(fmt.Sprintf("%s/api/v1/pop/queue/parked?consumerGroup=g-%d&wait=true&timeout=5000&batch=1", base, i))
					if err != nil {
						answers <- got{err: err}
						return
					}
					defer resp.Body.Close()
					b, err := io.ReadAll(resp.Body)
					answers <- got{status: resp.StatusCode, body: string(b), err: err}
				}()
			}
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				if n, err := parkedPops(c, base); err == nil && n == pops {
					break
				} else if time.Now().After(deadline) {
					t.Fatalf("parked %d of %d: %v", n, pops, err)
				}
			}
			resp, err := c.Post(base+"/api/v1/push", "application/json",
				strings.NewReader(`{"items":[{"queue":"parked","transactionId":"wake-1","payload":{ "n": 1 }}]}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				t.Fatalf("push: %d", resp.StatusCode)
			}
			for range pops {
				a := <-answers
				if a.err != nil || a.status != http.StatusOK || !strings.Contains(a.body, `"transactionId":"wake-1"`) ||
					!strings.Contains(a.body, `"data":{"n":1}`) {
					t.Errorf("pop: %d %q %v", a.status, a.body, a.err)
				}
			}
			resp, err = c.Post(base+"/api/v1/ack", "application/json", strings.NewReader(`{"transactionId":"wake-1"}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("ack: %d", resp.StatusCode)
			}
			m, err := scrape(c, base)
			if err != nil || m["comb_parked_pops"] != 0 || m["comb_commit_batch_size_count"] != 0 {
				t.Errorf("metrics after the wake: %v %v", m, err)
			}
		})
	}
}
