package main

import (
	"context"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/internal/combtest"
)

func TestTheHTTPFlagServesTheAPIAndConsoleFromTheSameProcess(t *testing.T) {
	logs := &combtest.Logs{}
	log.SetOutput(logs)
	t.Cleanup(func() { log.SetOutput(os.Stderr) })
	db := filepath.Join(t.TempDir(), "events.db")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- run(ctx, db, "127.0.0.1:0", 0) }()

	var base string
	addrLine := regexp.MustCompile(`API and console at (http://\S+)/`)
	combtest.CheckFor(t, 20*time.Second, func() error {
		if m := addrLine.FindStringSubmatch(logs.String()); m != nil {
			base = m[1]
			return nil
		}
		select {
		case err := <-done:
			t.Fatalf("run returned before serving: %v\n%s", err, logs)
		default:
		}
		return io.ErrNoProgress
	})

	get := func(path string) (int, string, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(body)
	}
	if code, _, body := get("/health"); code != http.StatusOK {
		t.Errorf("health: %d %s", code, body)
	}
	if code, ctype, _ := get("/"); code != http.StatusOK || !strings.HasPrefix(ctype, "text/html") {
		t.Errorf("console: %d %s", code, ctype)
	}
	// The program's own producer fills the queue it serves over HTTP.
	combtest.CheckFor(t, 20*time.Second, func() error {
		if _, _, body := get("/api/v1/resources/queues"); !strings.Contains(body, `"events"`) {
			return io.ErrNoProgress
		}
		return nil
	})

	cancel()
	select {
	case err := <-done:
		if err != nil && err != context.Canceled {
			t.Fatalf("run: %v\n%s", err, logs)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after cancel")
	}
	if _, err := http.Get(base + "/health"); err == nil {
		t.Error("the API still answers after run returned")
	}
	if fi, err := os.Stat(db + "-wal"); err == nil && fi.Size() > 0 {
		t.Errorf("WAL left with %d bytes: the database was not closed cleanly", fi.Size())
	}
}
