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
	"slices"
	"sync"
	"time"

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
	// DefaultPassTime bounds one sweep: a pass that has not reached every
	// cut by then logs what it did and the next one starts at once, so a
	// long backlog is reported as it goes and the queues and policies a
	// pass works from are never older than this.
	DefaultPassTime = 10 * time.Second
	// DefaultYieldRatio is the pause after each eviction op, as a fraction
	// of the op's duration: it lets the pushes that queued behind the op
	// commit on their own before the next op. See Config.YieldRatio.
	DefaultYieldRatio = 0.25
	// minYield is the least pause after an op: about what the writer needs
	// to pick up the pushes waiting for it.
	minYield = time.Millisecond
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
	// Limits bound each eviction op, in size and in time. Zero fields take
	// the store's defaults.
	Limits store.EvictLimits
	// PassTime bounds one sweep, on Clock: past it the pass stops between
	// two ops, logs what it did, and (when periodic) the next pass starts
	// at once. Default DefaultPassTime; negative: no bound.
	PassTime time.Duration
	// VacuumPages is the free pages returned per vacuum op. Default DefaultVacuumPages.
	VacuumPages int
	// VacuumSteps bounds the vacuum ops per sweep. Default DefaultVacuumSteps.
	VacuumSteps int
	// YieldRatio paces a sweep: after each writer op it pauses for the op's
	// duration times this ratio (at least a millisecond), so the pushes
	// queued behind an op commit on their own instead of waiting for the
	// next op too. A push waits for at most about one op (Limits.Time).
	// Default DefaultYieldRatio: a sweep with work takes about four fifths
	// of the writer's time, and pushes the rest they need, as they commit
	// in batches between the ops; negative: no pause.
	YieldRatio float64
	// OnOp, if set, is called after each eviction op of a sweep with the
	// sweep's totals so far. It runs on the sweeping goroutine, so tests use
	// it to move a Manual clock or cancel a sweep between two ops.
	OnOp func(Stats)
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
	// Complete is true when the sweep reached every cut its policies
	// set; false when it stopped at its PassTime, was canceled or failed,
	// and the counts are what it deleted until then.
	Complete bool
}

// Service runs retention sweeps and the lease-expiry check.
type Service struct {
	st  *store.Store
	cfg Config
	log *slog.Logger

	mu           sync.Mutex // one pass at a time
	leaseSeen    time.Time  // leases expiring up to here were already woken
	snapshotsRan time.Time  // when expired snapshots were last deleted
	last         job        // the job the last eviction op served

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
	cfg.YieldRatio = cmp.Or(cfg.YieldRatio, DefaultYieldRatio)
	cfg.PassTime = cmp.Or(cfg.PassTime, DefaultPassTime)
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
				// A pass that stopped at its PassTime left work that is due
				// now: the next one starts at once instead of an interval
				// later, so a backlog is worked off at the pace of the ops.
				// One that deleted nothing waits for the next tick.
				for ctx.Err() == nil {
					st, err := s.RunOnce(ctx)
					if err != nil && ctx.Err() == nil {
						s.log.Error("retention sweep", "err", err)
					}
					if st.Complete || err != nil || st.Segments == 0 {
						return
					}
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
//
// The pass works round-robin: each round gives every partition with
// something to delete one bounded op, oldest segments first, so a pass
// cut short by its PassTime or its context has taken from every such
// partition, not emptied the first ones. The returned counts are what was
// deleted, whatever stopped the pass, and a pass that deleted something
// logs them.
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
	p := &pass{s: s, st: &st, now: now}
	if s.cfg.PassTime > 0 {
		p.deadline = s.cfg.Clock.Now().Add(s.cfg.PassTime)
	}
	defer func() {
		if st.Segments > 0 || st.Snapshots > 0 {
			s.log.Info("retention sweep", "queues", st.Queues, "partitions", st.Partitions, "segments", st.Segments,
				"messages", st.Frames, "bytes", st.Bytes, "freedPages", st.FreedPages, "snapshots", st.Snapshots,
				"complete", st.Complete, "took", time.Since(start).Round(time.Millisecond))
		}
	}()
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
	// Age first, then size: the size plan is made once age retention has
	// freed what it frees, or it would cut more than maxBytes needs.
	var jobs []job
	for _, q := range queues {
		parts, err := s.st.AgedPartitions(ctx, q, now)
		if err != nil {
			if ctx.Err() != nil {
				return st, err
			}
			errs = append(errs, err)
			continue
		}
		for _, id := range parts {
			jobs = append(jobs, job{queue: q.ID, part: id})
		}
	}
	done, err := p.rounds(ctx, s.resume(jobs))
	if err != nil {
		return st, errors.Join(append(errs, err)...)
	}
	jobs = jobs[:0]
	for _, q := range queues {
		if !done || q.Options.MaxBytes <= 0 {
			continue
		}
		// Size: plan on a reader (it sorts the queue's segments by age),
		// then delete partition by partition in bounded ops.
		cuts, err := s.st.OversizeCuts(ctx, q.ID)
		if err != nil {
			if ctx.Err() != nil {
				return st, err
			}
			errs = append(errs, err)
			continue
		}
		for _, c := range cuts {
			jobs = append(jobs, job{queue: q.ID, part: c.PartitionID, upTo: c.UpTo, size: true})
		}
	}
	if done {
		if done, err = p.rounds(ctx, s.resume(jobs)); err != nil {
			return st, errors.Join(append(errs, err)...)
		}
	}
	if st.Segments > 0 && done {
		freed, err := s.vacuum(ctx)
		st.FreedPages = freed
		if err != nil {
			errs = append(errs, err)
		}
	}
	st.Complete = done && len(errs) == 0
	return st, errors.Join(errs...)
}

// job is one partition's share of a pass: its aged segments, or, for a
// size job, its segments that end below upTo.
type job struct {
	queue, part int64
	upTo        int64
	size        bool
}

// after orders jobs by queue, then partition.
func (j job) after(k job) bool {
	return j.queue > k.queue || (j.queue == k.queue && j.part > k.part)
}

// resume rotates jobs (in queue, partition order) to start after the job
// the previous pass served last, so that passes cut short by their time
// take turns over a queue with more partitions than one pass reaches.
// Lock should be held.
func (s *Service) resume(jobs []job) []job {
	i := slices.IndexFunc(jobs, func(j job) bool { return j.after(s.last) })
	if i <= 0 {
		return jobs
	}
	slices.Reverse(jobs[:i])
	slices.Reverse(jobs[i:])
	slices.Reverse(jobs)
	return jobs
}

// pass is the state of one Sweep.
type pass struct {
	s        *Service
	st       *Stats
	now      time.Time
	deadline time.Time // zero: none
}

// rounds gives each job one op per round until every job is done, and
// reports whether they all were: false when the pass's time ran out. A
// job is done when an op leaves nothing for the next one; a job whose op
// fails is dropped and its error returned with the others at the end.
func (p *pass) rounds(ctx context.Context, jobs []job) (bool, error) {
	var errs []error
	for first := true; len(jobs) > 0; first = false {
		left := jobs[:0]
		for i, j := range jobs {
			if err := ctx.Err(); err != nil {
				return false, errors.Join(append(errs, err)...)
			}
			if !p.deadline.IsZero() && !p.s.cfg.Clock.Now().Before(p.deadline) {
				return false, errors.Join(errs...)
			}
			p.s.last = j
			var r store.EvictResult
			err := p.s.paced(ctx, func() (err error) {
				if j.size {
					r, err = p.s.st.EvictPrefix(ctx, j.part, j.upTo, p.now, p.s.cfg.Limits)
				} else {
					r, err = p.s.st.EvictAged(ctx, j.queue, j.part, p.now, p.s.cfg.Limits)
				}
				return err
			})
			// What an op deleted is counted even when the pause after it
			// was cut short: it committed.
			if first && r.Segments > 0 {
				p.st.Partitions++
			}
			p.st.Segments += r.Segments
			p.st.Frames += r.Frames
			p.st.Bytes += r.Bytes
			if p.s.cfg.OnOp != nil {
				p.s.cfg.OnOp(*p.st)
			}
			if err != nil {
				if ctx.Err() != nil {
					return false, errors.Join(append(errs, err)...)
				}
				// One partition's failure does not hold back the others.
				errs = append(errs, err)
				continue
			}
			if r.More && (r.Segments > 0 || r.Traces > 0) {
				left = append(left, jobs[i])
			}
		}
		jobs = left
	}
	return true, errors.Join(errs...)
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
	t := time.NewTimer(max(minYield, time.Duration(float64(time.Since(start))*s.cfg.YieldRatio)))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
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
