package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
)

// TestServeShutsDownCleanly runs serve in-process, parks a long-poll, then
// cancels as SIGTERM would: the parked pop must answer at once, serve must
// return without error, and the data must be in the file with the WAL
// checkpointed away.
func TestServeShutsDownCleanly(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "comb.db")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	var stderr bytes.Buffer
	m := &App{Stdout: io.Discard, Stderr: &stderr, Getenv: func(string) string { return "" },
		Ready: func(addr string) { ready <- addr }}
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--db", db}) }()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("serve returned early: %v\n%s", err, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not start")
	}
	base := "http://" + addr
	resp, err := http.Post(base+"/api/v1/push", "application/json",
		strings.NewReader(`{"items":[{"queue":"keep","payload":{"n":1},"transactionId":"k1"}]}`))
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("push: %v %v", resp, err)
	}
	resp.Body.Close()

	popped := make(chan int, 1)
	go func() {
		r, err := http.Get(base + "/api/v1/pop/queue/empty?wait=true&timeout=60000")
		if err != nil {
			popped <- -1
			return
		}
		r.Body.Close()
		popped <- r.StatusCode
	}()
	time.Sleep(200 * time.Millisecond) // let the pop park; if it has not, it still answers 204
	start := time.Now()
	cancel()
	select {
	case code := <-popped:
		if code != http.StatusNoContent {
			t.Errorf("parked pop answered %d at shutdown, want 204", code)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("parked pop held the shutdown")
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not return after cancel")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("shutdown took %v", d)
	}
	if fi, err := os.Stat(db + "-wal"); err == nil && fi.Size() > 0 {
		t.Errorf("WAL left with %d bytes: the database was not closed cleanly", fi.Size())
	}

	b, err := broker.Open(context.Background(), broker.Options{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	res, err := b.Pop(context.Background(), combtype.PopRequest{Queue: "keep", Batch: 10})
	if err != nil || len(res.Messages) != 1 || string(res.Messages[0].Payload) != `{"n":1}` {
		t.Fatalf("after restart: %+v %v", res, err)
	}
}
