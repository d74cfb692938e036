package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/comb-broker/comb/combtype"
)

const snapshotColumns = `id, name, group_name, queue_name, queue_uuid, labels, created_at, expires_at`

func scanSnapshot(r scanner) (int64, *combtype.Snapshot, error) {
	var id, created, expires int64
	var labels string
	sn := &combtype.Snapshot{}
	if err := r.Scan(&id, &sn.Name, &sn.Group, &sn.Queue, &sn.QueueUUID, &labels, &created, &expires); err != nil {
		return 0, nil, err
	}
	if err := json.Unmarshal([]byte(labels), &sn.Labels); err != nil {
		return 0, nil, fmt.Errorf("decode labels of snapshot %q: %w", sn.Name, err)
	}
	if sn.Labels == nil {
		sn.Labels = map[string]string{}
	}
	sn.CreatedAt, sn.ExpiresAt = fromMicros(created), fromMicros(expires)
	return id, sn, nil
}

func encodeLabels(labels map[string]string) (string, error) {
	if labels == nil {
		return "{}", nil
	}
	b, err := json.Marshal(labels)
	if err != nil {
		return "", fmt.Errorf("encode labels: %w", err)
	}
	return string(b), nil
}

// snapshotRow reads tenant's live snapshot name without its cursors, and
// its row id: ErrSnapshotNotFound when there is none.
func snapshotRow(ctx context.Context, db querier, tenant, name string, now int64) (int64, *combtype.Snapshot, error) {
	id, sn, err := scanSnapshot(db.QueryRowContext(ctx, `SELECT `+snapshotColumns+` FROM snapshots
		WHERE tenant = ? AND name = ? AND expires_at > ?`, tenant, name, now))
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil, fmt.Errorf("%w: %q", combtype.ErrSnapshotNotFound, name)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("read snapshot %q: %w", name, err)
	}
	return id, sn, nil
}

// snapshotCursorPage reads tenant's live snapshot name with one page of
// its cursors: at most limit of them, after the partition uuid after ("":
// from the first). The page follows snapshot_cursors' primary key
// (snapshot_id, partition_uuid), so it costs its own rows however many
// the snapshot holds; uuids are UUIDv7, so that is the partitions'
// creation order. Reading them all, as the routes did, took 4.9 s and
// hundreds of megabytes at a million partitions.
func snapshotCursorPage(ctx context.Context, db querier, tenant, name string, now int64, after string, limit int) (*combtype.Snapshot, combtype.PageInfo, error) {
	info := combtype.PageInfo{Total: -1}
	id, sn, err := snapshotRow(ctx, db, tenant, name, now)
	if err != nil {
		return nil, info, err
	}
	rows, err := db.QueryContext(ctx, `SELECT partition_name, partition_uuid, committed FROM snapshot_cursors
		WHERE snapshot_id = ? AND partition_uuid > ? ORDER BY partition_uuid LIMIT ?`, id, after, limit+1)
	if err != nil {
		return nil, info, fmt.Errorf("read cursors of snapshot %q: %w", name, err)
	}
	defer rows.Close()
	sn.Cursors = []combtype.SnapshotCursor{}
	for rows.Next() {
		var c combtype.SnapshotCursor
		if err := rows.Scan(&c.Partition, &c.PartitionID, &c.Committed); err != nil {
			return nil, info, fmt.Errorf("scan cursor of snapshot %q: %w", name, err)
		}
		sn.Cursors = append(sn.Cursors, c)
	}
	if err := rows.Err(); err != nil {
		return nil, info, fmt.Errorf("read cursors of snapshot %q: %w", name, err)
	}
	if len(sn.Cursors) > limit {
		sn.Cursors = sn.Cursors[:limit]
		info.More, info.Next = true, sn.Cursors[limit-1].PartitionID
		sn.CursorsNext = info.Next
	}
	return sn, info, nil
}

// snapshotAfter checks an After token of a snapshot's cursors: a
// partition uuid as the store writes it, since a page starts past it by
// text order and another spelling of the same uuid would start elsewhere.
func snapshotAfter(after string) error {
	if after == "" {
		return nil
	}
	if u, err := uuid.Parse(after); err != nil || u.String() != after {
		return fmt.Errorf("%w: after %q is not a position this listing handed out", combtype.ErrInvalid, after)
	}
	return nil
}

// SnapshotCursorPage returns tenant's live snapshot name with the page pg
// of its cursors in Cursors, in partition creation order, and where the
// next page starts (PageInfo.Next, also in CursorsNext). pg.Limit <= 0 is
// DefaultPageLimit and past MaxPageLimit is MaxPageLimit; pages follow
// After, an Offset is ErrInvalid (it would walk every cursor before it).
// Total is not counted (-1): counting a million cursors costs more than a
// page may. An unknown or expired name is ErrSnapshotNotFound.
func (s *Store) SnapshotCursorPage(ctx context.Context, tenant, name string, pg combtype.Page) (*combtype.Snapshot, combtype.PageInfo, error) {
	if pg.Offset > 0 {
		return nil, combtype.PageInfo{Total: -1}, fmt.Errorf("%w: offset is not supported on a snapshot's partitions: page on with after (pagination.next, or the next page in the Link header)", combtype.ErrInvalid)
	}
	if err := snapshotAfter(pg.After); err != nil {
		return nil, combtype.PageInfo{Total: -1}, err
	}
	limit := pg.Limit
	if limit <= 0 {
		limit = combtype.DefaultPageLimit
	}
	limit = min(limit, combtype.MaxPageLimit)
	// One read transaction, so the page belongs to the snapshot read
	// with it even if the name is deleted and taken again meanwhile.
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, combtype.PageInfo{Total: -1}, fmt.Errorf("snapshot page: %w", err)
	}
	defer tx.Rollback()
	return snapshotCursorPage(ctx, tx, tenant, name, micros(s.clock.Now()), pg.After, limit)
}

// CreateSnapshot captures the group's committed offset on every partition
// of the queue and returns it with the first page of its cursors
// (SnapshotCursorPage reads the next ones). A partition where the group
// has no cursor is captured at log_start-1, where the group would start.
// An expired snapshot of the same name is replaced; a live one is
// ErrSnapshotExists. A queue that does not exist is ErrSnapshotConflict.
//
// A queue of more partitions than one op of a seek moves (seekqueue.go)
// is captured that many partitions an op: in one op, a million held every
// other write 3-5 s. The snapshot is invisible until the last op (a row
// being created has created_at 0 and is long expired: no route, seek or
// retention floor reads it, and its name is taken), which sets its times
// from the first; each partition is captured as its op finds it, and the
// partitions made after the first op are not, as they would not have
// been by one op. A store closed in the middle drops the snapshot at its
// next open (dropUnfinishedSnapshots): its request did not succeed.
func (s *Store) CreateSnapshot(ctx context.Context, tenant string, req combtype.CreateSnapshotRequest) (*combtype.Snapshot, error) {
	if req.Name == "" {
		return nil, fmt.Errorf("%w: snapshot name is required", combtype.ErrInvalid)
	}
	if req.Group == "" {
		req.Group = combtype.QueueModeGroup
	}
	labels, err := encodeLabels(req.Labels)
	if err != nil {
		return nil, err
	}
	// Not between two ops of a seek or a group delete (seekqueue.go),
	// which would be captured half made.
	s.seeks.serial.Lock()
	defer s.seeks.serial.Unlock()
	var out *combtype.Snapshot
	var replaced int64
	var c *snapshotCapture
	err = s.submit(ctx, &writeOp{isolated: true, apply: func(w *wtx) error {
		replaced, c = 0, nil
		now := micros(w.now)
		expires := micros(req.ExpiresAt)
		if req.ExpiresAt.IsZero() {
			ttl := req.TTL
			if ttl == 0 {
				ttl = combtype.DefaultSnapshotTTL
			}
			expires = addMicros(now, ttl.Microseconds())
		}
		if expires <= now {
			return fmt.Errorf("%w: expireTime %s is not in the future", combtype.ErrInvalid, fromMicros(expires).Format(time.RFC3339))
		}
		q, err := getQueue(w.ctx, w.tx, tenant, req.Queue)
		if errors.Is(err, combtype.ErrQueueNotFound) {
			return fmt.Errorf("%w: queue %q does not exist, so there is nothing to snapshot", combtype.ErrSnapshotConflict, req.Queue)
		}
		if err != nil {
			return err
		}
		// An expired snapshot of the name is detached, not deleted here:
		// its cursors go in bounded ops (DeleteSnapshot).
		res, err := w.ExecContext(w.ctx, detachSnapshots+`tenant = ?2 AND name = ?3 AND expires_at <= ?4 AND `+liveOrExpiredSnapshot,
			detachedTenantPrefix, tenant, req.Name, now)
		if err != nil {
			return fmt.Errorf("replace expired snapshot: %w", err)
		}
		if replaced, err = res.RowsAffected(); err != nil {
			return fmt.Errorf("replace expired snapshot: %w", err)
		}
		large, err := largerThanAChunk(w.ctx, w, q.ID, s.chunkLimit())
		if err != nil {
			return err
		}
		created, expiresAt := now, expires
		if large {
			c = &snapshotCapture{tenant: tenant, name: req.Name, group: req.Group, queueID: q.ID, createdAt: now, expiresAt: expires}
			if err := w.QueryRowContext(w.ctx, `SELECT MAX(id) FROM partitions WHERE queue_id = ?`, q.ID).Scan(&c.max); err != nil {
				return fmt.Errorf("size queue %q: %w", q.Name, err)
			}
			created, expiresAt = 0, 1
		}
		if err := w.checkSnapshotRoom(now); err != nil {
			return err
		}
		var id int64
		err = w.QueryRowContext(w.ctx, `INSERT INTO snapshots (tenant, name, group_name, queue_uuid, queue_name, labels, created_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (tenant, name) DO NOTHING RETURNING id`,
			tenant, req.Name, req.Group, q.UUID, q.Name, labels, created, expiresAt).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: %q", combtype.ErrSnapshotExists, req.Name)
		}
		if err != nil {
			return fmt.Errorf("insert snapshot: %w", err)
		}
		// A snapshot row another program deleted leaves its cursors, and
		// SQLite gives the next snapshot that row's id: they would be
		// taken into it (and one of the same partition failed the insert
		// below, UNIQUE, 500). A new id owns no cursors yet.
		if _, err := w.ExecContext(w.ctx, `DELETE FROM snapshot_cursors WHERE snapshot_id = ?`, id); err != nil {
			return fmt.Errorf("clear cursors of a deleted snapshot: %w", err)
		}
		if c != nil {
			c.id = id
			c.after, _, err = w.captureChunk(c)
			return err
		}
		if _, err := w.ExecContext(w.ctx, `INSERT INTO snapshot_cursors (snapshot_id, partition_uuid, partition_name, committed)
			SELECT ?1, p.uuid, p.name, `+committedExpr+`
			FROM partitions p LEFT JOIN cursors c ON c.partition_id = p.id AND c.group_name = ?2
			LEFT JOIN subscriptions s ON s.queue_id = p.queue_id AND s.group_name = ?2
			WHERE p.queue_id = ?3`, id, req.Group, q.ID); err != nil {
			return fmt.Errorf("capture cursors: %w", err)
		}
		out, _, err = snapshotCursorPage(w.ctx, w.tx, tenant, req.Name, now, "", combtype.DefaultPageLimit)
		return err
	}})
	if err != nil {
		return nil, err
	}
	if replaced > 0 {
		if err := s.purgeSnapshots(context.WithoutCancel(ctx), DefaultDeleteKeyBatch); err != nil {
			return nil, err
		}
	}
	if c == nil {
		return out, nil
	}
	// Begun: the rest runs to its end whatever becomes of the request.
	return s.finishCapture(context.WithoutCancel(ctx), c)
}

// snapshotCapture is a snapshot being created in several ops.
type snapshotCapture struct {
	tenant, name, group  string
	id, queueID          int64
	after, max           int64 // partitions (after, max] are left to capture
	createdAt, expiresAt int64
}

// liveOrExpiredSnapshot is true of a snapshot row that is neither being
// created nor detached (both have created_at 0).
const liveOrExpiredSnapshot = `created_at > 0`

// checkSnapshotRoom refuses a new snapshot while the database holds
// Options.MaxSnapshots live ones already. Their count is what a queue
// delete detaches in its first write (and what an expiry sweep detaches,
// a batch a write): 1,000,000 snapshots of one queue held every push 9 s.
// Expired snapshots are not counted: they are gone for every read, and
// the next sweep takes them.
func (w *wtx) checkSnapshotRoom(now int64) error {
	if w.s.maxSnapshots == 0 {
		return nil
	}
	n, err := w.countUpTo(`SELECT 1 FROM snapshots WHERE expires_at > ?1`, w.s.maxSnapshots, now)
	if err != nil {
		return fmt.Errorf("count snapshots: %w", err)
	}
	if n >= w.s.maxSnapshots {
		return fmt.Errorf("%w: the database holds %d snapshots, the most it may", combtype.ErrSnapshotLimit, n)
	}
	return nil
}

// captureChunk captures the group's position on the next chunk of c's
// partitions and returns the last partition it took (c.after once its op
// commits); done is true when it found the last ones.
func (w *wtx) captureChunk(c *snapshotCapture) (after int64, done bool, err error) {
	n := w.s.chunkSize()
	var hi sql.NullInt64
	var parts int
	if err := w.QueryRowContext(w.ctx, `SELECT MAX(id), COUNT(*) FROM (SELECT id FROM partitions
		WHERE queue_id = ?1 AND id > ?2 AND id <= ?3 ORDER BY id LIMIT ?4)`, c.queueID, c.after, c.max, n).Scan(&hi, &parts); err != nil {
		return 0, false, fmt.Errorf("read partitions to capture: %w", err)
	}
	after = c.after
	if parts > 0 {
		if _, err := w.ExecContext(w.ctx, `INSERT INTO snapshot_cursors (snapshot_id, partition_uuid, partition_name, committed)
			SELECT ?1, p.uuid, p.name, `+committedExpr+`
			FROM partitions p LEFT JOIN cursors c ON c.partition_id = p.id AND c.group_name = ?2
			LEFT JOIN subscriptions s ON s.queue_id = p.queue_id AND s.group_name = ?2
			WHERE p.queue_id = ?3 AND p.id > ?4 AND p.id <= ?5`, c.id, c.group, c.queueID, c.after, hi.Int64); err != nil {
			return 0, false, fmt.Errorf("capture cursors: %w", err)
		}
		after = hi.Int64
	}
	return after, parts < n, nil
}

// finishCapture captures the rest of c an op at a time, then makes the
// snapshot live in the op that finds the last partitions. On failure the
// unfinished snapshot is deleted.
func (s *Store) finishCapture(ctx context.Context, c *snapshotCapture) (*combtype.Snapshot, error) {
	var out *combtype.Snapshot
	for out == nil {
		var after int64
		err := s.submit(ctx, &writeOp{isolated: true, apply: func(w *wtx) error {
			var done bool
			var err error
			after, done, err = w.captureChunk(c)
			if err != nil || !done {
				return err
			}
			// Only a queue delete moves a row being created (to the
			// detached tenant, with the queue).
			res, err := w.ExecContext(w.ctx, `UPDATE snapshots SET created_at = ?1, expires_at = ?2 WHERE id = ?3 AND tenant = ?4`,
				c.createdAt, c.expiresAt, c.id, c.tenant)
			if err != nil {
				return fmt.Errorf("finish snapshot: %w", err)
			}
			if n, err := res.RowsAffected(); err != nil {
				return fmt.Errorf("finish snapshot: %w", err)
			} else if n == 0 {
				return fmt.Errorf("%w: the queue of snapshot %q was deleted while it was taken", combtype.ErrSnapshotConflict, c.name)
			}
			out, _, err = snapshotCursorPage(w.ctx, w.tx, c.tenant, c.name, micros(w.now), "", combtype.DefaultPageLimit)
			return err
		}})
		if s.seekChunkDone != nil {
			s.seekChunkDone()
		}
		if err != nil {
			return nil, errors.Join(err, s.dropUnfinishedSnapshot(ctx, c.id))
		}
		c.after = after
	}
	return out, nil
}

// dropUnfinishedSnapshot deletes a snapshot whose capture failed.
func (s *Store) dropUnfinishedSnapshot(ctx context.Context, id int64) error {
	err := s.submit(ctx, &writeOp{isolated: true, apply: func(w *wtx) error {
		_, err := w.ExecContext(w.ctx, detachSnapshots+`id = ?2 AND created_at = 0 AND NOT `+detachedSnapshot,
			detachedTenantPrefix, id)
		return err
	}})
	if err != nil {
		return fmt.Errorf("drop unfinished snapshot: %w", err)
	}
	return s.purgeSnapshots(ctx, DefaultDeleteKeyBatch)
}

// dropUnfinishedSnapshots detaches, at open, the snapshots a previous run
// was creating when it stopped; ResumeDeletes purges them.
func (s *Store) dropUnfinishedSnapshots(ctx context.Context) error {
	var any bool
	if err := s.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM snapshots WHERE created_at = 0 AND NOT `+detachedSnapshot+`)`,
		detachedTenantPrefix).Scan(&any); err != nil {
		return fmt.Errorf("find unfinished snapshots: %w", err)
	}
	if !any {
		return nil
	}
	err := s.submit(ctx, &writeOp{apply: func(w *wtx) error {
		_, err := w.ExecContext(w.ctx, detachSnapshots+`created_at = 0 AND NOT `+detachedSnapshot, detachedTenantPrefix)
		return err
	}})
	if err != nil {
		return fmt.Errorf("drop unfinished snapshots: %w", err)
	}
	return nil
}

// Snapshot returns tenant's live snapshot name with the first page of its
// cursors (SnapshotCursorPage with no limit), or ErrSnapshotNotFound.
func (s *Store) Snapshot(ctx context.Context, tenant, name string) (*combtype.Snapshot, error) {
	sn, _, err := s.SnapshotCursorPage(ctx, tenant, name, combtype.Page{})
	return sn, err
}

// Snapshots lists tenant's live snapshots by name, optionally only those of
// one group and/or one queue, without their cursors.
func (s *Store) Snapshots(ctx context.Context, tenant, group, queue string) ([]combtype.Snapshot, error) {
	out, _, err := s.SnapshotPage(ctx, tenant, group, queue, combtype.Page{})
	return out, err
}

// liveSnapshots is the filter of Snapshots and SnapshotPage.
const liveSnapshots = `FROM snapshots
	WHERE tenant = ?1 AND expires_at > ?2 AND (?3 = '' OR group_name = ?3) AND (?4 = '' OR queue_name = ?4)`

// SnapshotPage is the page pg of Snapshots (Limit 0: all of them), and
// how many match. A client creating snapshots without end made the whole
// listing grow with them: 30,000 were a reply of 10 MB.
func (s *Store) SnapshotPage(ctx context.Context, tenant, group, queue string, pg combtype.Page) ([]combtype.Snapshot, combtype.PageInfo, error) {
	info := combtype.PageInfo{Total: -1}
	now := micros(s.clock.Now())
	limit := pg.Limit
	if limit <= 0 {
		limit = -1 // SQLite's "no limit"
	} else if err := s.r.QueryRowContext(ctx, `SELECT count(*) `+liveSnapshots, tenant, now, group, queue).Scan(&info.Total); err != nil {
		return nil, info, fmt.Errorf("count snapshots: %w", err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+snapshotColumns+` `+liveSnapshots+` ORDER BY name LIMIT ?5 OFFSET ?6`,
		tenant, now, group, queue, limit, pg.Offset)
	if err != nil {
		return nil, info, fmt.Errorf("list snapshots: %w", err)
	}
	defer rows.Close()
	out := []combtype.Snapshot{}
	for rows.Next() {
		_, sn, err := scanSnapshot(rows)
		if err != nil {
			return nil, info, fmt.Errorf("scan snapshot: %w", err)
		}
		out = append(out, *sn)
	}
	if err := rows.Err(); err != nil {
		return nil, info, fmt.Errorf("list snapshots: %w", err)
	}
	info.More = info.Total >= 0 && int64(pg.Offset+len(out)) < info.Total
	return out, info, nil
}

// UpdateSnapshot changes the labels and/or the expiry of a live snapshot,
// and returns it with the first page of its cursors.
func (s *Store) UpdateSnapshot(ctx context.Context, tenant, name string, u combtype.SnapshotUpdate) (*combtype.Snapshot, error) {
	setLabels, expiresAt := u.SetLabels, u.ExpiresAt
	enc, err := encodeLabels(u.Labels)
	if err != nil {
		return nil, err
	}
	var out *combtype.Snapshot
	err = s.submit(ctx, &writeOp{isolated: true, apply: func(w *wtx) error {
		now := micros(w.now)
		if expiresAt != nil && micros(*expiresAt) <= now {
			return fmt.Errorf("%w: expireTime %s is not in the future", combtype.ErrInvalid, expiresAt.UTC().Format(time.RFC3339))
		}
		var exp sql.NullInt64
		if expiresAt != nil {
			exp = sql.NullInt64{Int64: micros(*expiresAt), Valid: true}
		}
		res, err := w.ExecContext(w.ctx, `UPDATE snapshots SET labels = CASE WHEN ?1 THEN ?2 ELSE labels END,
			expires_at = COALESCE(?3, expires_at) WHERE tenant = ?4 AND name = ?5 AND expires_at > ?6`,
			setLabels, enc, exp, tenant, name, now)
		if err != nil {
			return fmt.Errorf("update snapshot: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("update snapshot: %w", err)
		} else if n == 0 {
			return fmt.Errorf("%w: %q", combtype.ErrSnapshotNotFound, name)
		}
		out, _, err = snapshotCursorPage(w.ctx, w.tx, tenant, name, now, "", combtype.DefaultPageLimit)
		return err
	}})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Deleting a snapshot: one op detaches it, bounded ops then delete its
// cursors. A snapshot has a cursor row for every partition its queue had,
// and deleting a million of them in one op held the writer (every push,
// pop and ack) for seconds. Detached, a snapshot is under a tenant no
// request can name and long expired, so no listing, seek or retention
// floor sees it, and its name is free at once; purgeSnapshotStep then
// deletes its cursors a batch per op, and the row with the last of them.
// One left by a crash is purged by ResumeDeletes.

// detachSnapshots detaches the snapshots its caller's WHERE clause
// selects; ?1 is detachedTenantPrefix. Each gets a tenant of its own, so
// that their names cannot meet.
const detachSnapshots = `UPDATE snapshots SET tenant = ?1 || id, created_at = 0, expires_at = 1 WHERE `

// detachedSnapshot is true of a detached snapshot row.
const detachedSnapshot = `(tenant >= ?1 AND tenant < ?1 || x'ff')`

// DeleteSnapshot removes tenant's snapshot name, or answers
// ErrSnapshotNotFound when there is no live one, and ErrSnapshotConflict
// while a seek of a large queue is applying it (seekqueue.go).
func (s *Store) DeleteSnapshot(ctx context.Context, tenant, name string) error {
	if err := s.detachSnapshot(ctx, tenant, name); err != nil {
		return err
	}
	// Gone for every client once detached; its cursors go on being
	// deleted if the caller leaves.
	return s.purgeSnapshots(context.WithoutCancel(ctx), DefaultDeleteKeyBatch)
}

// detachSnapshot is DeleteSnapshot's first op.
func (s *Store) detachSnapshot(ctx context.Context, tenant, name string) error {
	return s.submit(ctx, &writeOp{isolated: true, apply: func(w *wtx) error {
		var id int64
		err := w.QueryRowContext(w.ctx, `SELECT id FROM snapshots WHERE tenant = ? AND name = ? AND expires_at > ?`,
			tenant, name, micros(w.now)).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: %q", combtype.ErrSnapshotNotFound, name)
		}
		if err != nil {
			return fmt.Errorf("delete snapshot: %w", err)
		}
		if w.s.seeks.applying(id) {
			return fmt.Errorf("%w: a seek to snapshot %q is under way; delete it when the seek has ended", combtype.ErrSnapshotConflict, name)
		}
		if _, err := w.ExecContext(w.ctx, detachSnapshots+`id = ?2`, detachedTenantPrefix, id); err != nil {
			return fmt.Errorf("delete snapshot: %w", err)
		}
		return nil
	}})
}

// ExpireSnapshots deletes every snapshot whose expiry is at or before the
// store clock's now, across tenants, and returns how many it deleted. The
// retention service calls it on its schedule (hourly by default). A
// snapshot a seek of a large queue is applying (seekqueue.go) is kept
// until a sweep after the seek.
func (s *Store) ExpireSnapshots(ctx context.Context) (int, error) {
	return s.expireSnapshots(ctx, expireSnapshotBatch)
}

// expireSnapshotBatch is how many snapshots a write of the expiry sweep
// detaches: each is a row and two index entries rewritten, and 5,000 held
// a write 70 ms (200 ms with the pages not yet cached).
const expireSnapshotBatch = 1000

// expireSnapshots detaches the expired snapshots batch a write: a client
// making snapshots of a second's life piles up an hour of them between
// two sweeps, and detaching them in one write held every push for as
// long as it took.
func (s *Store) expireSnapshots(ctx context.Context, batch int) (int, error) {
	var n int
	for {
		var step int
		err := s.submit(ctx, &writeOp{apply: func(w *wtx) error {
			var err error
			step, err = w.expireSnapshotStep(batch)
			return err
		}})
		if err != nil {
			return n, err
		}
		if n += step; step < batch {
			break
		}
	}
	// Also what an earlier delete left: a seek was applying it, or the
	// store closed.
	return n, s.purgeSnapshots(ctx, DefaultDeleteKeyBatch)
}

// expireSnapshotStep detaches at most batch expired snapshots, the
// earliest to expire first, but those a seek under way is applying, and
// returns how many it detached.
func (w *wtx) expireSnapshotStep(batch int) (int, error) {
	held, err := json.Marshal(append([]int64{}, w.s.seeks.snapshots()...))
	if err != nil {
		return 0, fmt.Errorf("expire snapshots: %w", err)
	}
	// expires_at > 1 passes over the detached and unfinished snapshots
	// (created_at 0, expires_at 1) in the expiry index: each step would
	// read all those the steps before it detached.
	res, err := w.ExecContext(w.ctx, detachSnapshots+`id IN (SELECT id FROM snapshots
		WHERE expires_at > 1 AND expires_at <= ?2 AND `+liveOrExpiredSnapshot+`
		AND id NOT IN (SELECT value FROM json_each(?3)) ORDER BY expires_at LIMIT ?4)`,
		detachedTenantPrefix, micros(w.now), string(held), batch)
	if err != nil {
		return 0, fmt.Errorf("expire snapshots: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("expire snapshots: %w", err)
	}
	return int(n), nil
}

// purgeSnapshots deletes the detached snapshots, one bounded op at a
// time, but those a seek under way is applying.
func (s *Store) purgeSnapshots(ctx context.Context, batch int) error {
	return s.inSteps(ctx, "purge deleted snapshot", func(w *wtx) (bool, error) { return w.purgeSnapshotStep(batch) })
}

// purgeSnapshotStep deletes at most batch rows of detached snapshots:
// the cursors of the next of them in order, up to batch less the
// snapshots taken, and each snapshot whose last cursors went; done is
// true when none is left to purge. A snapshot a seek is applying (a seek
// reads its cursors a chunk at a time, by id) waits for the seek to end.
//
// A step takes many snapshots at once, each statement for all of them: a
// step a snapshot made 10,000 snapshots of a partition each 10,000
// writes, and three statements a snapshot held each write 150 ms.
func (w *wtx) purgeSnapshotStep(batch int) (done bool, err error) {
	held, err := json.Marshal(append([]int64{}, w.s.seeks.snapshots()...))
	if err != nil {
		return false, fmt.Errorf("purge snapshot: %w", err)
	}
	// In the order of the tenant index, which holds the detached rows
	// together: ordered by id, every step sorted all of them.
	want := max(batch/2, 1)
	ids, err := column[int64](w.ctx, w, `SELECT id FROM snapshots WHERE `+detachedSnapshot+`
		AND id NOT IN (SELECT value FROM json_each(?2)) ORDER BY tenant LIMIT ?3`, detachedTenantPrefix, string(held), want)
	if err != nil {
		return false, fmt.Errorf("find deleted snapshots: %w", err)
	}
	if len(ids) == 0 {
		return true, nil
	}
	limit := max(batch-len(ids), 1)
	cursors, err := w.deleteFirstCursors(ids, limit)
	if err != nil {
		return false, err
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return false, fmt.Errorf("purge snapshot: %w", err)
	}
	res, err := w.ExecContext(w.ctx, `DELETE FROM snapshots WHERE id IN (SELECT value FROM json_each(?1))
		AND NOT EXISTS (SELECT 1 FROM snapshot_cursors WHERE snapshot_id = snapshots.id)`, string(list))
	if err != nil {
		return false, fmt.Errorf("delete snapshots: %w", err)
	}
	gone, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("delete snapshots: %w", err)
	}
	return len(ids) < want && cursors < int64(limit) && gone == int64(len(ids)), nil
}

// deleteFirstCursors deletes the first limit cursors, in key order, of
// the snapshots in list (a JSON array of ids), and returns how many it
// deleted. The row past them is found first and the rows before it
// deleted by ranges of the primary key: a DELETE naming the rows, (id,
// partition) IN (...), reads every cursor of each snapshot in list to
// match them, a million a step for a snapshot of a million partitions.
func (w *wtx) deleteFirstCursors(ids []int64, limit int) (int64, error) {
	list, err := json.Marshal(ids)
	if err != nil {
		return 0, fmt.Errorf("purge snapshot: %w", err)
	}
	var lastID int64
	var lastPart string
	err = w.QueryRowContext(w.ctx, `SELECT snapshot_id, partition_uuid FROM snapshot_cursors
		WHERE snapshot_id IN (SELECT value FROM json_each(?1)) ORDER BY snapshot_id, partition_uuid LIMIT 1 OFFSET ?2`,
		string(list), limit-1).Scan(&lastID, &lastPart)
	stmts := []struct {
		sql  string
		args []any
	}{{`DELETE FROM snapshot_cursors WHERE snapshot_id IN (SELECT value FROM json_each(?1))`, []any{string(list)}}}
	switch {
	case errors.Is(err, sql.ErrNoRows): // fewer than limit: all of them
	case err != nil:
		return 0, fmt.Errorf("find snapshot cursors: %w", err)
	default:
		// The snapshots before the last one's in key order (by id) are
		// wholly taken. Compared in SQL (snapshot_id < the last), the
		// last one's cursors were all read to be passed over.
		before := slices.DeleteFunc(slices.Clone(ids), func(id int64) bool { return id >= lastID })
		blist, err := json.Marshal(before)
		if err != nil {
			return 0, fmt.Errorf("purge snapshot: %w", err)
		}
		stmts = []struct {
			sql  string
			args []any
		}{
			{`DELETE FROM snapshot_cursors WHERE snapshot_id IN (SELECT value FROM json_each(?1))`, []any{string(blist)}},
			{`DELETE FROM snapshot_cursors WHERE snapshot_id = ?1 AND partition_uuid <= ?2`, []any{lastID, lastPart}},
		}
	}
	var n int64
	for _, st := range stmts {
		res, err := w.ExecContext(w.ctx, st.sql, st.args...)
		if err != nil {
			return n, fmt.Errorf("delete snapshot cursors: %w", err)
		}
		k, err := res.RowsAffected()
		if err != nil {
			return n, fmt.Errorf("delete snapshot cursors: %w", err)
		}
		n += k
	}
	return n, nil
}

// SnapshotFloor is the lowest offset of a partition that a live snapshot
// still needs: the minimum over live snapshots of captured committed + 1.
// ok is false when no live snapshot covers the partition. Retention that
// honours snapshots keeps every segment holding an offset >= floor.
// Partitions created after a snapshot are not covered by it: seeking to it
// replays them from whatever is retained.
func (s *Store) SnapshotFloor(ctx context.Context, partitionID int64) (floor int64, ok bool, err error) {
	return snapshotFloor(ctx, s.rdb, partitionID, micros(s.clock.Now()))
}

// snapshotFloor is SnapshotFloor for use inside a writer operation (pass
// w.ctx, w.tx and the op's now in microseconds).
func snapshotFloor(ctx context.Context, db querier, partitionID, now int64) (int64, bool, error) {
	var floor sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT MIN(sc.committed) + 1 FROM snapshot_cursors sc
		JOIN snapshots sn ON sn.id = sc.snapshot_id
		WHERE sc.partition_uuid = (SELECT uuid FROM partitions WHERE id = ?) AND sn.expires_at > ?`,
		partitionID, now).Scan(&floor); err != nil {
		return 0, false, fmt.Errorf("find snapshot floor: %w", err)
	}
	return floor.Int64, floor.Valid, nil
}
