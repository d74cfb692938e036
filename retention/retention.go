// Package retention is comb's background work on a clock: it deletes the
// segments that queues' retention policies let go and the snapshots that
// expired, gives the freed pages back to the file system, and wakes parked
// pops when a lease expires.
//
// The service is owned by the broker: started by broker.Open and stopped by
// broker.Close. Tests drive it with Sweep and WakeExpiredLeases instead of
// waiting on its tickers.
package retention

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/clock"
	"github.com/comb-broker/comb/store"
)

// Defaults for Config.
const (
	// DefaultInterval is how often a sweep runs (RETENTION_INTERVAL's default).
	DefaultInterval = 5 * time.Minute
	// DefaultLeaseInterval is how often expired leases are looked for.
	DefaultLeaseInterval = time.Second
	// DefaultVacuumPages is how many free pages one writer op returns to
	// the file system: 512 KiB at the default page size, a few
	// milliseconds of work.
	DefaultVacuumPages = 128
	// DefaultVacuumSteps bounds the vacuum ops of one sweep; what is left
	// is returned by the next sweep.
	DefaultVacuumSteps = 256
	// DefaultSnapshotInterval is how often expired snapshots are deleted.
	// An expired snapshot pins nothing and cannot be sought to even before
	// its row goes, so the sweep only tidies and need not be frequent.
	DefaultSnapshotInterval = time.Hour
)

// Config configures a Service.
type Config struct {
	// Interval is the period of sweeps. Default DefaultInterval; negative
	// disables the periodic sweep (Sweep still works).
	Interval time.Duration
	// LeaseInterval is the period of the expired-lease check. Default
	// DefaultLeaseInterval; negative disables it.
	LeaseInterval time.Duration
	// SnapshotInterval is the least time between two deletions of expired
	// snapshots; they run within sweeps. Default DefaultSnapshotInterval;
	// negative deletes them at every sweep.
	SnapshotInterval time.Duration
	// Limits bound each eviction op. Zero fields take the store's defaults.
	Limits store.EvictLimits
	// VacuumPages is the free pages returned per vacuum op. Default DefaultVacuumPages.
	VacuumPages int
	// VacuumSteps bounds the vacuum ops per sweep. Default DefaultVacuumSteps.
	VacuumSteps int
	// YieldRatio paces a sweep: after each writer op it pauses for the op's
	// duration times this ratio, so a push queued behind an op commits on
	// its own instead of sharing a commit with the next op. Default 1
	// (retention takes at most about half of the writer); negative: no pause.
	YieldRatio float64
	// Clock tells the time of periodic passes. Default the wall clock.
	Clock clock.Clock
	// Logger receives a line per sweep that deleted something, and errors.
	// Default slog.Default().
	Logger *slog.Logger
}

// Stats count what one sweep did.
type Stats struct {
	Queues     int   // queues with a policy
	Partitions int   // partitions that lost segments
	Segments   int   // segments deleted
	Frames     int64 // messages deleted
	Bytes      int64 // stored segment bytes deleted
	FreedPages int64 // pages returned to the file system
	LeaseWakes int   // queues woken for an expired lease
	Snapshots  int   // expired snapshots deleted
}

// Service runs retention sweeps and the lease-expiry check.
type Service struct {
	st  *store.Store
	cfg Config
	log *slog.Logger

	mu           sync.Mutex // one pass at a time
	leaseSeen    time.Time  // leases expiring up to here were already woken
	snapshotsRan time.Time  // when expired snapshots were last deleted

	startOnce sync.Once
	stopOnce  sync.Once
	cancel    context.CancelFunc
	wg        sync.WaitGroup
}

// New returns a stopped service over st.
func New(st *store.Store, cfg Config) *Service {
	cfg.Interval = cmp.Or(cfg.Interval, DefaultInterval)
	cfg.LeaseInterval = cmp.Or(cfg.LeaseInterval, DefaultLeaseInterval)
	cfg.SnapshotInterval = cmp.Or(cfg.SnapshotInterval, DefaultSnapshotInterval)
	cfg.VacuumPages = cmp.Or(cfg.VacuumPages, DefaultVacuumPages)
	cfg.VacuumSteps = cmp.Or(cfg.VacuumSteps, DefaultVacuumSteps)
	cfg.Clock = cmp.Or[clock.Clock](cfg.Clock, clock.Real{})
	cfg.YieldRatio = cmp.Or(cfg.YieldRatio, 1)
	return &Service{st: st, cfg: cfg, log: cmp.Or(cfg.Logger, slog.Default())}
}

// Interval is the period of sweeps.
func (s *Service) Interval() time.Duration { return s.cfg.Interval }

// Start runs the periodic sweep and lease check in the background until
// Stop. Calling it again does nothing.
func (s *Service) Start() {
	s.startOnce.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		s.cancel = cancel
		if s.cfg.Interval > 0 {
			s.wg.Add(1)
			go s.loop(ctx, s.cfg.Interval, func(ctx context.Context) {
				// A pass gets one interval (at least a minute); what it did not
				// reach is the next pass's work.
				ctx, cancel := context.WithTimeout(ctx, max(s.cfg.Interval, time.Minute))
				defer cancel()
				if _, err := s.RunOnce(ctx); err != nil && ctx.Err() == nil {
					s.log.Error("retention sweep", "err", err)
				}
			})
		}
		if s.cfg.LeaseInterval > 0 {
			s.wg.Add(1)
			go s.loop(ctx, s.cfg.LeaseInterval, func(ctx context.Context) {
				if _, err := s.WakeExpiredLeases(ctx, s.cfg.Clock.Now()); err != nil && ctx.Err() == nil {
					s.log.Error("lease expiry check", "err", err)
				}
			})
		}
	})
}

func (s *Service) loop(ctx context.Context, every time.Duration, pass func(context.Context)) {
	defer s.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			pass(ctx)
		}
	}
}

// Stop cancels a pass in progress and waits for the background goroutines
// to return. It is safe to call more than once, and without Start.
func (s *Service) Stop() {
	s.stopOnce.Do(func() {
		s.startOnce.Do(func() {}) // a later Start does nothing
		if s.cancel != nil {
			s.cancel()
		}
		s.wg.Wait()
	})
}

// RunOnce sweeps at the clock's current time.
func (s *Service) RunOnce(ctx context.Context) (Stats, error) {
	return s.Sweep(ctx, s.cfg.Clock.Now())
}

// Sweep runs one pass as if the time were now: it wakes pops parked on
// expired leases, deletes expired snapshots and what every queue's
// policies allow, then returns the freed pages to the file system in
// bounded steps. (Snapshot expiry reads the store's clock.)
func (s *Service) Sweep(ctx context.Context, now time.Time) (Stats, error) {
	var st Stats
	wakes, err := s.WakeExpiredLeases(ctx, now)
	st.LeaseWakes = wakes
	if err != nil {
		return st, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	start := time.Now()
	// Expired snapshots hold nothing back already; deleting their rows is
	// tidying, done at most once per SnapshotInterval.
	if s.snapshotsRan.IsZero() || now.Sub(s.snapshotsRan) >= s.cfg.SnapshotInterval {
		if st.Snapshots, err = s.st.ExpireSnapshots(ctx); err != nil {
			return st, err
		}
		s.snapshotsRan = now
	}
	queues, err := s.st.RetentionQueues(ctx)
	if err != nil {
		return st, err
	}
	st.Queues = len(queues)
	var errs []error
	for _, q := range queues {
		if err := s.sweepQueue(ctx, q, now, &st); err != nil {
			if ctx.Err() != nil {
				return st, err
			}
			// One queue's failure does not hold back the others.
			errs = append(errs, err)
		}
	}
	if st.Segments > 0 {
		freed, err := s.vacuum(ctx)
		st.FreedPages = freed
		if err != nil {
			errs = append(errs, err)
		}
		s.log.Info("retention sweep", "queues", st.Queues, "partitions", st.Partitions, "segments", st.Segments,
			"messages", st.Frames, "bytes", st.Bytes, "freedPages", st.FreedPages, "took", time.Since(start).Round(time.Millisecond))
	}
	return st, errors.Join(errs...)
}

func (s *Service) sweepQueue(ctx context.Context, q *combtype.Queue, now time.Time, st *Stats) error {
	// Age: only partitions whose oldest segment is old enough get an op.
	parts, err := s.st.AgedPartitions(ctx, q, now)
	if err != nil {
		return err
	}
	for _, partID := range parts {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var total store.EvictResult
		for {
			var r store.EvictResult
			err := s.paced(ctx, func() (err error) {
				r, err = s.st.EvictAged(ctx, q.ID, partID, now, s.cfg.Limits)
				return err
			})
			if err != nil {
				return err
			}
			total.Segments += r.Segments
			total.Frames += r.Frames
			total.Bytes += r.Bytes
			if !r.More || r.Segments == 0 {
				break
			}
		}
		s.count(st, total)
	}
	if q.Options.MaxBytes <= 0 {
		return nil
	}
	// Size: plan on a reader (it sorts the queue's segments by age), then
	// delete partition by partition in bounded ops.
	cuts, err := s.st.OversizeCuts(ctx, q.ID)
	if err != nil {
		return err
	}
	for _, c := range cuts {
		var total store.EvictResult
		for {
			var r store.EvictResult
			err := s.paced(ctx, func() (err error) {
				r, err = s.st.EvictPrefix(ctx, c.PartitionID, c.UpTo, now, s.cfg.Limits)
				return err
			})
			if err != nil {
				return err
			}
			total.Segments += r.Segments
			total.Frames += r.Frames
			total.Bytes += r.Bytes
			if !r.More || r.Segments == 0 {
				break
			}
		}
		s.count(st, total)
	}
	return nil
}

// paced runs one writer op, then pauses in proportion to its duration.
func (s *Service) paced(ctx context.Context, op func() error) error {
	start := time.Now()
	if err := op(); err != nil {
		return err
	}
	if s.cfg.YieldRatio <= 0 {
		return nil
	}
	t := time.NewTimer(time.Duration(float64(time.Since(start)) * s.cfg.YieldRatio))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Service) count(st *Stats, r store.EvictResult) {
	if r.Segments == 0 {
		return
	}
	st.Partitions++
	st.Segments += r.Segments
	st.Frames += r.Frames
	st.Bytes += r.Bytes
}

// vacuum returns free pages to the file system, one bounded op at a time.
func (s *Service) vacuum(ctx context.Context) (int64, error) {
	before, err := s.st.FreePages(ctx)
	if err != nil || before == 0 {
		return 0, err
	}
	left := before
	for i := 0; i < s.cfg.VacuumSteps && left > 0; i++ {
		var n int64
		err := s.paced(ctx, func() (err error) {
			n, err = s.st.IncrementalVacuum(ctx, s.cfg.VacuumPages)
			return err
		})
		if err != nil {
			return before - left, err
		}
		if n >= left {
			break // not an incremental-vacuum file, or nothing movable
		}
		left = n
	}
	return before - left, nil
}

// WakeExpiredLeases wakes the pops parked on every queue where a lease
// expired since the previous check, up to now, and returns how many queues
// it woke. Pops already treat an expired lease as free; this only makes
// parked ones look again without waiting for their own timers.
func (s *Service) WakeExpiredLeases(ctx context.Context, now time.Time) (int, error) {
	s.mu.Lock()
	after := s.leaseSeen
	s.mu.Unlock()
	if !now.After(after) {
		return 0, nil
	}
	refs, err := s.st.LeasesExpiredBetween(ctx, after, now)
	if err != nil {
		return 0, err
	}
	for _, r := range refs {
		s.st.Notify(r.Tenant, r.Queue)
	}
	s.mu.Lock()
	if now.After(s.leaseSeen) {
		s.leaseSeen = now
	}
	s.mu.Unlock()
	return len(refs), nil
}
