package cli

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeNotifiesServiceManager runs serve the way systemd runs a
// Type=notify unit: READY=1 comes only once the server answers HTTP,
// WATCHDOG=1 follows at half of WATCHDOG_USEC, and STOPPING=1 when the
// shutdown begins.
func TestServeNotifiesServiceManager(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "notify.sock")
	mgr, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close()
	next := func() string {
		t.Helper()
		mgr.SetReadDeadline(time.Now().Add(30 * time.Second))
		buf := make([]byte, 4096)
		n, err := mgr.Read(buf)
		if err != nil {
			t.Fatalf("read notify socket: %v", err)
		}
		return string(buf[:n])
	}
	environ := map[string]string{"NOTIFY_SOCKET": sock, "WATCHDOG_USEC": "100000"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	var stderr bytes.Buffer
	m := &App{Stdout: io.Discard, Stderr: &stderr, Getenv: func(k string) string { return environ[k] },
		Ready: func(addr string) { ready <- addr }}
	done := make(chan error, 1)
	go func() {
		done <- m.Run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "comb.db")})
	}()
	addr := <-ready
	if got := next(); got != "READY=1\nSTATUS=serving" {
		t.Fatalf("first datagram %q, want READY=1", got)
	}
	resp, err := http.Get("http://" + addr + "/health")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("health after READY=1: %v %v", resp, err)
	}
	resp.Body.Close()
	if got := next(); got != "WATCHDOG=1" {
		t.Fatalf("datagram %q, want WATCHDOG=1", got)
	}
	cancel()
	for got := next(); got != "STOPPING=1\nSTATUS=stopping"; got = next() {
		if got != "WATCHDOG=1" {
			t.Fatalf("datagram %q during shutdown, want STOPPING=1", got)
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("serve: %v\n%s", err, stderr.String())
	}
	if strings.Contains(stderr.String(), "level=WARN") {
		t.Fatalf("serve warned:\n%s", stderr.String())
	}
}
