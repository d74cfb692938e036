package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// Cursors. A cursor row is everything one consumer group knows about one
// partition: committed, the last offset it completed; the batch it holds
// under a lease (lease_from..lease_to until lease_expires_at); the failed
// rounds of that batch; and what it consumed. Acks, pops and the read
// views load it through the one type, column list and scan below, and ask
// whether its lease is live through the one predicate, in Go (live) or in
// SQL (liveLeaseAt).

// cursor is one cursor row.
type cursor struct {
	partitionID    int64
	group          string
	committed      int64
	leaseID        sql.NullString
	leaseFrom      sql.NullInt64
	leaseTo        sql.NullInt64
	leaseExpires   sql.NullInt64
	retry          int64
	totalConsumed  int64
	batches        int64
	lastConsumedAt sql.NullInt64
	// dropped is the lease a failed or retry ack released last
	// (cursors.dropped_lease). Every failed ack of a batch names its lease:
	// the first releases it, and the rest, in the same request or later
	// ones, are no-ops that succeed.
	dropped string
	created bool // not in the table yet
	dirty   bool // changed since loaded
}

// cursorColumns are the columns scanCursor reads, over table alias c.
const cursorColumns = `c.partition_id, c.group_name, c.committed, c.lease_id, c.lease_from, c.lease_to,
	c.lease_expires_at, c.retry_count, c.total_consumed, c.batches_consumed, c.last_consumed_at,
	COALESCE(c.dropped_lease, '')`

func scanCursor(r scanner) (cursor, error) {
	var c cursor
	err := r.Scan(&c.partitionID, &c.group, &c.committed, &c.leaseID, &c.leaseFrom, &c.leaseTo, &c.leaseExpires,
		&c.retry, &c.totalConsumed, &c.batches, &c.lastConsumedAt, &c.dropped)
	return c, err
}

// live reports whether the cursor holds a lease that has not expired at
// now. liveLeaseAt is the same predicate in SQL.
func (c *cursor) live(now int64) bool {
	return c.leaseID.Valid && c.leaseExpires.Valid && c.leaseExpires.Int64 > now
}

// liveLeaseAt is live in SQL, over cursor alias c: the query appends the
// placeholder of now, as in liveLeaseAt + "?3". lease_id and
// lease_expires_at are NULL together (a CHECK of the table), so the
// negation NOT (...) is exactly "no live lease".
const liveLeaseAt = `c.lease_id IS NOT NULL AND c.lease_expires_at > `

// inLease reports whether off is in the cursor's live lease and not yet
// completed.
func (c *cursor) inLease(off, now int64) bool {
	return c.live(now) && c.leaseFrom.Valid && c.leaseTo.Valid && off > c.committed &&
		off >= c.leaseFrom.Int64 && off <= c.leaseTo.Int64
}

// partCursors is what the views need of one partition's cursors, its
// rows and those its groups' subscriptions imply (implied.go), gathered
// as they are read rather than kept: a queue of 10 partitions read by
// 10,000 groups has 100,000 of them, and holding them all cost its detail
// route 1 s.
type partCursors struct {
	qm    *cursor // the queue-mode group's
	least *cursor // the least advanced named group's, the first of equals in read order
	// bus is each named group's committed offset, in ascending order, when
	// kept (the message views count the groups past a message).
	bus   []int64
	named int // named groups' cursors

	totalConsumed, batches int64
	lastConsumedAt         int64 // micros; 0 for none
	live                   int   // cursors holding a live lease
}

// status is the cursor that decides a message's status: the queue-mode
// cursor if there is one, else the least advanced named group's; nil for a
// partition no group has met.
func (pc *partCursors) status() *cursor {
	if pc == nil {
		return nil
	}
	if pc.qm != nil {
		return pc.qm
	}
	return pc.least
}

// add counts c, read at now; keepBus keeps a named group's offset in bus.
// Rows are added before the cursors subscriptions imply, so that the
// least advanced is a row when one ties with an implied cursor.
func (pc *partCursors) add(c *cursor, now int64, keepBus bool) {
	pc.totalConsumed += c.totalConsumed
	pc.batches += c.batches
	if c.lastConsumedAt.Valid {
		pc.lastConsumedAt = max(pc.lastConsumedAt, c.lastConsumedAt.Int64)
	}
	if c.live(now) {
		pc.live++
	}
	if c.group == combtype.QueueModeGroup {
		if pc.qm == nil {
			cp := *c
			pc.qm = &cp
		}
		return
	}
	pc.named++
	if keepBus {
		pc.bus = append(pc.bus, c.committed)
	}
	if pc.least == nil || c.committed < pc.least.committed {
		cp := *c
		pc.least = &cp
	}
}

// addImplied counts what impliedLeasts summed for the partition: cursors
// with no lease, added after every row.
func (pc *partCursors) addImplied(il impliedLeast, partitionID int64) {
	if il.qm > 0 && pc.qm == nil {
		pc.qm = &cursor{partitionID: partitionID, group: combtype.QueueModeGroup, committed: il.qmCommitted, created: true}
	}
	if il.named == 0 {
		return
	}
	pc.named += int(il.named)
	if pc.least == nil || il.least < pc.least.committed {
		// One of the groups at the least implied offset; which one does
		// not show in any figure, as an implied cursor holds no lease.
		pc.least = &cursor{partitionID: partitionID, committed: il.least, created: true}
	}
}

// cursorRead is what readPartCursors keeps of the cursors subscriptions
// imply where a group has no row.
type cursorRead int

const (
	// impliedSummed sums them by SQLite (impliedLeasts): their least and
	// their number, no bus.
	impliedSummed cursorRead = iota
	// impliedInBus keeps each named group's offset in bus; those at the
	// floor are counted (impliedFloorCounts), not read a row each.
	impliedInBus
	// impliedEach is impliedInBus read a cursor each, every one of them
	// passed to each.
	impliedEach
)

// readPartCursors reads the cursors of the partitions pids at now into one
// partCursors each (absent for a partition no group has met), keeping of
// the implied ones what how says. each, if not nil, is called with every
// row, and with impliedEach with every implied cursor too; it must not
// keep c.
func readPartCursors(ctx context.Context, db querier, pids []int64, now int64, how cursorRead, each func(c *cursor)) (map[int64]*partCursors, error) {
	keepBus := how != impliedSummed
	if !keepBus && each == nil {
		return sumPartCursors(ctx, db, pids, now)
	}
	out := partCursorsOf{}
	of := out.of
	rows, err := db.QueryContext(ctx, `SELECT `+cursorColumns+` FROM cursors c
		WHERE c.partition_id IN (SELECT value FROM json_each(?))`, jsonInts(pids))
	if err != nil {
		return nil, fmt.Errorf("read cursors: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		c, err := scanCursor(rows)
		if err != nil {
			return nil, fmt.Errorf("scan cursor: %w", err)
		}
		of(c.partitionID).add(&c, now, keepBus)
		if each != nil {
			each(&c)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read cursors: %w", err)
	}
	rows.Close()
	if !keepBus {
		implied, err := impliedLeasts(ctx, db, pids)
		if err != nil {
			return nil, err
		}
		for id, il := range implied {
			of(id).addImplied(il, id)
		}
		return out, nil
	}
	read := eachImpliedCursor
	if how == impliedInBus {
		read = eachImpliedAboveFloor
	}
	err = read(ctx, db, pids, func(c *cursor) {
		of(c.partitionID).add(c, now, true)
		if each != nil && how == impliedEach {
			each(c)
		}
	})
	if err != nil {
		return nil, err
	}
	if how == impliedInBus {
		// A queue read by 10,000 groups that start at the oldest message
		// has about as many of these on each partition they have not
		// claimed yet: counted by SQLite and added here, not read a row
		// each.
		floors, err := impliedFloorCounts(ctx, db, pids)
		if err != nil {
			return nil, err
		}
		for id, f := range floors {
			pc := of(id)
			pc.bus = slices.Grow(pc.bus, int(f.n))
			for range f.n {
				pc.bus = append(pc.bus, f.floor)
			}
			pc.addImplied(impliedLeast{named: f.n, least: f.floor}, id)
		}
	}
	for _, pc := range out {
		slices.Sort(pc.bus)
	}
	return out, nil
}

// partCursorsOf is what readPartCursors returns, being gathered.
type partCursorsOf map[int64]*partCursors

// of returns partition id's entry, made if it has none.
func (m partCursorsOf) of(id int64) *partCursors {
	pc := m[id]
	if pc == nil {
		pc = &partCursors{}
		m[id] = pc
	}
	return pc
}

// sumPartCursors is readPartCursors with impliedSummed and no each, its
// rows summed by SQLite: per partition, the sums over its rows, its
// queue-mode row and its least advanced named row (the first of equals in
// the rows' order, group name), with no Go value made per row. A
// partition read by 100,000 groups made its queue's detail scan 100,000
// cursors in Go, 0.5-0.8 s and 68 MB a read.
func sumPartCursors(ctx context.Context, db querier, pids []int64, now int64) (map[int64]*partCursors, error) {
	out := partCursorsOf{}
	ids := jsonInts(pids)
	rows, err := db.QueryContext(ctx, `SELECT c.partition_id, `+sumOf("c.total_consumed")+`, `+sumOf("c.batches_consumed")+`,
			COALESCE(MAX(c.last_consumed_at), 0), SUM(`+liveLeaseAt+`?2), SUM(c.group_name != ?3)
		FROM cursors c WHERE c.partition_id IN (SELECT value FROM json_each(?1)) GROUP BY c.partition_id`,
		ids, now, combtype.QueueModeGroup)
	if err != nil {
		return nil, fmt.Errorf("sum cursors: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		pc := &partCursors{}
		if err := rows.Scan(&id, &pc.totalConsumed, &pc.batches, &pc.lastConsumedAt, &pc.live, &pc.named); err != nil {
			return nil, fmt.Errorf("scan cursor sums: %w", err)
		}
		out[id] = pc
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sum cursors: %w", err)
	}
	rows.Close()
	// The queue-mode rows by their key, the least named ones by one pass
	// over each partition's rows (LIMIT 1 keeps the least, not a sort).
	rows, err = db.QueryContext(ctx, `SELECT `+cursorColumns+` FROM cursors c
			WHERE c.partition_id IN (SELECT value FROM json_each(?1)) AND c.group_name = ?2
		UNION ALL SELECT `+cursorColumns+` FROM json_each(?1) j CROSS JOIN cursors c
			ON c.partition_id = j.value AND c.group_name = (SELECT x.group_name FROM cursors x
				WHERE x.partition_id = j.value AND x.group_name != ?2 ORDER BY x.committed, x.group_name LIMIT 1)`,
		ids, combtype.QueueModeGroup)
	if err != nil {
		return nil, fmt.Errorf("read status cursors: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		c, err := scanCursor(rows)
		if err != nil {
			return nil, fmt.Errorf("scan cursor: %w", err)
		}
		pc := out[c.partitionID]
		if pc == nil {
			continue // a row committed after the sums: the same snapshot has none
		}
		if c.group == combtype.QueueModeGroup {
			pc.qm = &c
		} else {
			pc.least = &c
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read status cursors: %w", err)
	}
	rows.Close()
	implied, err := impliedLeasts(ctx, db, pids)
	if err != nil {
		return nil, err
	}
	for id, il := range implied {
		out.of(id).addImplied(il, id)
	}
	return out, nil
}

// loadCursor reads the cursor of (partitionID, group) for update. Without
// a row, a group subscribed to the queue has the cursor its subscription
// implies (implied.go), not yet in the table (created); nil when the group
// has neither.
func (w *wtx) loadCursor(partitionID int64, group string) (*cursor, error) {
	c, err := scanCursor(w.QueryRowContext(w.ctx, `SELECT `+cursorColumns+` FROM cursors c
		WHERE c.partition_id = ? AND c.group_name = ?`, partitionID, group))
	if errors.Is(err, sql.ErrNoRows) {
		return w.impliedCursor(partitionID, group)
	}
	if err != nil {
		return nil, fmt.Errorf("load cursor: %w", err)
	}
	return &c, nil
}

// impliedCursor is the cursor group's subscription implies on partitionID,
// which has no row; nil without a subscription.
func (w *wtx) impliedCursor(partitionID int64, group string) (*cursor, error) {
	c := cursor{partitionID: partitionID, group: group, created: true}
	err := w.QueryRowContext(w.ctx, `SELECT `+impliedExpr+` FROM partitions p
		JOIN subscriptions s ON s.queue_id = p.queue_id AND s.group_name = ?2 WHERE p.id = ?1`,
		partitionID, group).Scan(&c.committed)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read implied cursor: %w", err)
	}
	return &c, nil
}

func (w *wtx) saveCursor(partitionID int64, group string, c *cursor) error {
	if c.created {
		if _, err := w.ExecContext(w.ctx, `INSERT INTO cursors (partition_id, group_name, committed, created_at)
			VALUES (?, ?, ?, ?)`, partitionID, group, c.committed, micros(w.now)); err != nil {
			return fmt.Errorf("create cursor: %w", err)
		}
		c.created = false
	}
	_, err := w.ExecContext(w.ctx, `UPDATE cursors SET committed = ?, lease_id = ?, lease_from = ?, lease_to = ?,
		lease_expires_at = ?, retry_count = ?, total_consumed = ?, batches_consumed = ?, last_consumed_at = ?,
		dropped_lease = NULLIF(?, '') WHERE partition_id = ? AND group_name = ?`, c.committed, c.leaseID, c.leaseFrom,
		c.leaseTo, c.leaseExpires, c.retry, c.totalConsumed, c.batches, c.lastConsumedAt, c.dropped, partitionID, group)
	if err != nil {
		return fmt.Errorf("save cursor: %w", err)
	}
	return nil
}

func (c *cursor) releaseLease() {
	c.leaseID, c.leaseFrom, c.leaseTo, c.leaseExpires = sql.NullString{}, sql.NullInt64{}, sql.NullInt64{}, sql.NullInt64{}
}

// consume moves committed forward to off (never back), counting what the
// group consumed.
func (c *cursor) consume(off, now int64) {
	if off > c.committed {
		c.totalConsumed += off - c.committed
		c.committed = off
		c.lastConsumedAt = sql.NullInt64{Int64: now, Valid: true}
	}
}

// finishBatch ends the batch the cursor holds: its lease is released and
// its failed rounds forgotten, and a batch that was leased counts as
// consumed.
func (c *cursor) finishBatch() {
	if c.leaseID.Valid {
		c.batches++
	}
	c.releaseLease()
	c.retry = 0
}

// advance moves committed forward to off (never back) and finishes the
// batch once all of it is behind the cursor.
func (c *cursor) advance(off, now int64) (released bool) {
	c.consume(off, now)
	if c.leaseID.Valid && c.leaseTo.Valid && c.committed >= c.leaseTo.Int64 {
		c.finishBatch()
		return true
	}
	return false
}

// --- leases ----------------------------------------------------------

// ExtendLease pushes the expiry of every (partition, group) held by leaseID
// to at least now + d.
func (s *Store) ExtendLease(ctx context.Context, tenant, leaseID string, d time.Duration) (combtype.LeaseExtension, error) {
	res := combtype.LeaseExtension{LeaseID: leaseID}
	err := s.submit(ctx, &writeOp{apply: func(w *wtx) error {
		now := micros(w.now)
		var held, live int
		var latest sql.NullInt64
		if err := w.QueryRowContext(w.ctx, `SELECT COUNT(*), COUNT(*) FILTER (WHERE `+liveLeaseAt+`?), MAX(c.lease_expires_at)
			FROM cursors c JOIN partitions p ON p.id = c.partition_id JOIN queues q ON q.id = p.queue_id
			WHERE c.lease_id = ? AND q.tenant = ?`, now, leaseID, tenant).Scan(&held, &live, &latest); err != nil {
			return fmt.Errorf("look up lease: %w", err)
		}
		switch {
		case held == 0:
			res.Err = combtype.ErrLeaseNotFound
			return nil
		case live == 0:
			res.Err = combtype.ErrLeaseExpired
			return nil
		}
		target := addMicros(now, max(d.Microseconds(), 0))
		if _, err := w.ExecContext(w.ctx, `UPDATE cursors AS c SET lease_expires_at = MAX(c.lease_expires_at, ?)
			WHERE c.lease_id = ? AND `+liveLeaseAt+`?`, target, leaseID, now); err != nil {
			return fmt.Errorf("extend lease: %w", err)
		}
		res.Success, res.ExpiresAt = true, fromMicros(max(target, latest.Int64))
		return nil
	}})
	return res, err
}

// ReleaseLease gives back, at once, every batch still held by leaseID: a
// lease whose messages never reached the client would otherwise hold its
// partitions for the whole lease time. It charges no retry and reports
// how many (partition, group) leases it released.
func (s *Store) ReleaseLease(ctx context.Context, tenant, leaseID string) (int64, error) {
	var n int64
	err := s.submit(ctx, &writeOp{apply: func(w *wtx) error {
		rows, err := w.QueryContext(w.ctx, `UPDATE cursors SET lease_id = NULL, lease_from = NULL, lease_to = NULL,
			lease_expires_at = NULL WHERE lease_id = ?1 AND partition_id IN (SELECT p.id FROM partitions p
			JOIN queues q ON q.id = p.queue_id WHERE q.tenant = ?2)
			RETURNING (SELECT q.name FROM partitions p JOIN queues q ON q.id = p.queue_id WHERE p.id = partition_id)`,
			leaseID, tenant)
		if err != nil {
			return fmt.Errorf("release lease: %w", err)
		}
		defer rows.Close()
		n = 0
		for rows.Next() {
			var queue string
			if err := rows.Scan(&queue); err != nil {
				return fmt.Errorf("release lease: %w", err)
			}
			n++
			w.touch(tenant, queue)
		}
		return rows.Err()
	}})
	return n, err
}

// QueueRef names one tenant's queue.
type QueueRef struct {
	Tenant, Queue string
}

const leasesExpiredSQL = `SELECT DISTINCT q.tenant, q.name FROM cursors c INDEXED BY cursors_lease_expiry
	JOIN partitions p ON p.id = c.partition_id JOIN queues q ON q.id = p.queue_id
	WHERE ` + liveLeaseAt + `?1 AND c.lease_expires_at <= ?2
	ORDER BY q.tenant, q.name`

// LeasesExpiredBetween returns the queues holding a lease that expired in
// (after, upTo], so parked pops on them can be woken. The partial index on
// leased cursors by expiry (cursors_lease_expiry) makes this a read of the
// leases that expired in the range, not of every batch in flight.
func (s *Store) LeasesExpiredBetween(ctx context.Context, after, upTo time.Time) ([]QueueRef, error) {
	rows, err := s.r.QueryContext(ctx, leasesExpiredSQL, micros(after), micros(upTo))
	if err != nil {
		return nil, fmt.Errorf("find expired leases: %w", err)
	}
	defer rows.Close()
	var out []QueueRef
	for rows.Next() {
		var r QueueRef
		if err := rows.Scan(&r.Tenant, &r.Queue); err != nil {
			return nil, fmt.Errorf("scan expired lease: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
