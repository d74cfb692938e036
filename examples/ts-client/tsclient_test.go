package tsclient_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/internal/sidecartest"
)

// run runs a command in dir and fails the test with its output if it fails.
func run(t *testing.T, dir string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	t.Logf("%s %s: %v", filepath.Base(name), strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
}

// copyTree copies the example's own files (not node_modules or build
// output) into dst, so the test never writes into the source tree.
func copyTree(t *testing.T, dst string) {
	t.Helper()
	for _, f := range []string{"package.json", "package-lock.json", "tsconfig.json", "src/main.ts", "src/typecheck.ts", "src/comb.d.ts"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTypeScriptClient: the client generated from docs/openapi.json by
// openapi-typescript is the committed src/comb.d.ts; main.ts and
// typecheck.ts compile against it under tsc --strict (typecheck.ts holds
// misuses the document's schemas must reject); and main.ts, run by node,
// starts comb as its child, pushes, pops and acks through the generated
// client over TCP and over the Unix socket, then SIGKILLs itself. comb
// must follow it down, remove its socket, and leave a database in which
// every acked message stays acked and every other one is still there.
func TestTypeScriptClient(t *testing.T) {
	node := sidecartest.Tool(t, "node")
	npm := sidecartest.Tool(t, "npm")
	bin := sidecartest.Build(t)
	doc, err := filepath.Abs("../../docs/openapi.json")
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	copyTree(t, dir)
	run(t, dir, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	run(t, dir, node, "node_modules/openapi-typescript/bin/cli.js", doc, "-o", "regenerated.d.ts")
	committed, err := os.ReadFile("src/comb.d.ts")
	if err != nil {
		t.Fatal(err)
	}
	regenerated, err := os.ReadFile(filepath.Join(dir, "regenerated.d.ts"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(committed, regenerated) {
		t.Fatal("src/comb.d.ts is not what openapi-typescript makes of docs/openapi.json: run npm run generate in examples/ts-client")
	}
	run(t, dir, node, "node_modules/typescript/bin/tsc", "-p", ".")

	work := t.TempDir()
	db, sock := filepath.Join(work, "comb.db"), filepath.Join(work, "comb.sock")
	cmd := exec.Command(node, "build/main.js", bin, db, sock)
	cmd.Dir = dir
	out := sidecartest.RunParent(t, cmd)
	logs := out.Logs
	if len(out.Acked) != 6 || out.Ready.Unix != sock || !strings.HasPrefix(out.Ready.URL, "http://127.0.0.1:") {
		t.Fatalf("node output %+v\n%s", out, logs)
	}
	if !strings.Contains(logs, "parent process exited") {
		t.Fatalf("comb did not shut down on its parent's death:\n%s", logs)
	}
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Fatalf("socket left behind: %v", err)
	}

	// The next start opens the same file: the six acked messages stay
	// acked, the four never popped are all there, nothing twice.
	sidecartest.NothingLost(t, bin, db, "ts", 10, out.Acked)
}
