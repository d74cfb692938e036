package httpd_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/internal/clock"
	"github.com/comb-broker/comb/internal/combtest"
)

// fillUntilFull pushes batches of n messages of size bytes to queue until
// the server answers something other than 201, returning the
// transactionIds answered 201 and the refusing reply.
func fillUntilFull(t *testing.T, srv *combtest.Server, queue string, n, size int) ([]string, *combtest.Response, []map[string]any) {
	t.Helper()
	// Random text: lz4 would shrink a repeated one to almost nothing.
	rnd := rand.New(rand.NewPCG(1, 2))
	var ok []string
	for b := 0; b < 100000; b++ {
		items := make([]map[string]any, n)
		ids := make([]string, n)
		for i := range items {
			raw := make([]byte, size*3/4)
			for j := range raw {
				raw[j] = byte(rnd.Uint32())
			}
			pad := base64.StdEncoding.EncodeToString(raw)
			ids[i] = fmt.Sprintf("%s-%d-%d", queue, b, i)
			items[i] = map[string]any{"queue": queue, "transactionId": ids[i], "payload": map[string]any{"pad": pad, "i": i}}
		}
		r := srv.Do("POST", "/api/v1/push", map[string]any{"items": items})
		if r.Status != http.StatusCreated {
			return ok, r, items
		}
		ok = append(ok, ids...)
	}
	t.Fatal("the database never filled")
	return nil, nil, nil
}

// TestAFullDatabaseRefusesWritesWith507AndResumesWhenRetentionMakesRoom
// fills a database to its --max-db-bytes cap (SQLite's max_page_count on
// the writer, which fails exactly as a full disk does).
func TestAFullDatabaseRefusesWritesWith507AndResumesWhenRetentionMakesRoom(t *testing.T) {
	clk := clock.NewManual(time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC))
	srv := combtest.MustServer(t, combtest.Options{Clock: clk, Broker: func(o *broker.Options) {
		o.MaxDBBytes = 2 << 20
		o.RetentionInterval = -1
	}})
	if r := srv.Do("POST", "/api/v1/configure", map[string]any{"queue": "full",
		"options": map[string]any{"retentionEnabled": true, "retentionSeconds": 60}}); r.Status != http.StatusOK && r.Status != http.StatusCreated {
		t.Fatalf("configure: %d %s", r.Status, r.Body)
	}
	stored, refused, refusedItems := fillUntilFull(t, srv, "full", 20, 4000)
	if refused.Status != http.StatusInsufficientStorage || !strings.Contains(refused.Map(t)["error"].(string), "Database is full") {
		t.Fatalf("push on a full database: %d %s", refused.Status, refused.Body)
	}
	if len(stored) == 0 {
		t.Fatal("nothing fit before the cap")
	}
	// The same push again is refused the same way: the writer is not
	// poisoned by the first refusal.
	if r := srv.Do("POST", "/api/v1/push", map[string]any{"items": refusedItems}); r.Status != http.StatusInsufficientStorage {
		t.Fatalf("second push on a full database: %d %s", r.Status, r.Body)
	}

	// Reads, pops and acks of what is stored keep working.
	if r := srv.Do("GET", "/api/v1/resources/queues/full", nil); r.Status != http.StatusOK {
		t.Fatalf("read a queue on a full database: %d %s", r.Status, r.Body)
	}
	pop := srv.Pop("/api/v1/pop/queue/full?batch=20&consumerGroup=g")
	if pop.Status != http.StatusOK || len(pop.Messages) != 20 || pop.Messages[0].TransactionID != stored[0] {
		t.Fatalf("pop on a full database: %+v", pop)
	}
	if res := srv.Ack(pop.Messages[19], "completed", "g"); res["success"] != true {
		t.Fatalf("ack on a full database: %v", res)
	}

	// Nothing of a refused push was stored: another group reads exactly
	// the pushes answered 201, in order.
	seen := map[string]bool{}
	for {
		p := srv.Pop("/api/v1/pop/queue/full?batch=1000&consumerGroup=audit&autoAck=true")
		if p.Status == http.StatusNoContent {
			break
		}
		for _, m := range p.Messages {
			seen[m.TransactionID] = true
		}
	}
	if len(seen) != len(stored) {
		t.Fatalf("read %d messages back, %d were answered 201", len(seen), len(stored))
	}
	for _, it := range refusedItems {
		if id := it["transactionId"].(string); seen[id] {
			t.Fatalf("%s of a refused push was stored", id)
		}
	}

	// Retention runs on the full database and makes room; writes resume
	// without a restart.
	clk.Advance(2 * time.Minute)
	srv.Do("POST", "/api/v1/ack", map[string]any{"transactionId": pop.Messages[0].TransactionID, "partitionId": pop.Messages[0].PartitionID,
		"leaseId": pop.Messages[0].LeaseID, "status": "completed", "consumerGroup": "g"})
	if _, err := srv.Broker.RetentionSweep(context.Background()); err != nil {
		t.Fatalf("retention on a full database: %v", err)
	}
	again, refused, _ := fillUntilFull(t, srv, "full", 20, 4000)
	if len(again) < len(stored)/2 || refused.Status != http.StatusInsufficientStorage {
		t.Fatalf("after retention %d messages fit (before: %d), then %d", len(again), len(stored), refused.Status)
	}
}
