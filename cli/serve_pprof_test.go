package cli

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// freeLoopbackAddr returns a loopback address nothing listens on.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func TestServeWithPprofServesProfilesOnlyOnItsLoopbackAddress(t *testing.T) {
	dir := t.TempDir()
	pprofAddr := freeLoopbackAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	var stderr bytes.Buffer
	m := &App{Stdout: io.Discard, Stderr: &stderr, Getenv: func(string) string { return "" },
		Ready: func(addr string) { ready <- addr }}
	done := make(chan error, 1)
	go func() {
		done <- m.Run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "comb.db"), "--pprof", pprofAddr})
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("serve returned early: %v\n%s", err, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not start")
	}
	get := func(url string) (int, string) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get("http://" + pprofAddr + "/debug/pprof/"); code != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("pprof index: %d %.200s", code, body)
	}
	if code, body := get("http://" + pprofAddr + "/debug/pprof/heap?debug=1"); code != http.StatusOK || !strings.Contains(body, "heap profile") {
		t.Errorf("heap profile: %d %.200s", code, body)
	}
	if code, _ := get("http://" + addr + "/debug/pprof/"); code == http.StatusOK {
		t.Error("the API address serves profiles too")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not return after cancel")
	}
	if _, err := net.DialTimeout("tcp", pprofAddr, time.Second); err == nil {
		t.Error("pprof still listening after serve returned")
	}
}

func TestServeRefusesPprofOnANonLoopbackAddress(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "comb.db")
	var stderr bytes.Buffer
	m := &App{Stdout: io.Discard, Stderr: &stderr, Getenv: func(string) string { return "" }}
	err := m.Run(context.Background(), []string{"serve", "--addr", "127.0.0.1:0", "--db", db, "--pprof", "0.0.0.0:0"})
	if err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("serve --pprof 0.0.0.0:0: %v, want a refusal naming loopback", err)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("refused start left a database file: %v", err)
	}
}
