package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// Queue totals of large queues. A queue's totals sum every partition's
// stored and completed counts (pages.go, queueTotals), which is linear in
// its partitions: 2 s at 1M. Up to LiveTotalsPartitions partitions they are
// summed on every read, exact and fresh. Above it a read is answered from
// the last sum, which one goroutine recomputes in the background, and the
// reply says how old it is (statsAge, in seconds), as Queen's summaries
// do.
//
// Why not counters kept by the writer: completed is, per partition, the
// least committed offset over the groups (statusCursor), so an ack would
// have to read the partition's other cursors to know whether the least one
// moved, and so would every cursor seeded by a first pop, every seek,
// retention step, queue and group delete, each adding reads to the write
// path and a backfill migration over every partition; processing depends
// on leases expiring with time and cannot be stored at all.

// DefaultLiveTotalsPartitions is where queue totals stop being summed on
// every read.
const DefaultLiveTotalsPartitions = 10000

// A queue of few partitions can still be costly to sum: the group figures
// read every (partition, group) position, and the totals every cursor. Ten
// partitions with 10,000 groups took 250-570 ms for a page of 100 groups
// and 1.9-3.7 s for the queue's resources (bench/results/scale-groups-
// 2026-12-01.md). So a queue is large too when its partitions times its
// groups pass DefaultLiveGroupPositions.

// DefaultLiveGroupPositions is where a queue's figures stop being summed
// on every read by the count of its positions.
const DefaultLiveGroupPositions = 10000

// Tenant summaries (Summary) follow the same rule one level up. The
// status and overview routes speak of a whole tenant: every queue's
// totals, every cursor's lag. Up to LiveSummaryPartitions partitions in
// the tenant that is summed on every read; above, a read is answered from
// the last sum the refresher made, with its age, so those routes cost
// what they return (at 10,000 queues, summing took 0.5-2 s a read).

// DefaultLiveSummaryPartitions is where a tenant's Summary stops being
// summed on every read.
const DefaultLiveSummaryPartitions = 1000

// totalsForget is how long a large queue's totals are kept refreshed after
// the last read that asked for them.
const totalsForget = 10 * time.Minute

type totalsEntry struct {
	tenant  string
	q       combtype.Queue
	summed  bool                // false until the refresher's first sum
	sums    combtype.QueueStats // PartitionCount and Counts as summed at at
	at      time.Time           // store clock when summed
	askedAt time.Time           // wall time of the last read
}

type summaryEntry struct {
	sum     *combtype.Summary // as summed, Timestamp the store clock then
	askedAt time.Time         // wall time of the last read
}

type totalsCache struct {
	mu      sync.Mutex
	entries map[int64]*totalsEntry   // by queue id
	tenants map[string]*summaryEntry // by tenant
	summing map[string]chan struct{} // first sums under way, closed when done
	// unsummed holds the large tenants a read found with no sum, for the
	// refresher's next round to make their first.
	unsummed map[string]bool
	prime    bool // the refresher first sums every large tenant
	// crossed holds the tenants summed ahead once they grew past the live
	// limit: a tenant is summed ahead the first time only, so one that
	// keeps making partitions with nobody reading its Summary does not
	// keep the refresher busy.
	crossed map[string]bool
	grewMu  sync.Mutex          // guards grew to keysAt: the writer takes it
	grew    map[string]struct{} // tenants given a partition since the refresher looked
	small   map[int64]string    // queue id -> uuid of the queues found within the live limit
	grewAt  map[int64]int64     // queue id -> commits counted when it was last given a partition
	// grewFloor is the count of commits when grewAt was last emptied:
	// growth before then is known only to be at most that old.
	grewFloor int64
	keys      map[string][]*combtype.Queue // tenant -> its queues' keys (tenantQueueKeys)
	keysAt    int64                        // commits counted when queues last changed
	growing   map[string]struct{}          // the tenants in grew at the refresher's last look
	groups    map[int64]*groupsEntry       // by queue id (groupstats.go)
	running   bool
	done      chan struct{} // closed when the refresher returns; nil until it starts
	// stop ends the refresher's loop; stopped keeps it from starting
	// again (tests that make every round themselves with RefreshTotals).
	stop    context.CancelFunc
	stopped bool
	// primeTook is how long the sums made at open took, primeRest the
	// rest the refresher took after them (tests read them).
	primeTook, primeRest time.Duration
}

// totals returns the totals of queues of tenant (by queue id), with
// StatsAge set for those answered from a background sum. A large queue
// the background has not summed yet is summed now when wait is set (the
// sums of a whole tenant, made in the background themselves); a request
// is answered at once instead, its StatsAge NotSummed, and the queue is
// left to the refresher: summing a million partitions takes seconds, a
// minute under load.
func (s *Store) totals(ctx context.Context, db querier, tenant string, queues []*combtype.Queue, wait bool) (map[int64]*combtype.QueueStats, error) {
	now := s.clock.Now()
	out := make(map[int64]*combtype.QueueStats, len(queues))
	var live []*combtype.Queue
	s.tot.mu.Lock()
	for _, q := range queues {
		if e := s.tot.entries[q.ID]; e != nil && e.q.UUID != q.UUID {
			delete(s.tot.entries, q.ID) // a queue deleted, its id taken again
		} else if e != nil && !e.summed && wait {
			e.askedAt = time.Now()
		} else if e != nil && !e.summed {
			out[q.ID] = &combtype.QueueStats{Queue: *q, Summarized: true, StatsAge: combtype.NotSummed}
			e.askedAt = time.Now()
			continue
		} else if e != nil {
			qs := e.sums
			qs.Queue = *q
			qs.StatsAge = max(now.Sub(e.at), 0)
			qs.Summarized = true
			out[q.ID] = &qs
			e.askedAt = time.Now()
			continue
		}
		live = append(live, q)
	}
	s.tot.mu.Unlock()
	if len(live) == 0 {
		return out, nil
	}
	large, err := s.largeQueues(ctx, live)
	if err != nil {
		return nil, err
	}
	if !wait && len(large) > 0 {
		small := live[:0:0]
		for _, q := range live {
			if !large[q.ID] {
				small = append(small, q)
				continue
			}
			s.rememberUnsummed(tenant, q)
			out[q.ID] = &combtype.QueueStats{Queue: *q, Summarized: true, StatsAge: combtype.NotSummed}
		}
		live = small
		if len(live) == 0 {
			return out, nil
		}
	}
	sums, err := queueTotals(ctx, db, tenant, live, micros(now))
	if err != nil {
		return nil, err
	}
	for id, qs := range sums {
		out[id] = qs
		if large[id] {
			qs.Summarized = true
			s.remember(tenant, qs, now)
		}
	}
	return out, nil
}

// largeQueues tells which of queues have more than the live limit of
// partitions, or of positions (partitions times groups), reading at most
// that many index entries of each kind per queue.
//
// A queue found within the limits stays so until the writer gives it a
// partition or a group subscribes to it (grown, groupJoined), so that
// verdict is kept and the queue is not sized again: at 10,000 queues
// sizing them all was a third of the groups listing's time. Partitions
// and groups only go away otherwise, which keeps a small queue small. A
// verdict that misses a group (one that only seeks, with no subscription)
// costs time, not correctness: the queue is summed on every read, as a
// small one is. The sizing reads with s.r, its own snapshot, begun after
// the count of commits is taken, so a verdict is kept only when every
// partition the queue was given had been committed by then: the writer
// marks a queue before its commit, and a read racing that commit may not
// see the partition.
func (s *Store) largeQueues(ctx context.Context, queues []*combtype.Queue) (map[int64]bool, error) {
	var ids []int64
	s.tot.grewMu.Lock()
	for _, q := range queues {
		if s.tot.small[q.ID] != q.UUID {
			ids = append(ids, q.ID)
		}
	}
	s.tot.grewMu.Unlock()
	out := map[int64]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	commits := s.stats.Commits.Load()
	// Per queue: its partitions, subscriptions and cursor rows, each
	// counted up to a bound.
	rows, err := s.r.QueryContext(ctx, `SELECT j.value,
			(SELECT COUNT(*) FROM (SELECT 1 FROM partitions WHERE queue_id = j.value LIMIT ?2)),
			(SELECT COUNT(*) FROM (SELECT 1 FROM subscriptions WHERE queue_id = j.value LIMIT ?3)),
			(SELECT COUNT(*) FROM (SELECT 1 FROM partitions p INDEXED BY partitions_queue_id
				JOIN cursors c ON c.partition_id = p.id WHERE p.queue_id = j.value LIMIT ?3))
		FROM json_each(?1) j`, jsonInts(ids), s.liveTotals+1, s.livePositions+1)
	if err != nil {
		return nil, fmt.Errorf("size queues: %w", err)
	}
	defer rows.Close()
	var small []int64
	for rows.Next() {
		var id, parts, subs, cursors int64
		if err := rows.Scan(&id, &parts, &subs, &cursors); err != nil {
			return nil, fmt.Errorf("size queues: %w", err)
		}
		// The groups are at least the subscribed ones, and at least the
		// rows over the partitions (a group has one row a partition at
		// most): positions are parts times the larger of the two.
		groups := subs
		if parts > 0 {
			groups = max(subs, (cursors+parts-1)/parts)
		}
		if parts > int64(s.liveTotals) || parts*groups > int64(s.livePositions) {
			out[id] = true
		} else {
			small = append(small, id)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("size queues: %w", err)
	}
	s.keepSmall(queues, small, commits)
	return out, nil
}

// keepSmall keeps the verdict "within the live limit" for the queues of
// ids, sized in a snapshot begun after commits commits, unless one was
// given a partition in a commit after those.
func (s *Store) keepSmall(queues []*combtype.Queue, ids []int64, commits int64) {
	uuids := make(map[int64]string, len(queues))
	for _, q := range queues {
		uuids[q.ID] = q.UUID
	}
	s.tot.grewMu.Lock()
	defer s.tot.grewMu.Unlock()
	if s.tot.grewFloor >= commits {
		return // growth forgotten since may be later than the snapshot
	}
	if s.tot.small == nil || len(s.tot.small) >= maxSmall {
		s.tot.small = map[int64]string{} // the deleted queues' verdicts go too
	}
	for _, id := range ids {
		if at, ok := s.tot.grewAt[id]; ok && at >= commits {
			continue // grown in a commit the snapshot may not hold
		}
		s.tot.small[id] = uuids[id]
	}
}

// tenantQueueKeys is queueKeys of every queue of tenant, kept until the
// writer adds or removes a queue (queuesChanged): the group listings read
// them on every request, 11 ms of a listing's 30 at 10,000 queues. As
// with the small verdicts (largeQueues), a list is kept only when read in
// a snapshot begun after the last change was committed. The slice and
// its queues are shared: callers only read them.
func (s *Store) tenantQueueKeys(ctx context.Context, tenant string) ([]*combtype.Queue, error) {
	s.tot.grewMu.Lock()
	keys, ok := s.tot.keys[tenant]
	s.tot.grewMu.Unlock()
	if ok {
		return keys, nil
	}
	commits := s.stats.Commits.Load()
	keys, err := queueKeys(ctx, s.r, tenant, "")
	if err != nil {
		return nil, err
	}
	s.tot.grewMu.Lock()
	defer s.tot.grewMu.Unlock()
	if s.tot.keysAt < commits {
		if s.tot.keys == nil {
			s.tot.keys = map[string][]*combtype.Queue{}
		}
		s.tot.keys[tenant] = keys
	}
	return keys, nil
}

// queuesChanged drops the kept queue keys: the writer added or removed a
// queue (or changed rows, rowsChanged) in the commit after the commits
// counted so far.
func (s *Store) queuesChanged() {
	s.tot.grewMu.Lock()
	clear(s.tot.keys)
	s.tot.keysAt = s.stats.Commits.Load()
	s.tot.grewMu.Unlock()
}

// maxSmall bounds the small verdicts kept, which queues deleted since
// would otherwise grow without end.
const maxSmall = 1 << 20

// maxGrewAt bounds grewAt: beyond it the marks are forgotten, and the
// verdicts of reads begun before are not kept.
const maxGrewAt = 100000

// remember keeps qs as the totals of a large queue and makes sure the
// refresher runs.
func (s *Store) remember(tenant string, qs *combtype.QueueStats, at time.Time) {
	s.tot.mu.Lock()
	defer s.tot.mu.Unlock()
	if s.tot.entries == nil {
		s.tot.entries = map[int64]*totalsEntry{}
	}
	s.tot.entries[qs.ID] = &totalsEntry{tenant: tenant, q: qs.Queue, summed: true, sums: *qs, at: at, askedAt: time.Now()}
	s.runRefresher()
}

// rememberUnsummed registers q, a large queue, for the refresher to sum,
// unless a read registered or summed it first.
func (s *Store) rememberUnsummed(tenant string, q *combtype.Queue) {
	s.tot.mu.Lock()
	defer s.tot.mu.Unlock()
	if s.tot.entries == nil {
		s.tot.entries = map[int64]*totalsEntry{}
	}
	if e := s.tot.entries[q.ID]; e != nil && e.q.UUID == q.UUID {
		return
	}
	s.tot.entries[q.ID] = &totalsEntry{tenant: tenant, q: *q, askedAt: time.Now()}
	s.runRefresher()
}

// runRefresher starts the refresher unless it runs or the store is
// closing. Lock should be held.
func (s *Store) runRefresher() {
	if !s.tot.running && !s.tot.stopped && s.ctx.Err() == nil {
		s.tot.running = true
		s.tot.done = make(chan struct{})
		ctx, stop := context.WithCancel(s.ctx)
		s.tot.stop = stop
		go s.refreshTotalsLoop(ctx, s.tot.done)
	}
}

// Summary returns tenant's Summary: summed now up to the live limit of
// partitions, else the refresher's last sum. A large tenant with no sum
// yet is answered at once without figures (notSummed) and left to the
// refresher: its first sum reads every partition and every group's
// position on each, which takes minutes at a million partitions, and a
// read waited for it.
func (s *Store) Summary(ctx context.Context, tenant string) (*combtype.Summary, error) {
	s.tot.mu.Lock()
	if e := s.tot.tenants[tenant]; e != nil {
		e.askedAt = time.Now()
		sum := *e.sum
		s.tot.mu.Unlock()
		sum.StatsAge = max(s.clock.Now().Sub(sum.Timestamp), 0)
		return &sum, nil
	}
	s.tot.mu.Unlock()
	large, err := s.largeTenant(ctx, tenant)
	if err != nil {
		return nil, err
	}
	if !large {
		return s.summarise(ctx, tenant)
	}
	s.tot.mu.Lock()
	if e := s.tot.tenants[tenant]; e != nil { // summed meanwhile
		s.tot.mu.Unlock()
		return s.Summary(ctx, tenant)
	}
	if s.tot.summing[tenant] == nil {
		if s.tot.unsummed == nil {
			s.tot.unsummed = map[string]bool{}
		}
		s.tot.unsummed[tenant] = true
		s.runRefresher()
	}
	s.tot.mu.Unlock()
	return s.notSummed(ctx, tenant)
}

// notSummed is the Summary of a large tenant before its first sum: its
// queues, in Summary's order, with no figures, StatsAge NotSummed, as a
// large queue's totals are before theirs (docs/wire.md).
func (s *Store) notSummed(ctx context.Context, tenant string) (*combtype.Summary, error) {
	queues, err := listQueues(ctx, s.r, `SELECT `+queueColumns+` FROM queues WHERE tenant = ?
		ORDER BY created_at DESC, id DESC`, tenant)
	if err != nil {
		return nil, err
	}
	sum := &combtype.Summary{Queues: make([]*combtype.QueueStats, len(queues))}
	o := &sum.Overview
	o.Timestamp, o.Queues, o.Summarized, o.StatsAge = s.clock.Now(), int64(len(queues)), true, combtype.NotSummed
	namespaces, tasks := map[string]bool{}, map[string]bool{}
	for i, q := range queues {
		sum.Queues[i] = &combtype.QueueStats{Queue: *q, Summarized: true, StatsAge: combtype.NotSummed}
		namespaces[q.Namespace], tasks[q.Task] = true, true
	}
	delete(namespaces, "")
	delete(tasks, "")
	o.Namespaces, o.Tasks = int64(len(namespaces)), int64(len(tasks))
	return sum, nil
}

// firstSum sums the Summary of tenant, a large one, and keeps it for the
// refresher to renew, unless one is kept or under way already, or, when
// ahead (sumGrownTenants), the tenant was summed ahead since it crossed
// the limit. Its callers are the refresher's rounds, which do not read
// the sum: one that waited for another's sum and then read it counted as
// a read, and a read after the sum was forgotten asked for it again
// (TestGrowingPastTheLimitSumsAhead, when a test's RefreshTotals ran
// beside the refresher's first round). All of it is decided under the
// lock that starts the sum.
func (s *Store) firstSum(ctx context.Context, tenant string, ahead bool) error {
	s.tot.mu.Lock()
	if s.tot.tenants[tenant] != nil || s.tot.summing[tenant] != nil || (ahead && s.tot.crossed[tenant]) {
		s.tot.mu.Unlock()
		return nil
	}
	if s.tot.summing == nil {
		s.tot.summing = map[string]chan struct{}{}
	}
	done := make(chan struct{})
	s.tot.summing[tenant] = done
	s.tot.mu.Unlock()
	sum, err := s.summarise(ctx, tenant)
	s.tot.mu.Lock()
	defer s.tot.mu.Unlock()
	delete(s.tot.summing, tenant)
	close(done)
	if err != nil {
		return err
	}
	sum.Summarized = true
	if s.tot.tenants == nil {
		s.tot.tenants = map[string]*summaryEntry{}
	}
	s.tot.tenants[tenant] = &summaryEntry{sum: sum, askedAt: time.Now()}
	if s.tot.crossed == nil {
		s.tot.crossed = map[string]bool{}
	}
	s.tot.crossed[tenant] = true
	s.runRefresher()
	return nil
}

// primeSummaries sums the Summary of every tenant with more partitions
// than the live limit.
func (s *Store) primeSummaries(ctx context.Context) error {
	tenants, err := s.largeTenants(ctx)
	if err != nil {
		return err
	}
	for _, t := range tenants {
		if err := s.firstSum(ctx, t, false); err != nil {
			return err
		}
	}
	return nil
}

// largeTenants lists the tenants with more partitions than the live
// limit. The tenants are told from their queues and each is sized by
// largeTenant, which stops past the limit: counting every partition by
// tenant read them all (0.2 s at a million) before the first sum began.
func (s *Store) largeTenants(ctx context.Context) ([]string, error) {
	tenants, err := column[string](ctx, s.r, `SELECT DISTINCT tenant FROM queues ORDER BY tenant`)
	if err != nil {
		return nil, fmt.Errorf("list tenants: %w", err)
	}
	large := tenants[:0]
	for _, t := range tenants {
		ok, err := s.largeTenant(ctx, t)
		if err != nil {
			return nil, err
		}
		if ok {
			large = append(large, t)
		}
	}
	return large, nil
}

// largeTenant tells whether tenant has more partitions than the live
// limit of summaries, or more group positions than a queue may have
// within the live limit (Options.LiveGroupPositions), reading at most
// that many index entries of each. A tenant of one partition read by
// 100,000 groups is as costly to sum as one of 100,000 partitions: its
// status read every cursor's lag, 0.7 s a read.
func (s *Store) largeTenant(ctx context.Context, tenant string) (bool, error) {
	// Each count only when the one before did not decide: past the
	// partitions' limit the others would read as many partitions again.
	// Within it, the cursors' join reads at most that many partitions.
	for _, q := range []struct {
		sql   string
		limit int
	}{
		{`SELECT COUNT(*) FROM (SELECT 1 FROM partitions
			WHERE queue_id IN (SELECT id FROM queues WHERE tenant = ?1) LIMIT ?2)`, s.liveSummary},
		{`SELECT COUNT(*) FROM (SELECT 1 FROM subscriptions
			WHERE queue_id IN (SELECT id FROM queues WHERE tenant = ?1) LIMIT ?2)`, s.livePositions},
		{`SELECT COUNT(*) FROM (SELECT 1 FROM partitions p INDEXED BY partitions_queue_id
			JOIN cursors c ON c.partition_id = p.id
			WHERE p.queue_id IN (SELECT id FROM queues WHERE tenant = ?1) LIMIT ?2)`, s.livePositions},
	} {
		var n int
		if err := s.r.QueryRowContext(ctx, q.sql, tenant, q.limit+1).Scan(&n); err != nil {
			return false, fmt.Errorf("size tenant: %w", err)
		}
		if n > q.limit {
			return true, nil
		}
	}
	return false, nil
}

// refreshTotalsLoop sums the large queues' totals again and again until
// ctx ends, resting between rounds four times as long as a round took (at
// least a second), so it holds at most a fifth of one core.
func (s *Store) refreshTotalsLoop(ctx context.Context, done chan struct{}) {
	defer close(done)
	s.tot.mu.Lock()
	prime := s.tot.prime
	s.tot.prime = false
	s.tot.mu.Unlock()
	rest := time.Second
	if prime {
		// The sums made at open are a round too: the next waits four
		// times as long as they took, not a second (at a million
		// partitions they take minutes, and a core was held for two
		// rounds in a row).
		start := time.Now()
		if err := s.primeSummaries(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("sum large tenants", "err", err)
		}
		took := time.Since(start)
		rest = max(rest, 4*took)
		s.tot.mu.Lock()
		s.tot.primeTook, s.tot.primeRest = took, rest
		s.tot.mu.Unlock()
	}
	summedSeq := int64(-1) // commitSeq as the last round began
	var summedAt time.Time
	for {
		t := time.NewTimer(rest)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		seq := s.commitSeq.Load()
		if quietRound(seq, summedSeq, time.Since(summedAt), s.totalsSettled()) {
			continue
		}
		start := time.Now()
		if err := s.RefreshTotals(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("refresh queue totals", "err", err)
		}
		summedSeq, summedAt = seq, start
		rest = max(time.Second, 4*time.Since(start))
	}
}

// quietRefreshEvery is how long the refresher lets its sums stand while
// nothing is committed.
const quietRefreshEvery = time.Minute

// quietRound reports whether the refresher may skip a round: nothing was
// committed since the last one began (seq, even, is the commit count it
// saw then), every sum asked for has been made (settled), and that round
// is less than quietRefreshEvery old. The sums still hold then but for
// what time alone moves (a lease expiring, a lag in seconds), which the
// replies' statsAge owns up to. Summing every round, an idle server with
// 70,000 partitions held 9% of a core for as long as a reader came back
// within totalsForget (a console or a monitoring script does).
func quietRound(seq, summedSeq int64, since time.Duration, settled bool) bool {
	return seq == summedSeq && seq%2 == 0 && settled && since < quietRefreshEvery
}

// totalsSettled reports whether every large queue's totals, group
// figures and tenant Summary asked for has a sum, and no tenant waits for
// its first.
func (s *Store) totalsSettled() bool {
	s.tot.mu.Lock()
	defer s.tot.mu.Unlock()
	if len(s.tot.unsummed) > 0 {
		return false
	}
	for _, e := range s.tot.entries {
		if !e.summed {
			return false
		}
	}
	for _, e := range s.tot.groups {
		if e.stats == nil {
			return false
		}
	}
	for _, e := range s.tot.tenants {
		if e.sum == nil {
			return false
		}
	}
	return true
}

// RefreshTotals sums again the totals and the group figures of every
// large queue, then the Summary of every large tenant, a read asked for in
// the last totalsForget, and forgets the others, the deleted queues and
// the tenants grown small. The refresher calls it; tests call it to make a
// sum happen now.
func (s *Store) RefreshTotals(ctx context.Context) error {
	if err := errors.Join(s.refreshQueueTotals(ctx), s.refreshGroups(ctx)); err != nil {
		return err
	}
	return s.refreshTenants(ctx)
}

// refreshTenants is RefreshTotals for the large tenants' Summary.
func (s *Store) refreshTenants(ctx context.Context) error {
	s.tot.mu.Lock()
	maps.DeleteFunc(s.tot.tenants, func(_ string, e *summaryEntry) bool { return time.Since(e.askedAt) > totalsForget })
	tenants := slices.Collect(maps.Keys(s.tot.tenants))
	s.tot.mu.Unlock()
	for _, t := range tenants {
		large, err := s.largeTenant(ctx, t)
		if err != nil {
			return err
		}
		var sum *combtype.Summary
		if large {
			if sum, err = s.summarise(ctx, t); err != nil {
				return err
			}
			sum.Summarized = true
		}
		s.tot.mu.Lock()
		if cur := s.tot.tenants[t]; cur != nil && sum != nil {
			cur.sum = sum
		} else if cur != nil {
			delete(s.tot.tenants, t)
			delete(s.tot.crossed, t) // grown small: the next crossing sums ahead again
		}
		s.tot.mu.Unlock()
	}
	s.tot.mu.Lock()
	unsummed := slices.Collect(maps.Keys(s.tot.unsummed))
	s.tot.unsummed = nil
	s.tot.mu.Unlock()
	for _, t := range unsummed {
		if err := s.firstSum(ctx, t, false); err != nil {
			return err
		}
	}
	return s.sumGrownTenants(ctx)
}

// grown notes that q was given a partition, in the commit after the
// commits counted so far. The writer calls it, before that commit, so it
// only marks the tenant for the refresher to look at and drops the
// queue's "small" verdict (largeQueues).
func (s *Store) grown(q *combtype.Queue) {
	c := &s.tot
	c.grewMu.Lock()
	defer c.grewMu.Unlock()
	if c.grew == nil {
		c.grew = map[string]struct{}{}
	}
	c.grew[q.Tenant] = struct{}{}
	s.forgetSmall(q.ID)
}

// groupJoined notes that a group subscribed to queue queueID, in the
// commit after the commits counted so far: the queue's positions grew, so
// its "small" verdict is dropped (largeQueues). The writer calls it before
// that commit.
func (s *Store) groupJoined(queueID int64) {
	s.tot.grewMu.Lock()
	defer s.tot.grewMu.Unlock()
	s.forgetSmall(queueID)
}

// forgetSmall drops the "small" verdict of queue queueID and keeps when it
// changed; grewMu is held.
func (s *Store) forgetSmall(queueID int64) {
	c := &s.tot
	delete(c.small, queueID)
	if c.grewAt == nil || len(c.grewAt) >= maxGrewAt {
		c.grewAt, c.grewFloor = map[int64]int64{}, s.stats.Commits.Load()
	}
	c.grewAt[queueID] = s.stats.Commits.Load()
}

// sumGrownTenants sums ahead the Summary of each tenant that was given
// partitions and is now over the live limit for the first time, as
// opening the store does for the tenants already large: the first status
// or overview read of a broker that has just grown large is then answered
// from that sum instead of making it (0.25 s of CPU at 10,000 queues). A
// tenant is summed once it has stopped growing for a whole round, so a
// bulk load is not summed halfway, and a sum read right after it is not
// one of the load's middle.
func (s *Store) sumGrownTenants(ctx context.Context) error {
	s.tot.grewMu.Lock()
	now := s.tot.grew
	s.tot.grew = nil
	s.tot.grewMu.Unlock()
	s.tot.mu.Lock()
	grew := map[string]struct{}{}
	for t := range s.tot.growing {
		if _, still := now[t]; !still {
			grew[t] = struct{}{}
		}
	}
	s.tot.growing = now
	s.tot.mu.Unlock()
	for t := range grew {
		s.tot.mu.Lock()
		seen := s.tot.crossed[t] || s.tot.tenants[t] != nil
		s.tot.mu.Unlock()
		if seen {
			continue
		}
		large, err := s.largeTenant(ctx, t)
		if err != nil {
			return err
		}
		if !large {
			continue
		}
		if err := s.firstSum(ctx, t, true); err != nil {
			return err
		}
	}
	return nil
}

// refreshQueueTotals is RefreshTotals for the large queues.
func (s *Store) refreshQueueTotals(ctx context.Context) error {
	s.tot.mu.Lock()
	maps.DeleteFunc(s.tot.entries, func(_ int64, e *totalsEntry) bool { return time.Since(e.askedAt) > totalsForget })
	todo := slices.Collect(maps.Values(s.tot.entries))
	s.tot.mu.Unlock()
	for _, e := range todo {
		now := s.clock.Now()
		q, err := getQueue(ctx, s.r, e.tenant, e.q.Name)
		if err != nil || q.UUID != e.q.UUID {
			s.tot.mu.Lock()
			delete(s.tot.entries, e.q.ID)
			s.tot.mu.Unlock()
			if err != nil && !errors.Is(err, combtype.ErrQueueNotFound) {
				return err
			}
			continue
		}
		sums, err := queueTotals(ctx, s.r, e.tenant, []*combtype.Queue{q}, micros(now))
		if err != nil {
			return err
		}
		s.tot.mu.Lock()
		if cur := s.tot.entries[q.ID]; cur != nil {
			cur.q, cur.sums, cur.at, cur.summed = *q, *sums[q.ID], now, true
		}
		s.tot.mu.Unlock()
	}
	return nil
}
