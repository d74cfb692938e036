package pyclient_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/internal/sidecartest"
)

// clientFromDocs returns the Python client shown in docs/embedding.md: the
// first python block after its heading, so the test runs what readers copy.
func clientFromDocs(t *testing.T) []byte {
	t.Helper()
	doc, err := os.ReadFile("../../docs/embedding.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := bytes.Cut(doc, []byte("\n## A Python client from the document\n"))
	if !ok {
		t.Fatal("docs/embedding.md has no section \"A Python client from the document\"")
	}
	_, code, ok := bytes.Cut(after, []byte("\n```python\n"))
	if !ok {
		t.Fatal("no python block in the section")
	}
	code, _, ok = bytes.Cut(code, []byte("\n```\n"))
	if !ok {
		t.Fatal("python block not closed")
	}
	return append(code, '\n')
}

// TestPythonClient runs sidecar.py with the client from docs/embedding.md:
// a Python program starts comb as its child with --exit-on-stdin-eof,
// pushes over TCP, pops and acks over TCP and over the Unix socket, sees a
// bad push refused with the document's error body, then SIGKILLs itself.
// comb must shut down on its own, remove its socket, and keep every
// message that was not acked.
func TestPythonClient(t *testing.T) {
	python := sidecartest.Tool(t, "python3")
	bin := sidecartest.Build(t)
	dir := t.TempDir()
	driver, err := os.ReadFile("sidecar.py")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sidecar.py"), driver, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "comb_client.py"), clientFromDocs(t), 0o644); err != nil {
		t.Fatal(err)
	}
	db, sock := filepath.Join(dir, "comb.db"), filepath.Join(dir, "comb.sock")
	cmd := exec.Command(python, "sidecar.py", bin, db, sock)
	cmd.Dir = dir
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	// comb inherits python's stderr: EOF on it means both are gone.
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
	var logs string
	select {
	case logs = <-combDone:
	case <-time.After(10 * time.Second):
		t.Fatalf("comb still running 10s after python died; python said %s", stdout.String())
	}
	t.Logf("comb exited %v after python died (%v)", time.Since(died).Round(time.Millisecond), werr)
	var out struct {
		Ready sidecartest.Ready `json:"ready"`
		Acked []string          `json:"acked"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("python output %q: %v\n%s", stdout.String(), err, logs)
	}
	if len(out.Acked) != 6 || out.Ready.Unix != sock {
		t.Fatalf("python output %+v\n%s", out, logs)
	}
	if !strings.Contains(logs, "standard input closed") {
		t.Fatalf("comb did not shut down when its stdin closed:\n%s", logs)
	}
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Fatalf("socket left behind: %v", err)
	}

	p := sidecartest.Start(t, bin, "serve", "--addr", "127.0.0.1:0", "--db", db)
	rest := sidecartest.Drain(t, p.Ready.URL, "py")
	p.Stop(t)
	all := append(slices.Clone(out.Acked), rest...)
	slices.Sort(all)
	var want []string
	for i := range 10 {
		want = append(want, fmt.Sprintf("py-%d", i))
	}
	if !slices.Equal(all, want) {
		t.Fatalf("acked %v, left %v: want each of %v exactly once", out.Acked, rest, want)
	}
}
