package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// forwarderColumns reads a forwarders row as scanForwarder scans it. The
// table is the one of comb's not declared STRICT (00008), so a value set
// by hand may be of any type: each is cast to its column's, as SQLite
// casts (text that is not a number is 0), so that one row edited so does
// not fail every listing and comb serve's start (by hand: batch = 'abc'
// made comb serve exit at start, and four routes answer 500).
const forwarderColumns = `CAST(tenant AS TEXT), CAST(name AS TEXT), CAST(direction AS TEXT), CAST(queue AS TEXT),
	CAST(upstream_url AS TEXT), CAST(upstream_queue AS TEXT), CAST(token AS TEXT), CAST(group_name AS TEXT),
	CAST(batch AS INTEGER), CAST(paused AS INTEGER) != 0, CAST(evicted AS INTEGER), CAST(COALESCE(pending_ack, '') AS TEXT),
	CAST(id_prefix AS TEXT), CAST(created_at AS INTEGER), CAST(updated_at AS INTEGER)`

func scanForwarder(r scanner) (*combtype.Forwarder, error) {
	f := &combtype.Forwarder{}
	var created, updated int64
	if err := r.Scan(&f.Tenant, &f.Name, &f.Direction, &f.Queue, &f.UpstreamURL, &f.UpstreamQueue, &f.Token, &f.Group,
		&f.Batch, &f.Paused, &f.Evicted, &f.PendingAck, &f.IDPrefix, &created, &updated); err != nil {
		return nil, err
	}
	f.CreatedAt, f.UpdatedAt = fromMicros(created), fromMicros(updated)
	return f, nil
}

// PutForwarder stores f. With replace an existing forwarder of that name
// gets f's definition and keeps its state (paused, evicted, pending ack),
// and its id prefix unless f names one; without, an existing name is
// ErrForwarderExists.
func (s *Store) PutForwarder(ctx context.Context, f *combtype.Forwarder, replace bool) error {
	return s.submit(ctx, &writeOp{isolated: true, apply: func(w *wtx) error {
		now := micros(w.now)
		var exists int
		err := w.QueryRowContext(w.ctx, `SELECT 1 FROM forwarders WHERE tenant = ? AND name = ?`, f.Tenant, f.Name).Scan(&exists)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			if err := w.checkForwarderRoom(); err != nil {
				return err
			}
			_, err = w.ExecContext(w.ctx, `INSERT INTO forwarders (tenant, name, direction, queue, upstream_url, upstream_queue,
				token, group_name, batch, paused, id_prefix, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				f.Tenant, f.Name, f.Direction, f.Queue, f.UpstreamURL, f.UpstreamQueue, f.Token, f.Group, f.Batch, f.Paused,
				f.IDPrefix, now, now)
		case err != nil:
		case !replace:
			return combtype.ErrForwarderExists
		default:
			_, err = w.ExecContext(w.ctx, `UPDATE forwarders SET direction = ?, queue = ?, upstream_url = ?, upstream_queue = ?,
				token = ?, group_name = ?, batch = ?, id_prefix = COALESCE(NULLIF(?, ''), id_prefix), updated_at = ?
				WHERE tenant = ? AND name = ?`,
				f.Direction, f.Queue, f.UpstreamURL, f.UpstreamQueue, f.Token, f.Group, f.Batch, f.IDPrefix, now, f.Tenant, f.Name)
		}
		if err != nil {
			return fmt.Errorf("store forwarder %q: %w", f.Name, err)
		}
		return nil
	}})
}

// Forwarders lists the forwarders of every tenant, by tenant then name.
func (s *Store) Forwarders(ctx context.Context) ([]*combtype.Forwarder, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+forwarderColumns+` FROM forwarders ORDER BY tenant, name`)
	if err != nil {
		return nil, fmt.Errorf("list forwarders: %w", err)
	}
	defer rows.Close()
	var out []*combtype.Forwarder
	for rows.Next() {
		f, err := scanForwarder(rows)
		if err != nil {
			return nil, fmt.Errorf("scan forwarder: %w", err)
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// Forwarder returns one forwarder.
func (s *Store) Forwarder(ctx context.Context, tenant, name string) (*combtype.Forwarder, error) {
	f, err := scanForwarder(s.r.QueryRowContext(ctx, `SELECT `+forwarderColumns+` FROM forwarders WHERE tenant = ? AND name = ?`,
		tenant, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, combtype.ErrForwarderNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("read forwarder %q: %w", name, err)
	}
	return f, nil
}

// updateForwarder runs one UPDATE on a forwarder row; no row is
// ErrForwarderNotFound.
func (s *Store) updateForwarder(ctx context.Context, tenant, name, set string, args ...any) error {
	return s.submit(ctx, &writeOp{isolated: true, apply: func(w *wtx) error {
		res, err := w.ExecContext(w.ctx, `UPDATE forwarders SET `+set+`, updated_at = ? WHERE tenant = ? AND name = ?`,
			append(args, micros(w.now), tenant, name)...)
		if err != nil {
			return fmt.Errorf("update forwarder %q: %w", name, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return combtype.ErrForwarderNotFound
		}
		return nil
	}})
}

// SetForwarderPaused pauses or resumes a forwarder.
func (s *Store) SetForwarderPaused(ctx context.Context, tenant, name string, paused bool) error {
	return s.updateForwarder(ctx, tenant, name, `paused = ?`, paused)
}

// AddForwarderEvicted adds n to a forwarder's count of messages evicted
// before they were forwarded.
func (s *Store) AddForwarderEvicted(ctx context.Context, tenant, name string, n int64) error {
	return s.updateForwarder(ctx, tenant, name, `evicted = evicted + ?`, n)
}

// SetForwarderPendingAck records ("" clears) the upstream ack a pull
// forwarder owes.
func (s *Store) SetForwarderPendingAck(ctx context.Context, tenant, name, ack string) error {
	return s.updateForwarder(ctx, tenant, name, `pending_ack = NULLIF(?, '')`, ack)
}

// SetForwarderIDPrefix sets a forwarder's id prefix.
func (s *Store) SetForwarderIDPrefix(ctx context.Context, tenant, name, prefix string) error {
	return s.updateForwarder(ctx, tenant, name, `id_prefix = ?`, prefix)
}

// InitSetting returns the stored value of key, storing value first when
// key has none: the first caller's value wins for good.
func (s *Store) InitSetting(ctx context.Context, key, value string) (string, error) {
	var out string
	err := s.submit(ctx, &writeOp{isolated: true, apply: func(w *wtx) error {
		if _, err := w.ExecContext(w.ctx, `INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (key) DO NOTHING`, key, value, micros(w.now)); err != nil {
			return fmt.Errorf("init setting %s: %w", key, err)
		}
		if err := w.QueryRowContext(w.ctx, `SELECT value FROM settings WHERE key = ?`, key).Scan(&out); err != nil {
			return fmt.Errorf("read setting %s: %w", key, err)
		}
		return nil
	}})
	return out, err
}

// DeleteForwarder removes a forwarder. Its consumer group's cursors stay:
// they are an ordinary group's, removed with the group routes.
func (s *Store) DeleteForwarder(ctx context.Context, tenant, name string) error {
	return s.submit(ctx, &writeOp{isolated: true, apply: func(w *wtx) error {
		res, err := w.ExecContext(w.ctx, `DELETE FROM forwarders WHERE tenant = ? AND name = ?`, tenant, name)
		if err != nil {
			return fmt.Errorf("delete forwarder %q: %w", name, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return combtype.ErrForwarderNotFound
		}
		return nil
	}})
}

// QueueNames lists the names of tenant's queues.
func (s *Store) QueueNames(ctx context.Context, tenant string) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT name FROM queues WHERE tenant = ? ORDER BY name`, tenant)
	if err != nil {
		return nil, fmt.Errorf("list queue names: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("scan queue name: %w", err)
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// GroupCommitted returns group's committed offset on each partition of
// tenant's queues it has a cursor on, by partition uuid.
func (s *Store) GroupCommitted(ctx context.Context, tenant, group string) (map[string]int64, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT p.uuid, `+committedExpr+` FROM `+groupPositionsIn(tenantQueues("?1"), "?2"),
		tenant, group)
	if err != nil {
		return nil, fmt.Errorf("read cursors of %q: %w", group, err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var id string
		var committed int64
		if err := rows.Scan(&id, &committed); err != nil {
			return nil, fmt.Errorf("scan cursor: %w", err)
		}
		out[id] = committed
	}
	return out, rows.Err()
}

// LogStart returns the first retained offset of a partition (by uuid):
// every offset below it was evicted.
func (s *Store) LogStart(ctx context.Context, partitionUUID string) (int64, error) {
	var start int64
	err := s.r.QueryRowContext(ctx, `SELECT log_start FROM partitions WHERE uuid = ?`, partitionUUID).Scan(&start)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, combtype.ErrPartitionNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("read log start: %w", err)
	}
	return start, nil
}

// ReleaseGroupLeases drops every lease group holds on tenant's queues,
// keeping the cursors where they are, and returns how many it dropped. It
// is for a group with a single consumer that is starting: a lease still
// held then is a leftover of its previous run (a crash, a pause), and
// waiting for it to expire would stall those partitions for a lease time.
func (s *Store) ReleaseGroupLeases(ctx context.Context, tenant, group string) (int64, error) {
	var n int64
	err := s.submit(ctx, &writeOp{isolated: true, apply: func(w *wtx) error {
		rows, err := w.QueryContext(w.ctx, `SELECT DISTINCT q.name FROM cursors c JOIN partitions p ON p.id = c.partition_id
			JOIN queues q ON q.id = p.queue_id WHERE q.tenant = ? AND c.group_name = ? AND c.lease_id IS NOT NULL`, tenant, group)
		if err != nil {
			return fmt.Errorf("find leases of %q: %w", group, err)
		}
		var queues []string
		for rows.Next() {
			var q string
			if err := rows.Scan(&q); err != nil {
				rows.Close()
				return fmt.Errorf("scan queue: %w", err)
			}
			queues = append(queues, q)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("find leases of %q: %w", group, err)
		}
		res, err := w.ExecContext(w.ctx, `UPDATE cursors SET lease_id = NULL, lease_from = NULL, lease_to = NULL,
			lease_expires_at = NULL WHERE group_name = ? AND lease_id IS NOT NULL AND partition_id IN
			(SELECT p.id FROM partitions p JOIN queues q ON q.id = p.queue_id WHERE q.tenant = ?)`, group, tenant)
		if err != nil {
			return fmt.Errorf("release leases of %q: %w", group, err)
		}
		n, _ = res.RowsAffected()
		for _, q := range queues {
			w.touch(tenant, q)
		}
		return nil
	}})
	return n, err
}

// Backlog is the number of retained messages of tenant's queue that group
// has not consumed, counting partitions it has no cursor on yet from where
// its subscription implies (implied.go), else their first retained offset. An unknown queue has none.
func (s *Store) Backlog(ctx context.Context, tenant, queue, group string) (int64, error) {
	var n int64
	err := s.r.QueryRowContext(ctx, `SELECT `+sumOf(groupLagExpr)+`
		FROM partitions p JOIN queues q ON q.id = p.queue_id
		LEFT JOIN cursors c ON c.partition_id = p.id AND c.group_name = ?1
		LEFT JOIN subscriptions s ON s.queue_id = p.queue_id AND s.group_name = ?1
		WHERE q.tenant = ?2 AND q.name = ?3`, group, tenant, queue).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("backlog of %q on %q: %w", group, queue, err)
	}
	return n, nil
}

// BacklogOldest is the commit time of the oldest message of tenant's queue
// that group has not consumed (partitions it has no cursor on yet count
// from where its subscription implies, else their first retained offset), to the segment: a segment is one
// commit. It is the zero time when nothing is pending.
func (s *Store) BacklogOldest(ctx context.Context, tenant, queue, group string) (time.Time, error) {
	var oldest sql.NullInt64
	err := s.r.QueryRowContext(ctx, `SELECT MIN(`+groupOldestExpr+`)
		FROM partitions p JOIN queues q ON q.id = p.queue_id
		LEFT JOIN cursors c ON c.partition_id = p.id AND c.group_name = ?1
		LEFT JOIN subscriptions s ON s.queue_id = p.queue_id AND s.group_name = ?1
		WHERE q.tenant = ?2 AND q.name = ?3`, group, tenant, queue).Scan(&oldest)
	if err != nil {
		return time.Time{}, fmt.Errorf("oldest pending of %q on %q: %w", group, queue, err)
	}
	if !oldest.Valid {
		return time.Time{}, nil
	}
	return fromMicros(oldest.Int64), nil
}

// checkForwarderRoom refuses a new forwarder when the database holds
// Options.MaxForwarders already. Each runs a worker for as long as the
// server does (about 40 KB resident, and its polls): 5,000 created by a
// client took a server to 235 MB.
func (w *wtx) checkForwarderRoom() error {
	if w.s.maxForwarders == 0 {
		return nil
	}
	n, err := w.countUpTo(`SELECT 1 FROM forwarders`, w.s.maxForwarders)
	if err != nil {
		return fmt.Errorf("count forwarders: %w", err)
	}
	if n >= w.s.maxForwarders {
		return fmt.Errorf("%w: the database holds %d forwarders, the most it may", combtype.ErrForwarderLimit, n)
	}
	return nil
}
