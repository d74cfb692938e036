package pyclient_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
	out := sidecartest.RunParent(t, cmd)
	logs := out.Logs
	if len(out.Acked) != 6 || out.Ready.Unix != sock {
		t.Fatalf("python output %+v\n%s", out, logs)
	}
	if !strings.Contains(logs, "standard input closed") {
		t.Fatalf("comb did not shut down when its stdin closed:\n%s", logs)
	}
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Fatalf("socket left behind: %v", err)
	}

	sidecartest.NothingLost(t, bin, db, "py", 10, out.Acked)
}
