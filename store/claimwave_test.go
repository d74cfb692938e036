package store

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
)

// TestClaimsInOneCommitSeeAMessageDeletedBetweenThem: the claims of new
// groups fused into one commit share what they read of the same range
// (frames, deleted offsets); a message deleted between two of them in
// that commit is not delivered to the second.
func TestClaimsInOneCommitSeeAMessageDeletedBetweenThem(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "comb.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", TxnID: "m1", Payload: []byte(`1`)},
		{Queue: "q", TxnID: "m2", Payload: []byte(`2`)}}); err != nil {
		t.Fatal(err)
	}
	q, err := s.Queue(ctx, "", "q")
	if err != nil {
		t.Fatal(err)
	}
	parts, err := s.Partitions(ctx, q.ID)
	if err != nil {
		t.Fatal(err)
	}
	commits := s.Stats().Commits.Load()
	release := holdWriter(t, s)
	type popped struct {
		res *combtype.PopResult
		err error
	}
	pop := func(group string) chan popped {
		ch := make(chan popped, 1)
		go func() {
			res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "q", Group: group, Batch: 1})
			ch <- popped{res, err}
		}()
		return ch
	}
	first := pop("g1")
	waitPending(t, s, 1)
	deleted := make(chan error, 1)
	go func() {
		found, err := s.DeleteMessage(ctx, "", parts[0].UUID, "m1")
		if err == nil && !found {
			err = fmt.Errorf("m1 not found")
		}
		deleted <- err
	}()
	waitPending(t, s, 2)
	second := pop("g2")
	waitPending(t, s, 3)
	release()
	for group, ch := range map[string]chan popped{"g1": first, "g2": second} {
		p := <-ch
		if p.err != nil {
			t.Fatalf("%s: %v", group, p.err)
		}
		var got []string
		for _, m := range p.res.Messages {
			got = append(got, m.TxnID)
		}
		want := map[string][]string{"g1": {"m1"}, "g2": {"m2"}}[group]
		if !slices.Equal(got, want) {
			t.Errorf("%s got %v, want %v", group, got, want)
		}
	}
	if err := <-deleted; err != nil {
		t.Fatal(err)
	}
	// The held commit and the one that fused the three.
	if n := s.Stats().Commits.Load() - commits; n != 2 {
		t.Errorf("%d commits, want 2: the claims and the delete were not fused", n)
	}
}

// TestUndoInMemoryOnlyForCommitsOfSmallOps: a commit of claims only keeps
// its savepoints' undo in memory; any other op in a commit (a queue
// delete, retention, a push) puts it back on disk, where an op that
// changes many existing rows cannot grow the process by it.
func TestUndoInMemoryOnlyForCommitsOfSmallOps(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "comb.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, small := range []bool{true, false, true, true, false} {
		var store int
		if err := s.submit(ctx, &writeOp{isolated: true, smallUndo: small, apply: func(w *wtx) error {
			return w.QueryRowContext(w.ctx, `PRAGMA temp_store`).Scan(&store)
		}}); err != nil {
			t.Fatal(err)
		}
		// 2 is MEMORY, 0 DEFAULT.
		if want := map[bool]int{true: 2, false: 0}[small]; store != want {
			t.Errorf("smallUndo %v: temp_store %d, want %d", small, store, want)
		}
	}
}

// TestSubscribedSetForgetsWhatAReadBeforeADeleteCommittedAdded: a delete
// of subscriptions forgets the known groups as it runs, but a pop that
// read the group's subscription before the delete committed may add it
// back; the writer forgets again when that transaction ends, so the wave
// offers the subscription insert again to the group whose row is gone.
func TestSubscribedSetForgetsWhatAReadBeforeADeleteCommittedAdded(t *testing.T) {
	var s subscribedSet
	k := subKey{"", "q", "g"}
	s.add(k, s.generation())
	if !s.has(k) {
		t.Fatal("not known after add")
	}
	s.forget() // the delete runs in the writer's open transaction
	if s.has(k) {
		t.Fatal("still known once a delete ran")
	}
	gen := s.generation() // a pop's read begins, on a snapshot from before the commit
	s.add(k, gen)         // and finds the row
	s.settle()            // the delete commits
	if s.has(k) {
		t.Error("a group whose subscription was deleted is still known subscribed")
	}
	s.add(k, s.generation())
	if !s.has(k) {
		t.Error("not known after an add that follows the commit")
	}
	s.settle() // nothing forgotten since: what is known stays
	if !s.has(k) {
		t.Error("a transaction that deleted nothing forgot the known groups")
	}
}

// TestWakeCommitsStartSmallAndGrow: the claims of a wake, all waiting at
// once, are committed 64, then 256, then as many as a batch holds, so
// the first replies wait for a small commit, not for a batch's worth.
func TestWakeCommitsStartSmallAndGrow(t *testing.T) {
	ctx := context.Background()
	var sizes []int
	s, commits := openCountingCommits(t)
	if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "q", Payload: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	<-commits
	// The writer is held by an op of its own while the claims queue up.
	hold, held := make(chan struct{}), make(chan struct{})
	go s.submit(ctx, &writeOp{apply: func(*wtx) error { close(held); <-hold; return nil }})
	<-held
	const n = 1500
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.PopWoken(ctx, "", combtype.PopRequest{Queue: "q", Group: fmt.Sprintf("g-%d", i)})
			if err != nil || len(res.Messages) != 1 {
				t.Errorf("g-%d: %v, %v", i, res, err)
			}
		}()
	}
	for len(s.ops) < cap(s.ops) {
		time.Sleep(time.Millisecond)
	}
	close(hold)
	wg.Wait()
	for total := 0; total < n; {
		ops := <-commits
		sizes = append(sizes, ops)
		if len(sizes) > 1 { // the first is the op that held the writer
			total += ops
		}
	}
	// The first three are certain: a full queue of claims was waiting.
	// Past them, the claims that had not reached the queue when the
	// writer was let go may come in later commits.
	if len(sizes) < 4 || !slices.Equal(sizes[:3], []int{1, 64, 256}) || sizes[3] < cap(s.ops)-64-256 {
		t.Fatalf("commits of %v ops, want 1, 64, 256, then at least %d", sizes, cap(s.ops)-64-256)
	}
	for _, ops := range sizes[3:] {
		if ops > DefaultMaxBatchOps {
			t.Fatalf("commits of %v ops, more than a batch holds", sizes)
		}
	}
}

// TestAWaveThatMeetsDamageRollsBackAlone: a wave that meets a damaged
// segment is undone and its claims are applied one by one, each moving
// past the damage; a push in the same commit is kept, whether it came
// before the claims (the wave in a savepoint) or after them (the wave
// first in its transaction, which it rolls back and begins again).
func TestAWaveThatMeetsDamageRollsBackAlone(t *testing.T) {
	for _, pushFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("pushFirst=%v", pushFirst), func(t *testing.T) {
			ctx := context.Background()
			var logs lockedBuffer
			s, err := Open(ctx, Options{Path: filepath.Join(t.TempDir(), "comb.db"), Clock: clock.NewManual(t0),
				Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			lossPush(t, s, "q", "p", "a")
			lossPush(t, s, "q", "p", "b")
			writeSQL(t, s, `UPDATE segments SET checksum = checksum + 1 WHERE base_offset = 0`)

			release := holdWriter(t, s)
			var wg sync.WaitGroup
			pushed := 0
			push := func() {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if _, err := s.Push(ctx, "", []combtype.PushItem{{Queue: "other", Payload: []byte("c")}}); err != nil {
						t.Error(err)
					}
				}()
				pushed++
				waitPending(t, s, pushed)
			}
			if pushFirst {
				push()
			}
			const groups = 4
			got := make([][]string, groups)
			for i := range groups {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res, err := s.PopWoken(ctx, "", combtype.PopRequest{Queue: "q", Group: fmt.Sprintf("g-%d", i), Batch: 10})
					if err != nil {
						t.Error(err)
						return
					}
					got[i] = payloads(res)
				}()
			}
			waitPending(t, s, pushed+groups)
			if !pushFirst {
				push()
			}
			release()
			wg.Wait()

			for i, p := range got {
				if !slices.Equal(p, []string{"b"}) {
					t.Errorf("g-%d got %q, want the message past the damage", i, p)
				}
			}
			if n := s.Stats().WaveClaims.Load(); n != 0 {
				t.Errorf("%d claims applied in a wave that met damage", n)
			}
			if !strings.Contains(logs.String(), "claim wave rolled back") {
				t.Errorf("no wave was tried: %s", logs.String())
			}
			if _, total, err := s.ListQuarantine(ctx, "", combtype.QuarantineFilter{}); err != nil || total != 1 {
				t.Errorf("quarantined %d segments, %v; want 1", total, err)
			}
			res, err := s.Pop(ctx, "", combtype.PopRequest{Queue: "other", Group: "g", Batch: 10})
			if err != nil || !slices.Equal(payloads(res), []string{"c"}) {
				t.Errorf("the push committed with the claims: %v, %v", res, err)
			}
		})
	}
}

// lockedBuffer is a log sink the writer and the test may use at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
