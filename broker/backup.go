package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/comb-broker/comb/combtype"
)

// errStopping is the cause a running backup is cancelled with when the
// broker drains or closes; DatabaseBackup turns it into combtype.ErrClosed.
var errStopping = errors.New("broker is stopping")

// backups tracks the online backups running, so that Close can stop them
// and wait until each has removed its partial copy before the file closes.
type backups struct {
	mu      sync.Mutex
	closed  bool
	stop    chan struct{} // closed by close: running backups cancel
	running sync.WaitGroup
}

// begin registers a backup; false once the broker closed.
func (g *backups) begin() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	if g.stop == nil {
		g.stop = make(chan struct{})
	}
	g.running.Add(1)
	return true
}

// close cancels the running backups, refuses new ones and waits until
// every running one has returned.
func (g *backups) close() {
	g.mu.Lock()
	if !g.closed {
		g.closed = true
		if g.stop != nil {
			close(g.stop)
		}
	}
	g.mu.Unlock()
	g.running.Wait()
}

// DatabaseBackup writes a consistent copy of the open database, every
// tenant's data, to the new file dst (mode 0600) while writes keep flowing:
// the copy holds every write answered before DatabaseBackup began, and is
// synced to disk when it returns nil. dst must not exist
// (combtype.ErrInvalid otherwise).
//
// It blocks for as long as the copy takes, which grows with the database
// (about the time to read the file once). It stops early, removing what it
// wrote of dst, when ctx ends (returning ctx's error) or when the broker
// drains or closes (returning an error wrapping combtype.ErrClosed): a
// server shutting down does not wait for a backup, and Close waits only
// until the running backups have stopped and removed their partial copies.
// It fails with combtype.ErrStale when the database's -wal file was removed
// from under the running broker.
func (b *Broker) DatabaseBackup(ctx context.Context, dst string) error {
	if !b.backups.begin() {
		return fmt.Errorf("backup to %s: %w", dst, combtype.ErrClosed)
	}
	defer b.backups.running.Done()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-b.draining:
			cancel(errStopping)
		case <-b.backups.stop:
			cancel(errStopping)
		case <-ctx.Done(): // the backup returned, or the caller's ctx ended
		}
	}()
	err := b.st.Backup(ctx, dst)
	if err != nil && errors.Is(context.Cause(ctx), errStopping) {
		return fmt.Errorf("backup to %s stopped, the broker is shutting down: %w", dst, combtype.ErrClosed)
	}
	return err
}
