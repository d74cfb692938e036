package store

// Waiting out another program's write lock. While a sqlite3 session or a
// DB browser holds a write transaction on the file, every commit waits
// the busy timeout and fails whole (writer.go, noteFileBusy). A caller
// that has time to wait longer (a long-poll pop) must not wait inside a
// commit: it would outlast its own deadline by up to a busy timeout, and
// a claim that commits after its caller gave up takes a lease that must
// then be given back.
// It waits instead for a probe: a commit of nothing, made by the writer
// at its turn, whose outcome tells every waiter at once whether the file
// can be written again. Nothing of any caller is in the probe, so a
// waiter may stop waiting at any moment.

import (
	"fmt"
	"sync"

	"github.com/comb-broker/comb/combtype"
)

// FileProbe is one attempt of the writer to take the file's write lock.
type FileProbe struct {
	done chan struct{}
	err  error // set before done closes
}

// Done closes when the attempt has ended.
func (p *FileProbe) Done() <-chan struct{} { return p.done }

// Err is the attempt's outcome once Done has closed: nil if the writer
// could take the lock (the file can be written), an error wrapping
// combtype.ErrFileBusy if it waited the busy timeout in vain,
// combtype.ErrClosed if the store closed first.
func (p *FileProbe) Err() error { return p.err }

// fileProbes is the probe asked for and not yet ended, shared by whoever
// asks while it runs.
type fileProbes struct {
	mu      sync.Mutex
	pending *FileProbe
	closed  bool          // the writer has stopped: no probe runs any more
	ask     chan struct{} // one token: the writer has a probe to make
}

func (f *fileProbes) init() { f.ask = make(chan struct{}, 1) }

// FileBusy reports whether the last commit that could tell found the file
// locked by another program's write transaction.
func (s *Store) FileBusy() bool { return s.fileBusyNow.Load() }

// ProbeFile returns the writer's next attempt to take the file's write
// lock, asking for one unless one is asked for already.
func (s *Store) ProbeFile() *FileProbe {
	f := &s.probes
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pending != nil {
		return f.pending
	}
	p := &FileProbe{done: make(chan struct{})}
	if f.closed {
		p.err = combtype.ErrClosed
		close(p.done)
		return p
	}
	f.pending = p
	select {
	case f.ask <- struct{}{}:
	default: // the writer has the token already
	}
	return p
}

// probeOp is the write of the probe asked for, nil if none is: a commit
// of nothing, lazy (nothing to sync), which only takes and gives back the
// write lock. Only the writer calls it.
func (s *Store) probeOp() *writeOp {
	f := &s.probes
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pending == nil {
		return nil
	}
	return &writeOp{apply: func(*wtx) error { return nil }, lazy: true, smallUndo: true, probe: f.pending,
		done: make(chan error, 1)}
}

// probed ends the pending probe with what a commit of batch found, if it
// tells: any commit that took the lock tells the file can be written,
// whoever's it was; one that failed tells only for the probe it carried
// (a probe asked for since waits for a commit of its own). Only the
// writer calls it.
func (s *Store) probed(batch []*writeOp, err error) {
	if err == nil {
		s.endProbe(nil, nil)
		return
	}
	for _, op := range batch {
		if op.probe != nil {
			s.endProbe(op.probe, classify(err))
		}
	}
}

// endProbe ends the pending probe with err, if it is p (nil: whichever).
func (s *Store) endProbe(p *FileProbe, err error) {
	f := &s.probes
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pending == nil || (p != nil && f.pending != p) {
		return
	}
	f.pending.err = err
	close(f.pending.done)
	f.pending = nil
}

// stopProbes ends the pending probe, and every later one, with
// combtype.ErrClosed: the writer has stopped.
func (s *Store) stopProbes() {
	f := &s.probes
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	s.endProbe(nil, combtype.ErrClosed)
}

// errLockHeld answers a long-poll's claim the writer did not try: the last
// commit found the file locked by another program, and the pop waits on
// probes instead.
var errLockHeld = fmt.Errorf("%w: not tried while another program holds the file's write lock", combtype.ErrFileBusy)

// spareWaiters answers at once, with errLockHeld, the claims of long-poll
// pops in batch while the last commit found the file locked by another
// program, and returns the rest. Queued behind the commit that met the
// lock, such a claim would wait the busy timeout again in the next, past
// its pop's own timeout; answered, the pop waits on probes, holding
// nothing, and can answer at its timeout. A pop that does not wait is
// tried as before, and answered 503 after the busy timeout. Only the
// writer calls it.
func (s *Store) spareWaiters(batch []*writeOp) []*writeOp {
	if !s.fileBusy {
		return batch
	}
	waiters := 0
	for _, op := range batch {
		if op.claim != nil && op.claim.req.Wait {
			waiters++
		}
	}
	if waiters == 0 {
		return batch
	}
	kept := make([]*writeOp, 0, len(batch)-waiters)
	for _, op := range batch {
		if op.claim != nil && op.claim.req.Wait {
			op.apply = nil
			op.done <- errLockHeld
			continue
		}
		kept = append(kept, op)
	}
	return kept
}
