package httpd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/combtest"
)

// TestAnOutsideWriteTransactionIsAnswered503AndHoldsNothingBack: a sqlite3
// session (or a DB browser) that begins a write transaction on comb's file
// and leaves it open keeps comb's writer out of the file. Writes meanwhile
// are answered 503 with Retry-After, in JSON, having written nothing
// (Queen's clients retry a 5xx); the writer does not wait out the busy
// timeout once per write of a failed commit; and once the session ends
// writes go on with nothing lost. Before: 500 "Internal server error", and
// a commit of twenty pushes that met the lock was split into twenty
// commits that each waited the busy timeout again.
func TestAnOutsideWriteTransactionIsAnswered503AndHoldsNothingBack(t *testing.T) {
	const busy = 2 * time.Second
	srv := combtest.MustServer(t, combtest.Options{Broker: func(o *broker.Options) { o.BusyTimeout = busy }})
	push := func(id string) (*http.Response, []byte, error) {
		body, _ := json.Marshal(map[string]any{"items": []map[string]any{{"queue": "q", "transactionId": id, "payload": map[string]any{"id": id}}}})
		resp, err := srv.HTTP.Client().Post(srv.URL+"/api/v1/push", "application/json", bytes.NewReader(body))
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		return resp, data, err
	}
	for i := range 5 {
		if resp, data, err := push(fmt.Sprintf("before-%d", i)); err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("push before: %v %v %s", err, resp, data)
		}
	}

	session := combtest.StartSQLite3Writer(t, srv.Broker.DatabasePath())
	const n = 20
	type answer struct {
		status     int
		retryAfter string
		body       []byte
		err        error
	}
	answers := make([]answer, n)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			resp, data, err := push(fmt.Sprintf("during-%d", i))
			if err != nil {
				answers[i] = answer{err: err}
				return
			}
			answers[i] = answer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), body: data}
		})
	}
	wg.Wait()
	took := time.Since(start)
	for i, a := range answers {
		var e struct{ Error string }
		if a.err != nil || a.status != http.StatusServiceUnavailable || a.retryAfter != "1" ||
			json.Unmarshal(a.body, &e) != nil || !strings.Contains(e.Error, "locked by another program") {
			t.Errorf("push %d during the outside transaction: %v %d Retry-After %q %s", i, a.err, a.status, a.retryAfter, a.body)
		}
	}
	// However the twenty were fused into commits, each commit waits the
	// busy timeout once; one op at a time they would wait it twenty times.
	t.Logf("%d pushes refused in %v (busy timeout %v)", n, took, busy)
	if took > 5*busy {
		t.Errorf("the refusals took %v: the writer waited the busy timeout per push", took)
	}

	session.Close()
	if resp, data, err := push("after"); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("push after the session ended: %v %v %s", err, resp, data)
	}
	got := map[string]bool{}
	for _, m := range srv.Pop("/api/v1/pop/queue/q?batch=100&consumerGroup=g").Messages {
		got[m.TransactionID] = true
	}
	for i := range 5 {
		if !got[fmt.Sprintf("before-%d", i)] {
			t.Errorf("before-%d lost", i)
		}
	}
	if !got["after"] || len(got) != 6 {
		t.Errorf("stored %v, want the 5 before and the one after, none refused", got)
	}
}

// TestAWriteThatMeetsADamagedPageSaysSo: a page of the file damaged under
// the dedup keys makes SQLite refuse every push that looks them up. The
// answer is still the server's failure (500, logged), but it names the
// cause and what the operator does about it instead of "Internal server
// error", and nothing of the push is stored.
func TestAWriteThatMeetsADamagedPageSaysSo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "comb.db")
	b := combtest.OpenBrokerAt(t, path, combtest.Options{})
	items := make([]combtype.PushItem, 2000)
	for i := range items {
		items[i] = combtype.PushItem{Queue: "q", TxnID: fmt.Sprintf("m%d", i), Payload: []byte(`{}`)}
	}
	if _, err := b.Push(context.Background(), items); err != nil {
		t.Fatal(err)
	}
	combtest.CloseBroker(t, b)
	combtest.DamagePage(t, path, "txids")

	b = combtest.OpenBrokerAt(t, path, combtest.Options{})
	ts := httptest.NewServer(httpd.NewHandler(b, httpd.Config{}))
	defer func() {
		ts.Close()
		b.Close()
	}()
	c := &combtest.Client{TB: t, URL: ts.URL, HTTP: ts.Client()}
	r := c.Do("POST", "/api/v1/push", map[string]any{"items": []map[string]any{{"queue": "q", "transactionId": "new", "payload": map[string]any{}}}})
	var e struct{ Error string }
	r.JSON(t, &e)
	if r.Status != http.StatusInternalServerError || !strings.Contains(e.Error, "Database file is damaged") || !strings.Contains(e.Error, "comb check") {
		t.Errorf("push onto a damaged page: %d %s", r.Status, r.Body)
	}
	got := c.Pop("/api/v1/pop/queue/q?batch=5000&consumerGroup=g").Messages
	if len(got) != 2000 || got[len(got)-1].TransactionID != "m1999" {
		t.Errorf("popped %d messages after the refused push, want the 2000 before it", len(got))
	}
}
