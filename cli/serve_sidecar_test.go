package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/comb-broker/comb/internal/sidecartest"
)

// unixClient is an HTTP client whose every connection goes to sock.
func unixClient(sock string) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}}}
}

func sidecarDo(t *testing.T, c *http.Client, method, url string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

// TestServeUnixSocket: the same routes over a 0600 socket, without a token
// while TCP wants one; a second server refused on the same path; the socket
// removed on a clean shutdown; a socket left by kill -9 replaced.
func TestServeUnixSocket(t *testing.T) {
	bin := crashBuildBinary(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "comb.sock")
	db := filepath.Join(dir, "comb.db")
	s := sidecartest.Start(t, bin, "serve", "--addr", "127.0.0.1:0", "--unix", sock, "--db", db, "--jwt-secret", "s3cret-s3cret-s3cret-s3cret-s3cret")
	if s.Ready.Unix != sock || !strings.HasPrefix(s.Ready.URL, "http://127.0.0.1:") || s.Ready.PID != s.Pid() {
		t.Fatalf("ready line %+v", s.Ready)
	}
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v, want a 0600 socket", fi.Mode())
	}
	uc := unixClient(sock)
	if st, body := sidecarDo(t, http.DefaultClient, "GET", s.Ready.URL+"/api/v1/resources/queues", nil); st != http.StatusUnauthorized {
		t.Fatalf("TCP without a token: %d %s, want 401", st, body)
	}
	st, body := sidecarDo(t, uc, "POST", "http://comb/api/v1/push", map[string]any{"items": []any{map[string]any{"queue": "q", "payload": map[string]any{"n": 1}}}})
	if st != http.StatusCreated {
		t.Fatalf("push over the socket: %d %s", st, body)
	}
	st, body = sidecarDo(t, uc, "GET", "http://comb/api/v1/pop/queue/q?autoAck=true", nil)
	if st != http.StatusOK || !strings.Contains(string(body), `"n":1`) {
		t.Fatalf("pop over the socket: %d %s", st, body)
	}
	if st, body := sidecarDo(t, uc, "GET", "http://comb/openapi.json", nil); st != http.StatusOK || !bytes.Contains(body, []byte(`"openapi"`)) {
		t.Fatalf("openapi over the socket: %d", st)
	}

	// A second server on the same socket path is refused, and leaves the
	// first one's socket alone.
	out, err := exec.Command(bin, "serve", "--addr", "", "--unix", sock, "--db", filepath.Join(dir, "other.db")).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "socket in use") {
		t.Fatalf("second server: %v\n%s", err, out)
	}
	if st, _ := sidecarDo(t, uc, "GET", "http://comb/health", nil); st != http.StatusOK {
		t.Fatalf("first server after the refused second: %d", st)
	}

	// A clean shutdown removes the socket.
	s.Signal(syscall.SIGTERM)
	s.WaitExit(t, 30*time.Second)
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Fatalf("socket after shutdown: %v", err)
	}

	// kill -9 leaves the socket file; the next start replaces it, and a
	// configured mode applies.
	s = sidecartest.Start(t, bin, "serve", "--addr", "", "--unix", sock, "--db", db)
	if s.Ready.URL != "" {
		t.Fatalf("ready line names a URL without TCP: %+v", s.Ready)
	}
	s.Signal(os.Kill)
	s.WaitExit(t, 30*time.Second)
	if _, err := os.Lstat(sock); err != nil {
		t.Fatalf("kill -9 should leave the socket file: %v", err)
	}
	s = sidecartest.Start(t, bin, "serve", "--addr", "", "--unix", sock, "--unix-mode", "0660", "--db", db)
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o660 {
		t.Fatalf("socket after restart: %v %v", fi.Mode(), err)
	}
	st, body = sidecarDo(t, unixClient(sock), "GET", "http://comb/api/v1/resources/queues/q", nil)
	if st != http.StatusOK {
		t.Fatalf("queue after restart: %d %s", st, body)
	}

	// The operator commands reach the socket with --url unix://.
	var stdout, stderr bytes.Buffer
	m := &App{Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }}
	if err := m.Run(context.Background(), []string{"groups", "--url", "unix://" + sock}); err != nil {
		t.Fatalf("comb groups --url unix://: %v\n%s", err, stderr.String())
	}
	if err := m.Run(context.Background(), []string{"dlq", "--url", "unix://" + sock}); err != nil {
		t.Fatalf("comb dlq --url unix://: %v\n%s", err, stderr.String())
	}
}

// TestServeExitsWithParent starts comb exactly as an app does, through an
// intermediate parent (a shell), reads the ready line, pushes and pops,
// then SIGKILLs the parent: comb must shut down cleanly on its own, and the
// next start must open the same file with nothing answered lost.
func TestServeExitsWithParent(t *testing.T) {
	bin := crashBuildBinary(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "comb.db")
	sock := filepath.Join(dir, "comb.sock")
	readyFile := filepath.Join(dir, "ready.json")
	// "; :" keeps the shell from exec'ing comb, so the shell stays its parent.
	s := sidecartest.Start(t, "sh", "-c", `"$0" serve --addr 127.0.0.1:0 --unix "$1" --db "$2" --ready-file "$3" --exit-with-parent; :`, bin, sock, db, readyFile)
	if s.Ready.PID == s.Pid() {
		t.Fatal("comb is not a child of the shell")
	}
	fileLine, err := os.ReadFile(readyFile)
	if err != nil {
		t.Fatal(err)
	}
	var fromFile sidecartest.Ready
	if err := json.Unmarshal(fileLine, &fromFile); err != nil || fromFile != s.Ready {
		t.Fatalf("ready file %q, want the ready line %+v", fileLine, s.Ready)
	}

	const n = 20
	items := []any{}
	for i := range n {
		items = append(items, map[string]any{"queue": "app", "transactionId": fmt.Sprint("t", i), "payload": map[string]any{"i": i}})
	}
	if st, body := sidecarDo(t, http.DefaultClient, "POST", s.Ready.URL+"/api/v1/push", map[string]any{"items": items}); st != http.StatusCreated {
		t.Fatalf("push: %d %s", st, body)
	}
	st, body := sidecarDo(t, unixClient(sock), "GET", "http://comb/api/v1/pop/queue/app?batch=5&autoAck=true", nil)
	if st != http.StatusOK {
		t.Fatalf("pop: %d %s", st, body)
	}
	var popped struct {
		Messages []struct {
			TransactionID string `json:"transactionId"`
		} `json:"messages"`
	}
	json.Unmarshal(body, &popped)
	if len(popped.Messages) != 5 {
		t.Fatalf("popped %d, want 5", len(popped.Messages))
	}

	killed := time.Now()
	if err := s.Signal(os.Kill); err != nil { // the parent, SIGKILL
		t.Fatal(err)
	}
	took := s.WaitExit(t, 10*time.Second)
	t.Logf("comb exited %v after its parent was SIGKILLed (%v since the kill)", took, time.Since(killed))
	if took > 3*time.Second {
		t.Errorf("comb took %v to follow its parent", took)
	}
	if !strings.Contains(s.Stderr(), "parent process exited") {
		t.Errorf("comb did not log a parent-triggered shutdown:\n%s", s.Stderr())
	}
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Errorf("socket left after the parent died: %v", err)
	}

	// The same file opens again, and exactly the 15 unpopped messages remain.
	s2 := sidecartest.Start(t, bin, "serve", "--addr", "127.0.0.1:0", "--db", db)
	st, body = sidecarDo(t, http.DefaultClient, "GET", s2.Ready.URL+"/api/v1/pop/queue/app?batch=100&autoAck=true", nil)
	if st != http.StatusOK {
		t.Fatalf("pop after restart: %d %s", st, body)
	}
	var rest struct {
		Messages []struct {
			TransactionID string `json:"transactionId"`
		} `json:"messages"`
	}
	json.Unmarshal(body, &rest)
	seen := map[string]bool{}
	for _, m := range append(popped.Messages, rest.Messages...) {
		if seen[m.TransactionID] {
			t.Errorf("%s delivered twice", m.TransactionID)
		}
		seen[m.TransactionID] = true
	}
	if len(seen) != n {
		t.Fatalf("%d distinct messages delivered across the restart, want %d", len(seen), n)
	}
}

// TestServeExitsOnStdinEOF: with --exit-on-stdin-eof, closing comb's stdin
// (what happens when the app that holds the pipe dies) shuts it down.
func TestServeExitsOnStdinEOF(t *testing.T) {
	bin := crashBuildBinary(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "c.db"), "--exit-on-stdin-eof")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.Contains(line, `"ready":true`) {
		t.Fatalf("ready line %q: %v", line, err)
	}
	in.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("comb exited with %v\n%s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("comb still running 10s after stdin closed")
	}
	if !strings.Contains(stderr.String(), "standard input closed") {
		t.Fatalf("stderr:\n%s", stderr.String())
	}
}

// TestSidecarFromNode runs examples/node-sidecar/sidecar.mjs: a real Node
// program starts comb, reads its ready line, pushes over TCP, pops over the
// Unix socket and SIGKILLs itself. comb must exit on its own, remove its
// socket, and leave a file that opens with the unpopped messages intact.
func TestSidecarFromNode(t *testing.T) {
	node := sidecartest.Tool(t, "node")
	bin := crashBuildBinary(t)
	dir := t.TempDir()
	db, sock := filepath.Join(dir, "comb.db"), filepath.Join(dir, "comb.sock")
	out := sidecartest.RunParent(t, exec.Command(node, "../examples/node-sidecar/sidecar.mjs", bin, db, sock))
	if len(out.Acked) != 4 || out.Ready.Unix != sock {
		t.Fatalf("node output %+v\n%s", out, out.Logs)
	}
	if !strings.Contains(out.Logs, "parent process exited") {
		t.Fatalf("comb did not shut down on its parent's death:\n%s", out.Logs)
	}
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Fatalf("socket left behind: %v", err)
	}
	sidecartest.NothingLost(t, bin, db, "node", 10, out.Acked)
}
