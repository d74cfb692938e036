package broker

import (
	"context"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// EngineStats is a point-in-time view of the engine for status pages and
// metrics: the writer's counters since Open and the state of its queues.
type EngineStats struct {
	// PendingWrites is the writes queued for the single writer.
	PendingWrites int
	// Commits is the transactions the writer committed; CommitOps the
	// writes they fused; CommitMicros the time they took.
	Commits, CommitOps, CommitMicros int64
	// LazyCommits is the commits of lease-only pops made without a sync of
	// their own; the next durable commit syncs them.
	LazyCommits int64
	// Segments and Frames are the segments and messages appended.
	Segments, Frames int64
	// Quarantined counts segments put aside because they failed their
	// checksum or did not decode.
	Quarantined int64
	// FramesEvicted counts messages retention removed before a group that
	// still needed them consumed them.
	FramesEvicted int64
	// QueueLooks counts the queues pops looked at for something to take:
	// one a pop of a queue, as many as it reads a pop of a namespace or
	// task.
	QueueLooks int64
	// QueueWalks counts the pops and claims that read a queue's
	// partitions in turn to find what is due for a group, where most
	// pops read only the few that can be; at a million partitions with
	// nothing due, each is seconds of a core.
	QueueWalks int64
	// WriterWalks counts those of QueueWalks made inside the writer (a
	// claim's), where every other write waits for them.
	WriterWalks int64
	// OutsideCommits counts the times the writer found that another
	// program had committed to the database file, and read again the
	// rows it keeps in memory.
	OutsideCommits int64
	// WriterPanics counts the writer's commits that panicked and were
	// rolled back, their ops answered with an error; any is a fault of
	// comb's worth a report, with the stack the log holds.
	WriterPanics int64
	// Readers is the reader pool: its size, connections open, in use and idle.
	Readers ReaderStats
}

// ReaderStats describe the reader connection pool.
type ReaderStats struct {
	// MaxOpen is the pool's bound; Open the connections open now, of
	// which InUse run a read and Idle wait for one.
	MaxOpen, Open, InUse, Idle int
}

// EngineStats reads the engine's counters; it does not touch the database.
func (b *Broker) EngineStats() EngineStats {
	st, pool := b.st.Stats(), b.st.ReaderStats()
	return EngineStats{
		PendingWrites: b.st.PendingWrites(),
		Commits:       st.Commits.Load(), CommitOps: st.CommitOps.Load(), CommitMicros: st.CommitMicros.Load(),
		LazyCommits: st.LazyCommits.Load(),
		Segments:    st.Segments.Load(), Frames: st.Frames.Load(),
		Quarantined: st.Quarantined.Load(), FramesEvicted: st.FramesEvicted.Load(),
		QueueLooks: st.QueueLooks.Load(), QueueWalks: st.QueueWalks.Load(), WriterWalks: st.WriterWalks.Load(), OutsideCommits: st.OutsideCommits.Load(),
		WriterPanics: st.WriterPanics.Load(),
		Readers:      ReaderStats{MaxOpen: pool.MaxOpenConnections, Open: pool.OpenConnections, InUse: pool.InUse, Idle: pool.Idle},
	}
}

// PendingWrites is the writes queued for the single writer right now.
func (b *Broker) PendingWrites() int { return b.st.PendingWrites() }

// DatabaseSize is the size in bytes of the database file and of its WAL.
func (b *Broker) DatabaseSize() (file, wal int64, err error) { return b.st.DatabaseSize() }

// DatabaseStats reads SQLite's page figures.
func (b *Broker) DatabaseStats(ctx context.Context) (combtype.DatabaseStats, error) {
	return b.st.DatabaseStats(ctx)
}

// Metrics are the broker's counters since Open, of every tenant.
func (b *Broker) Metrics() *Metrics { return b.metrics }

// Now reads the broker's clock (Options.Clock): the time every timestamp
// it writes is taken from.
func (b *Broker) Now() time.Time { return b.st.Now() }

// DatabasePath is the database file.
func (b *Broker) DatabasePath() string { return b.st.Path() }
