package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
	"github.com/comb-broker/comb/store"
)

// awaitProbe waits for p's outcome; the bound only keeps a broken writer
// from hanging the test.
func awaitProbe(t *testing.T, p *store.FileProbe) error {
	t.Helper()
	select {
	case <-p.Done():
		return p.Err()
	case <-time.After(time.Minute):
		t.Fatal("the probe never ended")
		return nil
	}
}

// TestAProbeTellsWhetherAnotherProgramHoldsTheWriteLock: while a sqlite3
// session holds a write transaction on the file, the writer's attempt at
// the lock ends with ErrFileBusy, after the busy timeout, and the store
// says the file is busy; the callers that ask meanwhile share the attempt
// under way. Once the session ends the next attempt takes the lock, and
// the store no longer says so. After Close, a probe ends with ErrClosed
// instead of waiting for a writer that is gone.
func TestAProbeTellsWhetherAnotherProgramHoldsTheWriteLock(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "comb.db")
	s, err := store.Open(ctx, store.Options{Path: path, BusyTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", TxnID: "m", Payload: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	if s.FileBusy() {
		t.Fatal("busy before any other program held the file")
	}

	session := combtest.StartSQLite3Writer(t, path)
	p := s.ProbeFile()
	if q := s.ProbeFile(); q != p {
		select {
		case <-p.Done():
		default:
			t.Error("a second caller got an attempt of its own while one was under way")
		}
	}
	if err := awaitProbe(t, p); !errors.Is(err, combtype.ErrFileBusy) {
		t.Errorf("the probe under the lock: %v, want ErrFileBusy", err)
	}
	if !s.FileBusy() {
		t.Error("the store does not say the file is busy after its probe met the lock")
	}
	// Nothing of it was written: the push under the lock is refused whole.
	if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", TxnID: "during", Payload: []byte(`{}`)}}); !errors.Is(err, combtype.ErrFileBusy) {
		t.Errorf("a push under the lock: %v, want ErrFileBusy", err)
	}

	session.Close()
	if err := awaitProbe(t, s.ProbeFile()); err != nil {
		t.Errorf("the probe after the session ended: %v, want nil", err)
	}
	if s.FileBusy() {
		t.Error("the store still says the file is busy after a probe took the lock")
	}
	res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "g", Batch: 10})
	if err != nil || len(res.Messages) != 1 || res.Messages[0].TxnID != "m" {
		t.Errorf("pop after the lock: %+v %v, want m alone", res, err)
	}

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := awaitProbe(t, s.ProbeFile()); !errors.Is(err, combtype.ErrClosed) {
		t.Errorf("a probe after Close: %v, want ErrClosed", err)
	}
	combtest.CheckInvariants(t, path)
}

// TestALongPollsClaimIsNotTriedWhileTheLockIsKnownHeld: once a commit has
// found the file locked by another program, the writer answers the
// claims of long-poll pops (Wait) without trying them: tried, each would
// wait the busy timeout again inside a commit, past its pop's own
// timeout, where untried its pop waits on probes and can answer at its
// timeout. A pop that does not wait is tried as before. Once a probe
// has taken the lock, the long-poll's claim is made as usual.
func TestALongPollsClaimIsNotTriedWhileTheLockIsKnownHeld(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "comb.db")
	s, err := store.Open(ctx, store.Options{Path: path, BusyTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", TxnID: "m", Payload: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	session := combtest.StartSQLite3Writer(t, path)
	if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", TxnID: "during", Payload: []byte(`{}`)}}); !errors.Is(err, combtype.ErrFileBusy) {
		t.Fatalf("a push under the lock: %v, want ErrFileBusy", err)
	}
	waiting := combtype.PopRequest{Queue: "q", Group: "g", Wait: true, Timeout: time.Minute}
	if _, err := s.Pop(ctx, "", waiting); !errors.Is(err, store.ErrLockHeld) {
		t.Errorf("a long-poll's claim while the lock is known held: %v, want it answered untried", err)
	}
	if _, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: "k"}); !errors.Is(err, combtype.ErrFileBusy) || errors.Is(err, store.ErrLockHeld) {
		t.Errorf("a pop without wait under the lock: %v, want ErrFileBusy after trying", err)
	}
	session.Close()
	if err := awaitProbe(t, s.ProbeFile()); err != nil {
		t.Fatalf("the probe after the session ended: %v", err)
	}
	res, err := s.Pop(ctx, "", waiting)
	if err != nil || len(res.Messages) != 1 || res.Messages[0].TxnID != "m" {
		t.Errorf("the long-poll's claim after the lock: %+v %v, want m", res, err)
	}
}
