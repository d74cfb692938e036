// Package sidecartest builds the comb binary and runs it as a child
// process the way an app does, for tests in which a program in another
// language (Node, Python) drives comb.
package sidecartest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/comb-broker/comb/internal/combtest"
)

// Tool returns the path of an external program the test needs. Where it is
// missing the test is skipped, except under CI=true, where it fails: CI
// installs it, so a missing tool there is a broken machine.
func Tool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required under CI: %v", name, err)
		}
		t.Skipf("%s not installed", name)
	}
	return p
}

// Build compiles the comb command of this module into a temporary
// directory and returns the binary's path.
func Build(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "comb")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/comb-broker/comb").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// Ready is the line comb prints on stdout once it accepts connections.
type Ready struct {
	Ready   bool   `json:"ready"`
	URL     string `json:"url,omitempty"`
	Unix    string `json:"unix,omitempty"`
	PID     int    `json:"pid"`
	Version string `json:"version"`
}

// Proc is a comb process started by the test itself.
type Proc struct {
	Ready   Ready
	cmd     *exec.Cmd
	stderr  *combtest.Logs
	exited  chan struct{} // closed once comb has exited and waitErr is set
	waitErr error
}

// Start runs the comb binary with args and waits for its ready line. The
// process is killed when the test ends, if it is still running.
func Start(t testing.TB, bin string, args ...string) *Proc {
	t.Helper()
	p := &Proc{cmd: exec.Command(bin, args...), stderr: &combtest.Logs{}, exited: make(chan struct{})}
	p.cmd.Stderr = p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		r := bufio.NewReader(out)
		line, _ := r.ReadString('\n')
		lines <- line
		io.Copy(io.Discard, r)
		p.waitErr = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		// comb may be the child of the program started (a shell standing
		// in for an app); it must not outlive the test either.
		if p.Ready.PID != 0 && p.Ready.PID != p.cmd.Process.Pid {
			if c, err := os.FindProcess(p.Ready.PID); err == nil {
				c.Kill()
			}
		}
		<-p.exited
		if t.Failed() {
			t.Logf("comb stderr:\n%s", p.stderr)
		}
	})
	select {
	case line := <-lines:
		if err := json.Unmarshal([]byte(line), &p.Ready); err != nil || !p.Ready.Ready {
			t.Fatalf("ready line %q: %v\n%s", line, err, p.stderr)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("no ready line within 60s\n%s", p.stderr)
	}
	return p
}

// Pid is the process id of the program started, which is comb's own
// unless comb was started through another program.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the program started.
func (p *Proc) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }

// Stderr is what the program started has written to stderr so far.
func (p *Proc) Stderr() string { return p.stderr.String() }

// WaitExit waits until comb has exited, seen as EOF on the stdout it
// shares with the program started, and returns how long that took. It
// fails the test when that takes longer than within.
func (p *Proc) WaitExit(t testing.TB, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	select {
	case <-p.exited:
		return time.Since(start)
	case <-time.After(within):
		t.Fatalf("comb (pid %d) still running %v later\n%s", p.Ready.PID, within, p.stderr)
		return 0
	}
}

// Stop shuts comb down with SIGTERM, as an app quitting does, and fails
// the test unless it exits cleanly within 30 seconds.
func (p *Proc) Stop(t testing.TB) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	select {
	case <-p.exited:
		if p.waitErr != nil {
			t.Fatalf("comb exited with %v\n%s", p.waitErr, p.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("comb still running 30s after SIGTERM\n%s", p.stderr)
	}
}

// Drain pops everything left on queue with autoAck and returns the
// transaction ids, failing the test on any reply but 200 and 204.
func Drain(t testing.TB, base, queue string) []string {
	t.Helper()
	c := &combtest.Client{TB: t, URL: base, HTTP: http.DefaultClient}
	var ids []string
	for {
		resp := c.Do(http.MethodGet, fmt.Sprintf("/api/v1/pop/queue/%s?batch=100&wait=false&autoAck=true", queue), nil)
		if resp.Status == http.StatusNoContent {
			return ids
		}
		var r struct {
			Messages []struct {
				TransactionID string `json:"transactionId"`
			} `json:"messages"`
		}
		if resp.Status != http.StatusOK || json.Unmarshal(resp.Body, &r) != nil || len(r.Messages) == 0 {
			t.Fatalf("drain %s: %d %s", queue, resp.Status, resp.Body)
		}
		for _, m := range r.Messages {
			ids = append(ids, m.TransactionID)
		}
	}
}

// Parent is what a program that ran comb as its child reported on stdout
// (one JSON object: comb's ready line and the transactionIds it acked),
// and what comb logged, read from the stderr it inherited.
type Parent struct {
	Ready Ready    `json:"ready"`
	Acked []string `json:"acked"`
	Logs  string   `json:"-"`
}

// RunParent runs cmd, a program that starts comb as its child with the
// same stderr and then dies, and waits for comb to exit too: EOF on that
// shared stderr means both are gone. It fails the test when comb outlives
// its parent by 10 s or the parent's output does not parse.
func RunParent(t testing.TB, cmd *exec.Cmd) Parent {
	t.Helper()
	name := filepath.Base(cmd.Path)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	// An os.Pipe, not StderrPipe, which Wait would close when the parent
	// exits, before comb has.
	stderr, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	cmd.Stderr = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	combDone := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(stderr)
		combDone <- string(b)
	}()
	werr := cmd.Wait()
	died := time.Now()
	var out Parent
	select {
	case out.Logs = <-combDone:
	case <-time.After(10 * time.Second):
		t.Fatalf("comb still running 10s after %s died; %s said %s", name, name, stdout.String())
	}
	t.Logf("comb exited %v after %s died (%v)", time.Since(died).Round(time.Millisecond), name, werr)
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("%s output %q: %v\n%s", name, stdout.String(), err, out.Logs)
	}
	return out
}

// NothingLost starts comb again on db and checks that the n messages
// prefix-0 … prefix-(n-1) a parent pushed are each either among acked or
// still there to pop, exactly once.
func NothingLost(t testing.TB, bin, db, prefix string, n int, acked []string) {
	t.Helper()
	p := Start(t, bin, "serve", "--addr", "127.0.0.1:0", "--db", db)
	rest := Drain(t, p.Ready.URL, prefix)
	p.Stop(t)
	all := append(append([]string(nil), acked...), rest...)
	sort.Strings(all)
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("%s-%d", prefix, i))
	}
	sort.Strings(want)
	if fmt.Sprint(all) != fmt.Sprint(want) {
		t.Fatalf("acked %v, left %v: want each of %v exactly once", acked, rest, want)
	}
}
