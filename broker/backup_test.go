package broker_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
)

// fillForBackup pushes about mib MiB of incompressible payloads, so that a
// backup of the file takes long enough to be stopped midway.
func fillForBackup(t *testing.T, b *broker.Broker, mib int) {
	t.Helper()
	raw := make([]byte, 48<<10)
	for i := range mib * 2 {
		items := make([]combtype.PushItem, 16) // 16 × 64 KiB of base64 = 1 MiB
		for j := range items {
			rand.Read(raw)
			items[j] = combtype.PushItem{Queue: "bulk", Partition: fmt.Sprint(j % 4),
				Payload: []byte(`"` + base64.StdEncoding.EncodeToString(raw) + `"`)}
		}
		if _, err := b.Push(context.Background(), items); err != nil {
			t.Fatalf("fill %d: %v", i, err)
		}
	}
}

// startBackup runs DatabaseBackup to a new file in its own directory and
// returns once the copy is under way (its file has bytes in it).
func startBackup(t *testing.T, ctx context.Context, b *broker.Broker) (dir string, done <-chan error) {
	t.Helper()
	dir = t.TempDir()
	dst := filepath.Join(dir, "copy.db")
	ch := make(chan error, 1)
	go func() { ch <- b.DatabaseBackup(ctx, dst) }()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-ch:
			t.Fatalf("the backup ended (%v) before it could be stopped; the test's database is too small", err)
		default:
		}
		if info, err := os.Stat(dst); err == nil && info.Size() > 0 {
			return dir, ch
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("the backup never started writing")
	return "", nil
}

// integrityOK runs the sqlite3 CLI's integrity check on path, as an
// operator would.
func integrityOK(t *testing.T, path string) {
	t.Helper()
	out, err := exec.Command("sqlite3", path, "pragma integrity_check").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("sqlite3 %s 'pragma integrity_check': %v\n%s", path, err, out)
	}
}

// A server stopping while a backup runs does not wait for the backup: a
// backup running when the broker drains or closes, or when its ctx ends,
// stops within a bound, says why and removes what it wrote; the database
// is left intact.
func TestDatabaseBackupStopsOnCloseDrainAndCtx(t *testing.T) {
	if _, err := exec.LookPath("sqlite3"); err != nil {
		t.Skip("no sqlite3 CLI")
	}
	const bound = 5 * time.Second
	path := filepath.Join(t.TempDir(), "comb.db")
	b := combtest.OpenBrokerAt(t, path, combtest.Options{})
	fillForBackup(t, b, 48)
	combtest.CloseBroker(t, b)

	// The backup's partial file must be gone, and nothing else left,
	// when the call returns.
	empty := func(t *testing.T, dir string) {
		t.Helper()
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Fatalf("the stopped backup left %d files in %s, first %s", len(ents), dir, ents[0].Name())
		}
	}

	t.Run("close", func(t *testing.T) {
		b := combtest.OpenBrokerAt(t, path, combtest.Options{})
		dir, done := startBackup(t, context.Background(), b)
		start := time.Now()
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		var err error
		select {
		case err = <-done:
		case <-time.After(bound):
			t.Fatalf("the backup still runs %v after Close returned", bound)
		}
		if took := time.Since(start); took > bound {
			t.Fatalf("Close and the backup took %v to stop, want under %v", took, bound)
		}
		if !errors.Is(err, combtype.ErrClosed) {
			t.Fatalf("backup during Close returned %v, want combtype.ErrClosed", err)
		}
		empty(t, dir)
		if err := b.DatabaseBackup(context.Background(), filepath.Join(dir, "late.db")); !errors.Is(err, combtype.ErrClosed) {
			t.Fatalf("backup after Close returned %v, want combtype.ErrClosed", err)
		}
		empty(t, dir)
		integrityOK(t, path)
	})

	t.Run("drain", func(t *testing.T) {
		b := combtest.OpenBrokerAt(t, path, combtest.Options{})
		defer combtest.CloseBroker(t, b)
		dir, done := startBackup(t, context.Background(), b)
		b.Drain() // what a server's Shutdown does first
		select {
		case err := <-done:
			if !errors.Is(err, combtype.ErrClosed) {
				t.Fatalf("backup during Drain returned %v, want combtype.ErrClosed", err)
			}
		case <-time.After(bound):
			t.Fatalf("the backup still runs %v after Drain", bound)
		}
		empty(t, dir)
	})

	t.Run("ctx", func(t *testing.T) {
		b := combtest.OpenBrokerAt(t, path, combtest.Options{})
		defer combtest.CloseBroker(t, b)
		ctx, cancel := context.WithCancel(context.Background())
		dir, done := startBackup(t, ctx, b)
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) || errors.Is(err, combtype.ErrClosed) {
				t.Fatalf("backup with its ctx cancelled returned %v, want context.Canceled", err)
			}
		case <-time.After(bound):
			t.Fatalf("the backup still runs %v after its ctx ended", bound)
		}
		empty(t, dir)
		// The broker is unharmed: a backup runs to the end, and the copy
		// is a sound database.
		dst := filepath.Join(t.TempDir(), "whole.db")
		if err := b.DatabaseBackup(context.Background(), dst); err != nil {
			t.Fatal(err)
		}
		integrityOK(t, dst)
	})
	integrityOK(t, path)
}
