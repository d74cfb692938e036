//go:build linux

package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// A backup restored over the path of a running server (cp to a new name,
// then mv over it): the push that meets it answers 503 with what to do,
// serve stops and exits non-zero saying why, and the restored file, served
// again, is whole. Before, pushes went on answering 201 into the file no
// name led to, and the next start replayed its WAL into the restored one.
func TestServeStopsWhenItsFileIsReplaced(t *testing.T) {
	dir := t.TempDir()
	d := startServeIn(t, dir)
	if code, body := d.push("q", "before", 20, 64); code != http.StatusCreated {
		t.Fatalf("push: %d %s", code, body)
	}
	backup := filepath.Join(t.TempDir(), "backup.db")
	if code, out, errOut := runMain(t, nil, "backup", "--url", d.base, "--out", backup); code != 0 {
		t.Fatalf("backup: exit %d %s %s", code, out, errOut)
	}
	if err := copyFile(backup, d.db+".new"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(d.db+".new", d.db); err != nil {
		t.Fatal(err)
	}
	code, body := d.push("q", "after", 1, 64)
	if code != http.StatusServiceUnavailable || !strings.Contains(string(body), "replaced") {
		t.Errorf("push after the restore: %d %s, want 503 saying the file was replaced", code, body)
	}
	select {
	case err := <-d.done:
		d.done <- err // for stop
		if !errors.Is(err, combtype.ErrReplaced) {
			t.Errorf("serve returned %v, want ErrReplaced", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	if !strings.Contains(d.stderr.String(), "start comb again") {
		t.Errorf("the log does not say what to do:\n%s", d.stderr.String())
	}
	// Served again, the restored file holds what the backup held.
	d2 := startServeIn(t, dir)
	code, body = d2.do("GET", "/api/v1/resources/queues/q", nil)
	if code != http.StatusOK || !strings.Contains(string(body), `"totals":{"total":20,`) {
		t.Errorf("the restored file: %d %s", code, body)
	}
	if err := d2.stop(); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runMain(t, nil, "check", "--db", d.db); code != 0 {
		t.Errorf("check of the restored file: exit %d %s %s", code, out, errOut)
	}
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o600)
}

// A backup copied over the path of a running `comb serve` in place (cp
// onto the path, which writes into the served file rather than replacing
// it): the push that meets it answers 503, serve exits 1, its WAL is set
// aside, and the file served again is the backup, whole. Before, pushes
// went on answering 201 into a file whose pages were the backup's and
// whose WAL was the server's, and comb check found it malformed.
func TestServeStopsWhenABackupIsCopiedOverItsFile(t *testing.T) {
	bin := crashBuildBinary(t)
	db := filepath.Join(t.TempDir(), "comb.db")
	srv := crashStartServer(t, bin, db, "overwritten")
	client := crashNewClient()
	ctx := context.Background()
	push := func(prefix string, n int) (int, []byte) {
		items := make([]map[string]any, n)
		for i := range items {
			items[i] = map[string]any{"queue": "q", "transactionId": fmt.Sprintf("%s-%d", prefix, i), "payload": map[string]any{"i": i}}
		}
		status, body, err := crashDo(ctx, client, http.MethodPost, srv.base+"/api/v1/push", map[string]any{"items": items})
		if err != nil {
			t.Fatal(err)
		}
		return status, body
	}
	if code, body := push("before", 20); code != http.StatusCreated {
		t.Fatalf("push: %d %s", code, body)
	}
	backup := filepath.Join(t.TempDir(), "backup.db")
	if out, err := exec.Command(bin, "backup", "--url", srv.base, "--out", backup).CombinedOutput(); err != nil {
		t.Fatalf("backup: %v %s", err, out)
	}
	// Written after the backup: in the server's WAL, not in the copy.
	for i := range 30 {
		if code, body := push(fmt.Sprintf("between-%d", i), 1); code != http.StatusCreated {
			t.Fatalf("push: %d %s", code, body)
		}
	}
	if out, err := exec.Command("cp", backup, db).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	code, body := push("after", 1)
	if code != http.StatusServiceUnavailable || !strings.Contains(string(body), "replaced") {
		t.Errorf("push after the copy: %d %s, want 503 saying the file was replaced", code, body)
	}
	select {
	case <-srv.exited:
		if c := srv.cmd.ProcessState.ExitCode(); c != 1 {
			t.Errorf("serve exited %d, want 1", c)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	if aside, _ := filepath.Glob(db + "-wal.overwritten-*"); len(aside) != 1 {
		t.Errorf("the overwritten file's WAL set aside: %v, want one", aside)
	}
	// Served again, the file holds what the backup held, and nothing else.
	srv2 := crashStartServer(t, bin, db, "restored")
	status, body, err := crashDo(ctx, client, http.MethodGet, srv2.base+"/api/v1/resources/queues/q", nil)
	if err != nil || status != http.StatusOK || !strings.Contains(string(body), `"totals":{"total":20,`) {
		t.Errorf("the restored file: %d %s %v", status, body, err)
	}
	srv2.cmd.Process.Signal(os.Interrupt)
	<-srv2.exited
	if out, err := exec.Command(bin, "check", "--db", db).CombinedOutput(); err != nil {
		t.Errorf("check of the restored file: %v %s", err, out)
	}
}
