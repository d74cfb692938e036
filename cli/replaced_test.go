package cli

import (
	"errors"
	"net/http"
	"os"
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
