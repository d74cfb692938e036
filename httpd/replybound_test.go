package httpd_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/combtest"
)

// replyBoundServer is a server whose large pop replies share 256 KiB of
// room: a pop takes half the free room before its claim, so alone it
// claims at most 64 KiB (outside the room) and 128 KiB.
func replyBoundServer(t *testing.T) *combtest.Server {
	return combtest.MustServer(t, combtest.Options{HTTP: func(c *httpd.Config) { c.MaxReplyBytesInFlight = 256 << 10 }})
}

func pushBig(s *combtest.Server, queue string, n, size int) {
	items := make([]map[string]any, n)
	for i := range items {
		items[i] = map[string]any{"queue": queue, "payload": strings.Repeat("x", size)}
	}
	s.Push(items...)
}

// A pop claims no more than the room it took, the first message whatever
// its size; with the default room the same pop takes its whole batch.
func TestAPopClaimsWhatItsReplyHasRoomFor(t *testing.T) {
	s := replyBoundServer(t)
	pushBig(s, "q", 10, 100_000)
	// 64 KiB + 128 KiB = 196,608 bytes: one message of 100,000, not two.
	if got := s.Pop("/api/v1/pop/queue/q?batch=10&wait=false&autoAck=true"); len(got.Messages) != 1 {
		t.Fatalf("pop under a room of 256 KiB: %d messages; want 1", len(got.Messages))
	}
	// A message larger than the whole room is still delivered.
	pushBig(s, "big", 1, 400_000)
	if got := s.Pop("/api/v1/pop/queue/big?batch=10&wait=false&autoAck=true"); len(got.Messages) != 1 {
		t.Fatalf("a message past the room: %d messages; want 1", len(got.Messages))
	}

	d := combtest.MustServer(t, combtest.Options{})
	pushBig(d, "q", 10, 100_000)
	if got := d.Pop("/api/v1/pop/queue/q?batch=10&wait=false&autoAck=true"); len(got.Messages) != 10 {
		t.Fatalf("pop under the default room: %d messages; want 10", len(got.Messages))
	}
}

// Parked pops hold no room while they wait.
func TestParkedPopsHoldNoReplyRoom(t *testing.T) {
	s := replyBoundServer(t)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			resp, err := http.Get(s.URL + "/api/v1/pop/queue/idle?wait=true&timeout=1500")
			if err == nil {
				resp.Body.Close()
			}
		})
	}
	deadline := time.Now().Add(5 * time.Second)
	for s.Broker.Parked() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d pops parked; want 3", s.Broker.Parked())
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Had the three kept the room they took (128 + 64 + 32 KiB), this pop
	// would take 16 KiB and claim one message of 50,000 bytes; with the
	// room free it takes 128 KiB, and claims three.
	pushBig(s, "q", 10, 50_000)
	if got := s.Pop("/api/v1/pop/queue/q?batch=10&wait=false&autoAck=true"); len(got.Messages) != 3 {
		t.Fatalf("pop beside three parked: %d messages; want 3", len(got.Messages))
	}
	wg.Wait()
}

// The one-message lookup writes its payload from where it lies; the reply
// is, byte for byte, what encoding/json makes of it: keys sorted, the
// payload compacted and its HTML characters escaped.
func TestMessageLookupIsWhatEncodingJSONWrites(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	for i, payload := range []string{`{"a":1}`, `{"a": "x y",  "b":[1, 2]}`, `"<b>&amp;</b>"`, `"é\u2028"`, `[1,2,3]`, `null`,
		`{"big":"` + strings.Repeat("z", 200_000) + `"}`} {
		txn := fmt.Sprintf("m%d", i)
		out := s.Push(map[string]any{"queue": "lk", "transactionId": txn, "payload": json.RawMessage(payload)})
		r := s.Do("GET", fmt.Sprintf("/api/v1/messages/%s/%s", out[0]["partition_id"], txn), nil)
		if r.Status != http.StatusOK {
			t.Fatalf("%s: %d %s", payload, r.Status, r.Body)
		}
		var m map[string]any
		r.JSON(t, &m)
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, r.Body) {
			t.Fatalf("%.40s: reply\n%.300s\nis not what encoding/json writes of it\n%.300s", payload, r.Body, again)
		}
		var want any
		json.Unmarshal([]byte(payload), &want)
		if fmt.Sprint(m["payload"]) != fmt.Sprint(want) {
			t.Fatalf("%.40s: payload %.80v", payload, m["payload"])
		}
	}
}

// A client that asks for a large reply and reads nothing is cut once it
// has accepted nothing for Config.WriteStall, and its reply gives back the
// room it held. Without the bound (WriteStall -1, as before it was
// made), it held that room for as long as it kept the connection: the
// second lookup of the same 6 MB message waited for room a minute and
// was answered 503.
func TestAReplyItsClientDoesNotReadIsCutAndGivesBackItsRoom(t *testing.T) {
	// Served as comb serve serves (httpd.Server): the bound is on its
	// connections.
	cfg := httpd.Config{WriteStall: time.Second, MaxReplyBytesInFlight: 8 << 20}
	ln, err := httpd.Listen("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	serveOn(t, combtest.MustOpenBroker(t, combtest.Options{}), ln, cfg)
	addr := ln.Addr().String()
	s := &combtest.Client{TB: t, URL: "http://" + addr, HTTP: &http.Client{}}
	out := s.Push(map[string]any{"queue": "big", "transactionId": "m", "payload": strings.Repeat("x", 6<<20)})
	path := fmt.Sprintf("/api/v1/messages/%s/m", out[0]["partition_id"])
	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	idle.(*net.TCPConn).SetReadBuffer(4096)
	fmt.Fprintf(idle, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, addr)
	time.Sleep(300 * time.Millisecond) // its reply under way, stalled

	start := time.Now()
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Get(s.URL + path)
	if err != nil {
		t.Fatalf("a second lookup beside a client that reads nothing: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || len(body) < 6<<20 {
		t.Fatalf("a second lookup beside a client that reads nothing: %d, %d bytes, %v after %v", resp.StatusCode, len(body), err, time.Since(start))
	}
	// What the client that read nothing receives after this is what the
	// kernel had taken before the cut (at a pace its tiny window sets), so
	// whether it was cut shows in the room, above, not in its reads.
}

// Replies that hold the reply room while their clients read nothing are
// cut once another reply waits for that room and they have accepted
// nothing for Config.ContendedWriteStall, however long WriteStall is: four
// such clients (one parked, woken by a push) held the room from an
// honest pop of the same size until WriteStall cut them, a minute at the
// default. What the cut replies had claimed goes back to the queue.
func TestRepliesNobodyReadsGiveWayToAReplyWaitingForRoom(t *testing.T) {
	cfg := httpd.Config{WriteStall: time.Minute, ContendedWriteStall: 300 * time.Millisecond, MaxReplyBytesInFlight: 16 << 20}
	ln, err := httpd.Listen("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := combtest.MustOpenBroker(t, combtest.Options{})
	serveOn(t, b, ln, cfg)
	addr := ln.Addr().String()
	s := &combtest.Client{TB: t, URL: "http://" + addr, HTTP: &http.Client{}}
	const size, n = 6 << 20, 5
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	pop := func(query string) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, conn)
		conn.(*net.TCPConn).SetReadBuffer(4096)
		fmt.Fprintf(conn, "GET /api/v1/pop/queue/big?batch=1&%s HTTP/1.1\r\nHost: %s\r\n\r\n", query, addr)
	}
	// The first waits parked, and its reply is written once a push wakes it.
	pop("wait=true&timeout=30000")
	for deadline := time.Now().Add(5 * time.Second); b.Parked() < 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first pop did not park")
		}
	}
	for i := range n {
		// Each in its own partition: a partition leased to one pop is
		// not another's.
		s.Push(map[string]any{"queue": "big", "partition": fmt.Sprintf("p%d", i), "transactionId": fmt.Sprintf("m%d", i),
			"payload": strings.Repeat("x", size)})
	}
	for range n - 2 {
		time.Sleep(100 * time.Millisecond) // each claims in turn, its reply stalled
		pop("wait=false")
	}
	time.Sleep(300 * time.Millisecond)

	client := &http.Client{Timeout: 20 * time.Second}
	got := map[string]bool{}
	next := func() (status int) {
		start := time.Now()
		resp, err := client.Get(s.URL + "/api/v1/pop/queue/big?batch=1&wait=false")
		if err != nil {
			t.Fatalf("pop beside replies nobody reads, after %d of %d: %v (after %v)", len(got), n, err, time.Since(start))
		}
		defer resp.Body.Close()
		var reply struct {
			Messages []struct {
				TransactionID string `json:"transactionId"`
				Data          string `json:"data"`
			} `json:"messages"`
		}
		if resp.StatusCode == http.StatusNoContent {
			return resp.StatusCode
		}
		err = json.NewDecoder(resp.Body).Decode(&reply)
		if resp.StatusCode != http.StatusOK || err != nil || len(reply.Messages) != 1 || len(reply.Messages[0].Data) != size {
			t.Fatalf("pop beside replies nobody reads, after %d of %d: %d, %v (after %v)", len(got), n, resp.StatusCode, err, time.Since(start))
		}
		got[reply.Messages[0].TransactionID] = true
		return resp.StatusCode
	}
	if status := next(); status != http.StatusOK {
		t.Fatalf("pop beside replies nobody reads: %d", status)
	}
	// Nothing is lost: once the clients that read nothing have gone,
	// whatever was claimed for them comes back.
	for _, c := range idle {
		c.Close()
	}
	for deadline := time.Now().Add(30 * time.Second); len(got) < n; {
		if next() == http.StatusNoContent {
			if time.Now().After(deadline) {
				t.Fatalf("only %v of %d delivered", got, n)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}
