package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestARealFullFilesystemAnswers507AndWritesResumeWhenSpaceReturns runs
// serve on a 4 MiB tmpfs the test mounts: it needs root (CI runs as root)
// and is skipped where mounting is not permitted.
func TestARealFullFilesystemAnswers507AndWritesResumeWhenSpaceReturns(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a small filesystem needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	})
	// Ballast that the test deletes to give space back.
	ballast := filepath.Join(dir, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "comb.db")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	var stderr bytes.Buffer
	m := &Main{Stdout: io.Discard, Stderr: &stderr, Getenv: func(string) string { return "" },
		Ready: func(addr string) { ready <- addr }}
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--db", db}) }()
	var base string
	select {
	case addr := <-ready:
		base = "http://" + addr
	case err := <-done:
		t.Fatalf("serve returned early: %v\n%s", err, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not start")
	}

	rnd := rand.New(rand.NewPCG(3, 4))
	push := func(b int) (int, []byte) {
		items := make([]map[string]any, 10)
		for i := range items {
			raw := make([]byte, 3000)
			for j := range raw {
				raw[j] = byte(rnd.Uint32())
			}
			items[i] = map[string]any{"queue": "disk", "transactionId": fmt.Sprintf("d-%d-%d", b, i),
				"payload": map[string]any{"pad": base64.StdEncoding.EncodeToString(raw)}}
		}
		body, _ := json.Marshal(map[string]any{"items": items})
		resp, err := http.Post(base+"/api/v1/push", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatalf("push: %v", err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, out
	}
	answered := 0
	var status int
	var reply []byte
	for b := 0; ; b++ {
		if status, reply = push(b); status != http.StatusCreated {
			break
		}
		answered += 10
		if b > 1000 {
			t.Fatal("a 4 MiB filesystem never filled")
		}
	}
	var e struct{ Error string }
	if status != http.StatusInsufficientStorage || json.Unmarshal(reply, &e) != nil || e.Error == "" {
		t.Fatalf("push on a full disk: %d %s", status, reply)
	}
	resp, err := http.Get(base + "/health")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("health on a full disk: %v %v", resp, err)
	}
	resp.Body.Close()

	// A pop writes its lease through the WAL: it works where SQLite finds
	// room, and otherwise is refused the same clear way, never a 500.
	resp, err = http.Get(base + "/api/v1/pop/queue/disk?batch=5&consumerGroup=g")
	if err != nil {
		t.Fatalf("pop on a full disk: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusInsufficientStorage {
		t.Fatalf("pop on a full disk: %d", resp.StatusCode)
	}
	t.Logf("pop on a full disk: %d after %d messages", resp.StatusCode, answered)

	// Space returns: writes resume without a restart.
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	if status, reply := push(100000); status != http.StatusCreated {
		t.Fatalf("push once space returned: %d %s", status, reply)
	}
	answered += 10

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v\n%s", err, stderr.String())
	}
	out, err := runCheck(t, db)
	if err != nil {
		t.Fatalf("check after a full disk: %v\n%s", err, out)
	}
	if want := fmt.Sprintf(" %d messages, 0 findings", answered); !bytes.Contains([]byte(out), []byte(want)) {
		t.Fatalf("check: want%s\n%s", want, out)
	}
}
