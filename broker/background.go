package broker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/retention"
)

// The background services' lifecycle: Open starts them once the store is
// open, Close stops them before the store closes.

// startBackground restores the maintenance switches and starts the
// retention service; stopBackground undoes it.
func (b *Broker) startBackground(ctx context.Context, opts Options) error {
	log := cmp.Or(opts.Logger, slog.Default())
	if err := b.loadMaintenance(ctx); err != nil {
		return err
	}
	if !b.st.Encrypting() {
		var n int
		err := b.st.ReadDB().QueryRowContext(ctx, `SELECT COUNT(*) FROM queues WHERE encryption_enabled = 1`).Scan(&n)
		switch {
		case errors.Is(err, combtype.ErrDamaged):
			// The count only chooses a warning: a damaged page under the
			// queues must not keep the server from serving what is not
			// under it. Each path that reads through it says so itself.
			log.Error("could not count the queues with encryptionEnabled: the database file is damaged; run comb check",
				"err", err)
		case err != nil:
			return fmt.Errorf("count encrypted queues: %w", err)
		case n > 0:
			log.Warn("queues have encryptionEnabled but no encryption key is set: their new messages are stored in clear",
				"queues", n)
		}
	}
	b.ret = retention.New(b.st, retention.Config{Interval: opts.RetentionInterval,
		SnapshotInterval: opts.SnapshotSweepInterval, Clock: b.clock, Logger: log})
	b.ret.Start()
	// A queue delete a crash interrupted is finished now, not by the next
	// delete; the queue is already invisible, so this runs behind traffic.
	resumeCtx, cancel := context.WithCancel(context.Background())
	b.resumeStop, b.resumeDone = cancel, make(chan struct{})
	go func() {
		defer close(b.resumeDone)
		if err := b.st.ResumeDeletes(resumeCtx); err != nil && resumeCtx.Err() == nil {
			log.Error("finishing an interrupted queue delete", "err", err)
		}
	}()
	return nil
}

func (b *Broker) stopBackground() {
	if b.resumeStop != nil {
		b.resumeStop()
		<-b.resumeDone
	}
	if b.ret != nil {
		b.ret.Stop()
	}
}

// RetentionReport counts what a retention sweep did.
type RetentionReport struct {
	Queues     int   // queues with a retention policy
	Partitions int   // partitions that lost segments (in the first pass)
	Segments   int   // segments deleted
	Frames     int64 // messages deleted
	Bytes      int64 // stored segment bytes deleted
	FreedPages int64 // database pages returned to the file system
	LeaseWakes int   // queues whose parked pops were woken for an expired lease
	Snapshots  int   // expired snapshots deleted
	// Complete is true when the sweep reached every cut the policies set;
	// false when ctx ended or it failed first. The counts are what it
	// deleted either way.
	Complete bool
}

// RetentionSweep runs retention now, at the clock's time, over every
// tenant: it wakes pops parked on expired leases, deletes expired
// snapshots and what every queue's retention options allow, then returns
// freed pages to the file system. The background service runs the same
// passes every Options.RetentionInterval; one pass runs at a time, and
// this runs passes until one completes or ctx ends.
func (b *Broker) RetentionSweep(ctx context.Context) (RetentionReport, error) {
	var rep RetentionReport
	for first := true; ; first = false {
		st, err := b.ret.RunOnce(ctx)
		rep.Queues = st.Queues
		if first {
			rep.Partitions = st.Partitions
		}
		rep.Segments += st.Segments
		rep.Frames += st.Frames
		rep.Bytes += st.Bytes
		rep.FreedPages += st.FreedPages
		rep.LeaseWakes += st.LeaseWakes
		rep.Snapshots += st.Snapshots
		rep.Complete = st.Complete
		if err != nil || st.Complete {
			return rep, err
		}
	}
}
