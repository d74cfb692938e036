package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/comb-broker/comb/internal/combtest"
)

// flipSegmentByte changes one byte in the middle of the stored segment of
// base offset base, with the sqlite3 command-line tool, as an outside
// process would: the server keeps running and is not told.
func flipSegmentByte(t *testing.T, path string, base int) {
	t.Helper()
	sqlite3, err := exec.LookPath("sqlite3")
	if err != nil {
		t.Fatalf("the sqlite3 command-line tool is needed (Debian package sqlite3): %v", err)
	}
	out, err := exec.Command(sqlite3, path, fmt.Sprintf("SELECT hex(data) FROM segments WHERE base_offset = %d", base)).Output()
	if err != nil {
		t.Fatalf("read segment %d: %v", base, err)
	}
	hex := []byte(strings.TrimSpace(string(out)))
	if len(hex) < 4 {
		t.Fatalf("segment %d holds %q", base, hex)
	}
	i := len(hex) / 2 &^ 1 // the first digit of the middle byte
	if hex[i] == 'F' {
		hex[i] = '0'
	} else {
		hex[i] = 'F'
	}
	if out, err := exec.Command(sqlite3, path,
		fmt.Sprintf("UPDATE segments SET data = x'%s' WHERE base_offset = %d", hex, base)).CombinedOutput(); err != nil {
		t.Fatalf("damage segment %d: %v\n%s", base, err, out)
	}
}

// TestNoPathAnswers5xxForADamagedSegment damages the middle segment of a
// real file (offsets 5-9, transactionIds m5-m9) under a running server,
// then takes every path that reads segment bytes over real HTTP. None may
// answer 5xx; each treats the damaged range as a pop does: it goes on
// without it, puts it aside where the quarantine listing shows it, and
// loses nothing it could still deliver.
func TestNoPathAnswers5xxForADamagedSegment(t *testing.T) {
	path := makeDB(t) // orders/p1: m0-m14 in segments based 0, 5, 10; billing consumed 0-4
	srv, _ := serveFile(t, path)
	// audit holds a lease on m0-m9 from before the damage: its consumer
	// still has them and may ack them.
	held := srv.Pop("/api/v1/pop/queue/orders?batch=10&consumerGroup=audit")
	if held.Status != http.StatusOK || len(held.Messages) != 10 {
		t.Fatalf("pop before the damage = %d, %d messages", held.Status, len(held.Messages))
	}
	pid, lease := held.Messages[0].PartitionID, held.Messages[0].LeaseID
	flipSegmentByte(t, path, 5)

	post := func(path string, body any) *struct {
		status int
		body   string
	} {
		r := srv.Do("POST", path, body)
		return &struct {
			status int
			body   string
		}{r.Status, string(r.Body)}
	}
	no5xx := func(t *testing.T, what string, status int, body string) {
		t.Helper()
		if status >= 500 {
			t.Fatalf("%s = %d %s", what, status, body)
		}
	}

	t.Run("ack without a lease", func(t *testing.T) {
		r := post("/api/v1/ack", map[string]any{"transactionId": "m8", "partitionId": pid, "status": "completed",
			"consumerGroup": "billing"})
		no5xx(t, "ack of m8", r.status, r.body)
	})
	t.Run("ack to the DLQ under the lease that delivered it", func(t *testing.T) {
		r := post("/api/v1/ack", map[string]any{"transactionId": "m7", "partitionId": pid, "leaseId": lease,
			"status": "dlq", "error": "bad order", "consumerGroup": "audit"})
		no5xx(t, "dlq ack of m7", r.status, r.body)
	})
	t.Run("one-message lookup", func(t *testing.T) {
		r := srv.Do("GET", "/api/v1/messages/"+pid+"/m6", nil)
		no5xx(t, "GET m6", r.Status, string(r.Body))
		if r.Status != http.StatusNotFound {
			t.Errorf("GET m6 = %d %s, want 404", r.Status, r.Body)
		}
	})
	t.Run("delete of one message", func(t *testing.T) {
		r := srv.Do("DELETE", "/api/v1/messages/"+pid+"/m5", nil)
		no5xx(t, "DELETE m5", r.Status, string(r.Body))
	})
	t.Run("trace of one message", func(t *testing.T) {
		r := post("/api/v1/traces", map[string]any{"transactionId": "m6", "partitionId": pid, "data": map[string]any{"x": 1}})
		no5xx(t, "trace of m6", r.status, r.body)
	})
	t.Run("messages listing", func(t *testing.T) {
		r := srv.Do("GET", "/api/v1/messages?queue=orders&limit=100", nil)
		no5xx(t, "listing", r.Status, string(r.Body))
		var list struct {
			Messages []struct {
				TransactionID string `json:"transactionId"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(r.Body, &list); err != nil {
			t.Fatalf("listing %s: %v", r.Body, err)
		}
		var got []string
		for _, m := range list.Messages {
			got = append(got, m.TransactionID)
		}
		slices.Sort(got)
		if want := "m0 m1 m10 m11 m12 m13 m14 m2 m3 m4"; strings.Join(got, " ") != want {
			t.Errorf("listing = %v, want %s: the readable messages, the damaged ones left out", got, want)
		}
	})
	t.Run("re-push of a transactionId stored in it", func(t *testing.T) {
		// An SDK retrying a push it sent before the damage. The copy it
		// would duplicate cannot be read, so it is stored again: a retry
		// succeeds, and the message is not lost behind the damage.
		for i, want := range []string{"queued", "duplicate"} {
			r := post("/api/v1/push", map[string]any{"items": []any{map[string]any{"queue": "orders", "partition": "p1",
				"transactionId": "m7", "payload": map[string]any{"n": 7}}}})
			no5xx(t, "push of m7", r.status, r.body)
			if !strings.Contains(r.body, `"status":"`+want+`"`) {
				t.Fatalf("push %d of m7 = %d %s, want %s", i, r.status, r.body, want)
			}
		}
	})
	t.Run("transaction pushing a transactionId stored in it", func(t *testing.T) {
		r := post("/api/v1/transaction", map[string]any{"operations": []any{map[string]any{"type": "push",
			"items": []any{map[string]any{"queue": "orders", "partition": "p1", "transactionId": "m9", "payload": 9}}}}})
		no5xx(t, "transaction", r.status, r.body)
		if !strings.Contains(r.body, `"success":true`) {
			t.Errorf("transaction pushing m9 = %d %s, want it to succeed", r.status, r.body)
		}
	})
	t.Run("a new group gets everything readable, and the pushes again", func(t *testing.T) {
		var got []string
		for range 5 {
			p := srv.Pop("/api/v1/pop/queue/orders?batch=100&autoAck=true&consumerGroup=fresh")
			no5xx(t, "pop", p.Status, "")
			for _, m := range p.Messages {
				got = append(got, m.TransactionID)
			}
		}
		if want := "m0 m1 m2 m3 m4 m10 m11 m12 m13 m14 m7 m9"; strings.Join(got, " ") != want {
			t.Errorf("fresh group got %v, want %s", got, want)
		}
	})
	t.Run("the quarantine lists it", func(t *testing.T) {
		var list struct {
			Segments []struct {
				FirstOffset int64 `json:"firstOffset"`
			} `json:"segments"`
			Total int64 `json:"total"`
		}
		srv.Do("GET", "/api/v1/quarantine", nil).JSON(t, &list)
		if list.Total != 1 || len(list.Segments) != 1 || list.Segments[0].FirstOffset != 5 {
			t.Errorf("quarantine = %+v, want the segment of offsets 5-9 once", list)
		}
	})
}

// TestServeOverADamagedStartPageSaysWhatToDo: the pages every start reads
// (the schema version, the settings) cannot be served around; comb serve
// then refuses to start, and must say the file is damaged and what to do,
// as a running server's reply to damage does, not only SQLite's words.
func TestServeOverADamagedStartPageSaysWhatToDo(t *testing.T) {
	path := makeDB(t)
	combtest.DamageLastLeaf(t, path, "settings")
	code, _, stderr := runMain(t, nil, "serve", "--db", path, "--addr", "127.0.0.1:0")
	if code == 0 || !strings.Contains(stderr, "database file is damaged") || !strings.Contains(stderr, "run comb check") {
		t.Errorf("serve over a damaged settings page: exit %d, stderr %q", code, stderr)
	}
}
