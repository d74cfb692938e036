//go:build unix

package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/comb-broker/comb/internal/combtest"
)

// TestSIGTERMClosesTheDatabaseCleanly runs the program as its own process,
// as a service manager would, and stops it with SIGTERM: it must end
// through run's deferred Close (exit 0, WAL checkpointed), not be killed
// by the signal with the file left open.
func TestSIGTERMClosesTheDatabaseCleanly(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "desktop")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	db := filepath.Join(dir, "events.db")
	cmd := exec.Command(bin, "-db", db)
	var stdout, stderr combtest.Logs
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			<-done
		}
	})
	// Once an event was handled, the program is in its loop with the
	// database open and a long-poll pop parked.
	combtest.CheckFor(t, 30*time.Second, func() error {
		if strings.Contains(stdout.String(), "handled click") {
			return nil
		}
		return io.ErrNoProgress
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("after SIGTERM: %v (exit code %d)\n%s", err, exit.ExitCode(), stderr.String())
		}
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("still running 30s after SIGTERM\n%s", stderr.String())
	}
	if fi, err := os.Stat(db + "-wal"); err == nil && fi.Size() > 0 {
		t.Errorf("WAL left with %d bytes: the database was not closed cleanly", fi.Size())
	}
	if bytes.Contains([]byte(stderr.String()), []byte("panic")) {
		t.Errorf("stderr: %s", stderr.String())
	}
}
