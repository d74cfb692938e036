package cli

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// TestHealthcheck asks a real server: 0 while it serves, an error once it
// is gone.
func TestHealthcheck(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	var serveErr bytes.Buffer
	srv := &App{Stdout: io.Discard, Stderr: &serveErr, Getenv: func(string) string { return "" },
		Ready: func(addr string) { ready <- addr }}
	done := make(chan error, 1)
	go func() {
		done <- srv.Run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "comb.db")})
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("serve: %v\n%s", err, serveErr.String())
	}
	url := "http://" + addr

	var out bytes.Buffer
	m := &App{Stdout: &out, Stderr: io.Discard, Getenv: func(k string) string {
		if k == "COMB_URL" {
			return url
		}
		return ""
	}}
	if err := m.Run(context.Background(), []string{"healthcheck"}); err != nil {
		t.Fatalf("healthcheck of a serving server (COMB_URL): %v", err)
	}
	if !strings.Contains(out.String(), `"status":"healthy"`) {
		t.Fatalf("healthcheck printed %q", out.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	err := m.Run(context.Background(), []string{"healthcheck", "--url", url, "--timeout", "2s"})
	if err == nil {
		t.Fatal("healthcheck of a stopped server succeeded")
	}
	if err := m.Run(context.Background(), []string{"healthcheck", "--timeout", "0s"}); err == nil {
		t.Fatal("--timeout 0s accepted")
	}
}
