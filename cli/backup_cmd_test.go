package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
)

// answered records the transactionIds of pushes answered 201.
type answered struct {
	mu  sync.Mutex
	ids []string
}

func (a *answered) add(ids ...string) {
	a.mu.Lock()
	a.ids = append(a.ids, ids...)
	a.mu.Unlock()
}

func (a *answered) snapshot() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.ids...)
}

// pushLoad pushes batches to queue "load" from producers goroutines until
// ctx ends, recording every item answered 201.
func pushLoad(ctx context.Context, t *testing.T, srv *combtest.Server, producers int, got *answered) *sync.WaitGroup {
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ctx.Err() == nil; n++ {
				items := make([]map[string]any, 20)
				ids := make([]string, len(items))
				for i := range items {
					ids[i] = fmt.Sprintf("p%d-%d-%d", p, n, i)
					items[i] = map[string]any{"queue": "load", "partition": fmt.Sprintf("part%d", p),
						"transactionId": ids[i], "payload": map[string]any{"i": i}}
				}
				body, _ := json.Marshal(map[string]any{"items": items})
				req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/api/v1/push", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				resp, err := srv.HTTP.Client().Do(req)
				if err != nil {
					return // ctx ended mid-request: not answered, not counted
				}
				resp.Body.Close()
				if resp.StatusCode == http.StatusCreated {
					got.add(ids...)
				} else {
					t.Errorf("push under load: %d", resp.StatusCode)
					return
				}
			}
		}()
	}
	return &wg
}

// popAll opens the copy as a broker and drains queue "load" with a fresh
// group, returning every transactionId delivered.
func popAll(t *testing.T, path string) map[string]bool {
	t.Helper()
	ctx := context.Background()
	b, err := broker.Open(ctx, broker.Options{Path: path, RetentionInterval: -1})
	if err != nil {
		t.Fatalf("open the copy: %v", err)
	}
	defer b.Close()
	seen := map[string]bool{}
	for {
		res, err := b.Pop(ctx, combtype.PopRequest{Queue: "load", Group: "restore-check", Batch: 1000, AutoAck: true})
		if err != nil {
			t.Fatalf("pop the copy: %v", err)
		}
		if len(res.Messages) == 0 {
			return seen
		}
		for _, m := range res.Messages {
			seen[m.TxnID] = true
		}
	}
}

func waitFor(t *testing.T, got *answered, n int) {
	t.Helper()
	combtest.CheckFor(t, 30e9, func() error {
		if have := len(got.snapshot()); have < n {
			return fmt.Errorf("%d pushes answered, waiting for %d", have, n)
		}
		return nil
	})
}

func TestBackupUnderWriteLoadHoldsEveryMessageAnsweredBeforeIt(t *testing.T) {
	srv := combtest.MustServer(t, combtest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	var got answered
	wg := pushLoad(ctx, t, srv, 3, &got)
	defer func() { cancel(); wg.Wait() }()
	dir := t.TempDir()

	waitFor(t, &got, 300)
	beforeOnline := got.snapshot()
	online := filepath.Join(dir, "online.db")
	out, err := runComb(t, srv, nil, "backup", "--out", online)
	if err != nil || !strings.Contains(out, "check ok") {
		t.Fatalf("backup --url: %v\n%s", err, out)
	}

	waitFor(t, &got, len(got.snapshot())+300)
	beforeOffline := got.snapshot()
	offline := filepath.Join(dir, "offline.db")
	out, err = runComb(t, srv, nil, "backup", "--db", srv.Broker.DatabasePath(), "--out", offline)
	if err != nil || !strings.Contains(out, "check ok") {
		t.Fatalf("backup --db: %v\n%s", err, out)
	}
	// The writes went on during both backups.
	during := len(got.snapshot())
	waitFor(t, &got, during+60)
	cancel()
	wg.Wait()

	for _, c := range []struct {
		path   string
		before []string
	}{{online, beforeOnline}, {offline, beforeOffline}} {
		if out, err := runCheck(t, c.path); err != nil {
			t.Fatalf("check %s: %v\n%s", c.path, err, out)
		}
		seen := popAll(t, c.path)
		for _, id := range c.before {
			if !seen[id] {
				t.Fatalf("%s lacks %s, answered 201 before the backup began (%d of %d present)",
					filepath.Base(c.path), id, len(seen), len(c.before))
			}
		}
		t.Logf("%s: %d answered before, %d in the copy", filepath.Base(c.path), len(c.before), len(seen))
	}

	// An existing file is never overwritten.
	if _, err := runComb(t, srv, nil, "backup", "--out", online); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("backup onto an existing file: %v", err)
	}
	// Nor is a copy put beside a -wal a deleted database left at its
	// name, either way: the next open would replay it into the copy.
	leftover := filepath.Join(dir, "again.db")
	if err := os.WriteFile(leftover+"-wal", []byte("left by another database"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"backup", "--out", leftover}, {"backup", "--db", srv.Broker.DatabasePath(), "--out", leftover}} {
		if _, err := runComb(t, srv, nil, args...); err == nil || !strings.Contains(err.Error(), "again.db-wal is left beside the name") {
			t.Errorf("%v beside a leftover -wal: %v", args, err)
		}
		if _, err := os.Stat(leftover); !os.IsNotExist(err) {
			t.Errorf("%v beside a leftover -wal wrote the copy: %v", args, err)
		}
	}
}

func TestBackupRouteAnswersASQLiteFile(t *testing.T) {
	srv := combtest.MustServer(t, combtest.Options{})
	srv.Push(map[string]any{"queue": "q", "payload": map[string]any{"n": 1}})
	r := srv.Do("GET", "/api/v1/system/backup", nil)
	if r.Status != http.StatusOK || !bytes.HasPrefix(r.Body, []byte("SQLite format 3\x00")) {
		t.Fatalf("backup: %d %q", r.Status, r.Body[:min(len(r.Body), 64)])
	}
}
