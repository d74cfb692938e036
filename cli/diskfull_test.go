//go:build linux

package cli

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
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/comb-broker/comb/internal/combtest"
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
	m := &App{Stdout: io.Discard, Stderr: &stderr, Getenv: func(string) string { return "" },
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

// fullDisk is a serve process on a tmpfs of its own, for the tests of a
// file system full to the last byte.
type fullDisk struct {
	t      *testing.T
	dir    string
	db     string
	base   string
	stderr *combtest.Logs
	cancel context.CancelFunc
	done   chan error
	rnd    *rand.Rand

	stopOnce sync.Once
	stopErr  error
}

// startOnTmpfs mounts a tmpfs of size bytes and serves a database on it.
// It needs root; it skips where mounting is not permitted, except under
// CI=true, where CI runs it as root on Linux and a skip would hide a
// failure.
func startOnTmpfs(t *testing.T, size string, args ...string) *fullDisk {
	t.Helper()
	skip := t.Skipf
	if os.Getenv("CI") == "true" {
		skip = t.Fatalf
	}
	if os.Geteuid() != 0 {
		skip("mounting a small filesystem needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		skip("cannot mount a tmpfs here: %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	})
	return startServeIn(t, dir, args...)
}

// startServeIn serves comb.db in dir until the test ends.
func startServeIn(t *testing.T, dir string, args ...string) *fullDisk {
	t.Helper()
	d := &fullDisk{t: t, dir: dir, db: filepath.Join(dir, "comb.db"), stderr: &combtest.Logs{}, done: make(chan error, 1),
		rnd: rand.New(rand.NewPCG(5, 6))}
	ctx, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	ready := make(chan string, 1)
	m := &App{Stdout: io.Discard, Stderr: d.stderr, Getenv: func(string) string { return "" },
		Ready: func(addr string) { ready <- addr }}
	go func() {
		d.done <- m.Run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0", "--db", d.db}, args...))
	}()
	select {
	case addr := <-ready:
		d.base = "http://" + addr
	case err := <-d.done:
		t.Fatalf("serve returned early: %v\n%s", err, d.stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not start")
	}
	t.Cleanup(func() { d.stop() })
	return d
}

// stop ends serve and reports its error.
func (d *fullDisk) stop() error {
	d.stopOnce.Do(func() {
		d.cancel()
		d.stopErr = <-d.done
	})
	return d.stopErr
}

func (d *fullDisk) do(method, path string, body any) (int, []byte) {
	d.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, d.base+path, rd)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// push sends n messages of about size random bytes each to queue, with
// transactionIds prefix-0..n-1.
func (d *fullDisk) push(queue, prefix string, n, size int) (int, []byte) {
	items := make([]map[string]any, n)
	for i := range items {
		raw := make([]byte, size*3/4)
		for j := range raw {
			raw[j] = byte(d.rnd.Uint32())
		}
		items[i] = map[string]any{"queue": queue, "transactionId": fmt.Sprintf("%s-%d", prefix, i),
			"payload": map[string]any{"pad": base64.StdEncoding.EncodeToString(raw)}}
	}
	return d.do("POST", "/api/v1/push", map[string]any{"items": items})
}

// fill pushes to queue until the server refuses, and checks the refusal
// is a 507 with a JSON error.
func (d *fullDisk) fill(queue string) int {
	d.t.Helper()
	for b := 0; b < 5000; b++ {
		status, body := d.push(queue, fmt.Sprintf("%s-%d", queue, b), 10, 3000)
		if status == http.StatusCreated {
			continue
		}
		var e struct{ Error string }
		if status != http.StatusInsufficientStorage || json.Unmarshal(body, &e) != nil || e.Error == "" {
			d.t.Fatalf("push to %s on a full disk: %d %s", queue, status, body)
		}
		return b * 10
	}
	d.t.Fatalf("the filesystem never filled")
	return 0
}

// topUp fills what is left of the file system with a file comb does not
// know about, to the last byte, as another program on the box would. The
// file is never removed: comb must make room on its own.
func (d *fullDisk) topUp(name string) {
	d.t.Helper()
	f, err := os.Create(filepath.Join(d.dir, name))
	if err != nil {
		d.t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			break
		}
	}
	for {
		if _, err := f.Write(buf[:1]); err != nil {
			break
		}
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(d.dir, &st); err != nil || st.Bavail != 0 {
		d.t.Fatalf("file system not full after the top-up: %d blocks free, %v", st.Bavail, err)
	}
}

// pushMaybe pushes 5 small messages to queue on a disk that may have no
// room for them: it returns their ids if they were answered 201, nothing
// if 507, and fails the test on any other answer.
func (d *fullDisk) pushMaybe(queue, prefix string) []string {
	d.t.Helper()
	status, body := d.push(queue, prefix, 5, 1000)
	switch status {
	case http.StatusCreated:
		return []string{prefix + "-0", prefix + "-1", prefix + "-2", prefix + "-3", prefix + "-4"}
	case http.StatusInsufficientStorage:
		return nil
	}
	d.t.Fatalf("push on a full disk: %d %s", status, body)
	return nil
}

// pushUntil201 retries one push to queue until it is answered 201 or the
// deadline passes, and returns the transactionIds it stored.
func (d *fullDisk) pushUntil201(queue, prefix string, within time.Duration) []string {
	d.t.Helper()
	deadline := time.Now().Add(within)
	for {
		status, body := d.push(queue, prefix, 5, 1000)
		if status == http.StatusCreated {
			ids := make([]string, 5)
			for i := range ids {
				ids[i] = fmt.Sprintf("%s-%d", prefix, i)
			}
			return ids
		}
		if status != http.StatusInsufficientStorage {
			d.t.Fatalf("push while space is being made: %d %s", status, body)
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("writes did not resume within %v: %d %s\n%s", within, status, body, d.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestAFilesystemFullToTheByteIsFreedByAQueueDeleteAndByRetention fills a
// real tmpfs to its last byte (comb's pushes, then another file that is
// never removed) twice: a queue DELETE, then a retention policy, must make
// room by themselves, and pushes must resume without a restart. Every push
// answered 201 to the queue that was neither deleted nor retained is read
// back, and check finds nothing.
func TestAFilesystemFullToTheByteIsFreedByAQueueDeleteAndByRetention(t *testing.T) {
	d := startOnTmpfs(t, "8m", "--retention-interval", "300")
	if status, body := d.do("POST", "/api/v1/configure", map[string]any{"queue": "keep"}); status >= 300 {
		t.Fatalf("configure keep: %d %s", status, body)
	}
	var kept []string
	status, body := d.push("keep", "keep-0", 5, 1000)
	if status != http.StatusCreated {
		t.Fatalf("push keep: %d %s", status, body)
	}
	for i := range 5 {
		kept = append(kept, fmt.Sprintf("keep-0-%d", i))
	}

	// 1. A queue delete makes room.
	n := d.fill("bulk")
	d.topUp("other-program-1")
	kept = append(kept, d.pushMaybe("keep", "full-1")...)
	if status, body := d.do("DELETE", "/api/v1/resources/queues/bulk", nil); status != http.StatusOK {
		t.Fatalf("delete a queue of %d messages on a full disk: %d %s\n%s", n, status, body, d.stderr.String())
	}
	kept = append(kept, d.pushUntil201("keep", "keep-1", 30*time.Second)...)

	// 2. Retention makes room: a policy set once the disk is full (the
	// configure itself is a write that must go through).
	n = d.fill("aged")
	d.topUp("other-program-2")
	kept = append(kept, d.pushMaybe("keep", "full-2")...)
	time.Sleep(1100 * time.Millisecond) // what "aged" holds is older than a second
	if status, body := d.do("POST", "/api/v1/configure", map[string]any{"queue": "aged",
		"options": map[string]any{"retentionEnabled": true, "retentionSeconds": 1}}); status >= 300 {
		t.Fatalf("configure retention on a full disk: %d %s\n%s", status, body, d.stderr.String())
	}
	kept = append(kept, d.pushUntil201("keep", "keep-2", 60*time.Second)...)
	t.Logf("filled with %d messages, freed by a delete, then by retention", n)

	// Nothing answered 201 to keep is lost, nothing refused was stored.
	seen := map[string]bool{}
	for {
		status, body := d.do("GET", "/api/v1/pop/queue/keep?batch=100&consumerGroup=audit&autoAck=true", nil)
		if status == http.StatusNoContent {
			break
		}
		var res struct {
			Messages []struct{ TransactionID string } `json:"messages"`
		}
		if status != http.StatusOK || json.Unmarshal(body, &res) != nil {
			t.Fatalf("pop keep: %d %s", status, body)
		}
		for _, m := range res.Messages {
			seen[m.TransactionID] = true
		}
	}
	for _, id := range kept {
		if !seen[id] {
			t.Errorf("%s was answered 201 and is gone", id)
		}
	}
	if len(seen) != len(kept) {
		t.Errorf("keep holds %d messages, %d were answered 201", len(seen), len(kept))
	}
	if err := d.stop(); err != nil {
		t.Fatalf("serve: %v\n%s", err, d.stderr.String())
	}
	if log := d.stderr.String(); strings.Contains(log, "cannot rollback") {
		t.Errorf("a failed commit logged a second, spurious failure:\n%s", log)
	}
	if out, err := runCheck(t, d.db); err != nil || !strings.Contains(out, " 0 findings") {
		t.Fatalf("check after a full disk: %v\n%s", err, out)
	}
}
