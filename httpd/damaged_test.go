package httpd_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/combtest"
)

// damagedFixture is a closed database with a tree of more than one page
// in each table the read routes go through: queue big (40 partitions, 50
// segments each, 2,000 dedup keys), queue other, consumer groups g0-g3
// with a cursor on every partition of big, and one streams shard of 400
// state rows.
type damagedFixture struct {
	path                  string
	partitionID, txnID    string // a message of big
	queryID, stateShardID string
}

func newDamagedFixture(t *testing.T) damagedFixture {
	t.Helper()
	f := damagedFixture{path: filepath.Join(t.TempDir(), "base.db"), stateShardID: "11111111-1111-1111-1111-111111111111"}
	b := combtest.OpenBrokerAt(t, f.path, combtest.Options{})
	ts := httptest.NewServer(httpd.NewHandler(b, httpd.Config{}))
	c := &combtest.Client{TB: t, URL: ts.URL, HTTP: ts.Client()}
	for round := range 50 {
		items := make([]map[string]any, 40)
		for p := range items {
			items[p] = map[string]any{"queue": "big", "partition": fmt.Sprintf("p%d", p),
				"transactionId": fmt.Sprintf("r%d-p%d", round, p), "payload": map[string]any{"pad": strings.Repeat("x", 100)}}
		}
		c.Push(items...)
	}
	c.Push(map[string]any{"queue": "other", "transactionId": "o1", "payload": map[string]any{}})
	for g := range 4 {
		for range 40 {
			m := c.Pop(fmt.Sprintf("/api/v1/pop/queue/big?batch=50&consumerGroup=g%d&autoAck=true", g)).Messages
			if g == 0 && f.partitionID == "" && len(m) > 0 {
				f.partitionID, f.txnID = m[0].PartitionID, m[0].TransactionID
			}
		}
	}
	r := c.Do("POST", "/streams/v1/queries", map[string]any{"name": "sq", "source_queue": "big", "config_hash": "h"})
	var reg struct {
		QueryID string `json:"query_id"`
	}
	r.JSON(t, &reg)
	f.queryID = reg.QueryID
	// Past one page of a state read (store: statePageBytes, 1 MiB), so
	// that damage in its last leaf is met after rows were written.
	ops := make([]map[string]any, 7000)
	for i := range ops {
		ops[i] = map[string]any{"type": "upsert", "key": fmt.Sprintf("k%04d", i), "value": map[string]any{"v": strings.Repeat("y", 150)}}
	}
	if r := c.Do("POST", "/streams/v1/cycle", map[string]any{"query_id": f.queryID, "partition_id": f.stateShardID,
		"consumer_group": "", "state_ops": ops}); r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"success":true`) {
		t.Fatalf("cycle: %d %s", r.Status, r.Body)
	}
	ts.Close()
	combtest.CloseBroker(t, b)
	return f
}

// serveCopy serves a copy of the fixture's file, damaged by damage first,
// on 127.0.0.1 until the test ends.
func (f damagedFixture) serveCopy(t *testing.T, damage func(path string)) *combtest.Client {
	t.Helper()
	data, err := os.ReadFile(f.path)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "comb.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	damage(path)
	b := combtest.OpenBrokerAt(t, path, combtest.Options{})
	ts := httptest.NewServer(httpd.NewHandler(b, httpd.Config{}))
	t.Cleanup(func() {
		b.Drain()
		ts.Close()
		b.Close() // not CloseBroker: its check would report the damage
	})
	return &combtest.Client{TB: t, URL: ts.URL, HTTP: ts.Client()}
}

// TestAReadThatMeetsADamagedPageSaysSo: a damaged page of the file stops
// every statement that reads through it, a read as much as a write. Every
// route that meets one answers the named 500 a write already answered
// ("Database file is damaged ... comb check"), not "Internal server
// error", and the routes that do not read through it keep answering.
// Before, only writes were named: the reads below answered the generic
// 500.
func TestAReadThatMeetsADamagedPageSaysSo(t *testing.T) {
	f := newDamagedFixture(t)
	const damaged = 0 // want the named 500
	type route struct {
		method, path string
		body         any
		want         int
	}
	message := "/api/v1/messages/" + f.partitionID + "/" + f.txnID
	state := map[string]any{"query_id": f.queryID, "partition_id": f.stateShardID}
	for _, tc := range []struct {
		tree   string // whose root page is damaged
		routes []route
	}{
		{"segments", []route{
			{"GET", "/api/v1/messages?queue=big", nil, damaged},
			{"GET", message, nil, damaged},
			{"GET", "/api/v1/resources/queues/big", nil, damaged},
			{"GET", "/api/v1/resources/overview", nil, damaged},
			{"GET", "/api/v1/status", nil, damaged},
			{"GET", "/api/v1/status/queues/big", nil, damaged},
			{"GET", "/api/v1/status/queues/big/messages", nil, damaged},
			{"GET", "/api/v1/status/analytics", nil, damaged},
			{"GET", "/api/v1/resources/queues", nil, http.StatusOK},
			{"GET", "/api/v1/status/queues", nil, http.StatusOK},
			{"POST", "/streams/v1/state/get", state, http.StatusOK},
		}},
		{"cursors", []route{
			{"GET", "/api/v1/pop/queue/big/partition/p0?batch=5&consumerGroup=g0", nil, damaged},
			{"GET", "/api/v1/consumer-groups", nil, damaged},
			{"GET", "/api/v1/resources/queues", nil, damaged},
			{"GET", "/api/v1/messages?queue=other", nil, damaged},
			{"GET", message, nil, damaged},
			{"GET", "/api/v1/status/queues", nil, damaged},
			{"POST", "/streams/v1/state/get", state, http.StatusOK},
			{"GET", "/api/v1/dlq", nil, http.StatusOK},
		}},
		{"txids", []route{
			{"GET", message, nil, damaged},
			{"POST", "/api/v1/ack", map[string]any{"transactionId": f.txnID, "partitionId": f.partitionID,
				"consumerGroup": "g1", "status": "completed"}, damaged},
			{"GET", "/api/v1/messages?queue=big", nil, http.StatusOK},
			{"GET", "/api/v1/consumer-groups", nil, http.StatusOK},
		}},
		{"stream_state", []route{
			{"POST", "/streams/v1/state/get", state, damaged},
			{"GET", "/api/v1/messages?queue=big", nil, http.StatusOK},
		}},
	} {
		t.Run(tc.tree, func(t *testing.T) {
			c := f.serveCopy(t, func(path string) { combtest.DamagePage(t, path, tc.tree) })
			for _, rt := range tc.routes {
				r := c.Do(rt.method, rt.path, rt.body)
				if rt.want != damaged {
					if r.Status != rt.want {
						t.Errorf("%s %s over undamaged pages: %d %.200s, want %d", rt.method, rt.path, r.Status, r.Body, rt.want)
					}
					continue
				}
				var e struct{ Error string }
				json.Unmarshal(r.Body, &e) // a body of another shape fails below
				if r.Status != http.StatusInternalServerError || !strings.Contains(e.Error, "Database file is damaged") ||
					!strings.Contains(e.Error, "comb check") {
					t.Errorf("%s %s through the damaged page: %d %.200s, want the named 500", rt.method, rt.path, r.Status, r.Body)
				}
			}
			// Once a request has met the damage, the server says it is
			// not healthy, and why, though the rest still answers.
			r := c.Do("GET", "/health", nil)
			var h struct{ Status, Database, Error string }
			json.Unmarshal(r.Body, &h)
			if r.Status != http.StatusServiceUnavailable || h.Status != "unhealthy" || h.Database != "damaged" ||
				!strings.Contains(h.Error, "comb check") {
				t.Errorf("/health after damage met: %d %s", r.Status, r.Body)
			}
		})
	}
}

// TestAStateReplyMeetingADamagedPageEndsShort: state/get writes its rows
// a page at a time as it reads them, so damage met after rows reached
// the client (the fixture's shard is more than a page) can no longer
// become a 500. The reply must then end short, the connection
// closed, so the client cannot take what it read for the whole state.
// Before, the router's panic handler caught the abort and wrote
// {"error":...} after the rows, ending a 200 as if it were whole.
func TestAStateReplyMeetingADamagedPageEndsShort(t *testing.T) {
	f := newDamagedFixture(t)
	c := f.serveCopy(t, func(path string) { combtest.DamageLastLeaf(t, path, "stream_state") })
	body := strings.NewReader(fmt.Sprintf(`{"query_id":%q,"partition_id":%q}`, f.queryID, f.stateShardID))
	resp, err := c.HTTP.Post(c.URL+"/streams/v1/state/get", "application/json", body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("state/get: %d %s: the damage is past the first rows, want them sent", resp.StatusCode, data)
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("state/get over a damaged last page: read %d bytes ending %q, err %v; want the reply cut short",
			len(data), data[max(0, len(data)-60):], err)
	}
	// The server goes on serving.
	if r := c.Do("GET", "/api/v1/messages?queue=other", nil); r.Status != http.StatusOK {
		t.Errorf("after the cut reply: %d %s", r.Status, r.Body)
	}
}
