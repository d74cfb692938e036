package broker

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"

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
		if err := b.st.ReadDB().QueryRowContext(ctx, `SELECT COUNT(*) FROM queues WHERE encryption_enabled = 1`).Scan(&n); err != nil {
			return fmt.Errorf("count encrypted queues: %w", err)
		}
		if n > 0 {
			log.Warn("queues have encryptionEnabled but no encryption key is set: their new messages are stored in clear",
				"queues", n)
		}
	}
	b.ret = retention.New(b.st, retention.Config{Interval: opts.RetentionInterval,
		SnapshotInterval: opts.SnapshotSweepInterval, Clock: opts.Clock, Logger: log})
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

// Retention is the retention service, for callers that want to sweep now.
func (b *Broker) Retention() *retention.Service { return b.ret }
