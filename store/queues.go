package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/comb-broker/comb/combtype"
)

const queueColumns = `id, uuid, tenant, name, namespace, task, lease_time, retry_limit, retry_delay, max_size, ttl,
	dead_letter_queue, dlq_after_max_retries, priority, delayed_processing, window_buffer, retention_seconds,
	completed_retention_seconds, retention_enabled, encryption_enabled, max_wait_time_seconds, max_bytes, created_at`

// qualifiedQueueColumns is queueColumns of a queues table named q, for
// joins.
var qualifiedQueueColumns = func() string {
	cols := strings.Split(queueColumns, ",")
	for i, c := range cols {
		cols[i] = "q." + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}()

type scanner interface{ Scan(dest ...any) error }

func scanQueue(r scanner) (*combtype.Queue, error) {
	var q combtype.Queue
	var created int64
	if err := r.Scan(queueDest(&q, &created)...); err != nil {
		return nil, err
	}
	q.CreatedAt = fromMicros(created)
	return &q, nil
}

// dest is where the columns of queueColumns scan to; created_at goes to
// created, in µs.
func queueDest(q *combtype.Queue, created *int64) []any {
	o := &q.Options
	return []any{&q.ID, &q.UUID, &q.Tenant, &q.Name, &q.Namespace, &q.Task, &o.LeaseTime, &o.RetryLimit,
		&o.RetryDelay, &o.MaxSize, &o.TTL, &o.DeadLetterQueue, &o.DLQAfterMaxRetries, &o.Priority,
		&o.DelayedProcessing, &o.WindowBuffer, &o.RetentionSeconds, &o.CompletedRetentionSeconds,
		&o.RetentionEnabled, &o.EncryptionEnabled, &o.MaxWaitTimeSeconds, &o.MaxBytes, created}
}

const partitionColumns = `id, uuid, queue_id, name, last_offset, log_start, last_segment_at, created_at`

func scanPartition(r scanner) (*combtype.Partition, error) {
	var p combtype.Partition
	var created int64
	if err := r.Scan(partitionDest(&p, &created)...); err != nil {
		return nil, err
	}
	p.CreatedAt = fromMicros(created)
	return &p, nil
}

// dest is where the columns of partitionColumns scan to; created_at goes
// to created, in µs.
func partitionDest(p *combtype.Partition, created *int64) []any {
	return []any{&p.ID, &p.UUID, &p.QueueID, &p.Name, &p.LastOffset, &p.LogStart, &p.LastSegmentAt, created}
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// column runs query and reads the one column of its rows.
func column[T any](ctx context.Context, db querier, query string, args ...any) ([]T, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func getQueue(ctx context.Context, db querier, tenant, name string) (*combtype.Queue, error) {
	q, err := scanQueue(db.QueryRowContext(ctx, `SELECT `+queueColumns+` FROM queues WHERE tenant = ? AND name = ?`, tenant, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, combtype.ErrQueueNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get queue %q: %w", name, err)
	}
	return q, nil
}

func getPartition(ctx context.Context, db querier, queueID int64, name string) (*combtype.Partition, error) {
	p, err := scanPartition(db.QueryRowContext(ctx, `SELECT `+partitionColumns+` FROM partitions WHERE queue_id = ? AND name = ?`, queueID, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, combtype.ErrPartitionNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get partition %q: %w", name, err)
	}
	return p, nil
}

// Queue returns tenant's queue by name, or ErrQueueNotFound.
func (s *Store) Queue(ctx context.Context, tenant, name string) (*combtype.Queue, error) {
	return getQueue(ctx, s.r, tenant, name)
}

// Partitions returns the partitions of a queue in creation order.
func (s *Store) Partitions(ctx context.Context, queueID int64) ([]*combtype.Partition, error) {
	return queryPartitions(ctx, s.r, `SELECT `+partitionColumns+` FROM partitions WHERE queue_id = ? ORDER BY id`, queueID)
}

func queryPartitions(ctx context.Context, db querier, query string, args ...any) ([]*combtype.Partition, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list partitions: %w", err)
	}
	defer rows.Close()
	var out []*combtype.Partition
	for rows.Next() {
		p, err := scanPartition(rows)
		if err != nil {
			return nil, fmt.Errorf("scan partition: %w", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// impliedNamespaceTask derives namespace and task from a queue name created
// by a push: the name up to the first dot, and the second dot segment.
func impliedNamespaceTask(name string) (string, string) {
	parts := strings.SplitN(name, ".", 3)
	ns, task := parts[0], ""
	if len(parts) > 1 {
		task = parts[1]
	}
	return ns, task
}

func newUUID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}

// queue resolves tenant's queue, creating it with default options if create.
func (w *wtx) queue(tenant, name string, create bool) (*combtype.Queue, error) {
	k := queueKey{tenant, name}
	if q := w.queues[k]; q != nil {
		return q, nil
	}
	if q, ok := w.s.rows.queues[k]; ok && !w.stale {
		w.queues[k] = &q
		return &q, nil
	}
	q, err := getQueue(w.ctx, w, tenant, name)
	if errors.Is(err, combtype.ErrQueueNotFound) && create {
		ns, task := impliedNamespaceTask(name)
		q = &combtype.Queue{UUID: newUUID(), Tenant: tenant, Name: name, Namespace: ns, Task: task,
			Options: combtype.DefaultQueueOptions(), CreatedAt: fromMicros(micros(w.now))}
		q.ID, err = w.insertQueue(q)
	}
	if err != nil {
		return nil, err
	}
	w.queues[k] = q
	return q, nil
}

func (w *wtx) insertQueue(q *combtype.Queue) (int64, error) {
	if err := w.reserveQueue(); err != nil {
		return 0, err
	}
	w.s.queuesChanged()
	o := q.Options
	res, err := w.ExecContext(w.ctx, `INSERT INTO queues (id, uuid, tenant, name, namespace, task, lease_time, retry_limit,
		retry_delay, max_size, ttl, dead_letter_queue, dlq_after_max_retries, priority, delayed_processing, window_buffer,
		retention_seconds, completed_retention_seconds, retention_enabled, encryption_enabled, max_wait_time_seconds,
		max_bytes, created_at) VALUES (MAX(?, (SELECT COALESCE(MAX(id), 0) + 1 FROM queues)),
		?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		w.s.nextIDs.queue, q.UUID, q.Tenant, q.Name, q.Namespace, q.Task, o.LeaseTime, o.RetryLimit, o.RetryDelay, o.MaxSize, o.TTL,
		o.DeadLetterQueue, o.DLQAfterMaxRetries, o.Priority, o.DelayedProcessing, o.WindowBuffer, o.RetentionSeconds,
		o.CompletedRetentionSeconds, o.RetentionEnabled, o.EncryptionEnabled, o.MaxWaitTimeSeconds, o.MaxBytes,
		micros(q.CreatedAt))
	if err != nil {
		return 0, fmt.Errorf("insert queue %q: %w", q.Name, err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, fmt.Errorf("insert queue %q: %w", q.Name, err)
	}
	w.s.nextIDs.queue = id + 1
	return id, nil
}

// partition resolves a partition of q, creating it if create.
func (w *wtx) partition(q *combtype.Queue, name string, create bool) (*combtype.Partition, error) {
	k := partKey{q.ID, name}
	if p := w.partitions[k]; p != nil {
		return p, nil
	}
	if p, ok := w.s.rows.parts[k]; ok && !w.stale {
		w.partitions[k] = &p
		return &p, nil
	}
	p, err := getPartition(w.ctx, w, q.ID, name)
	if errors.Is(err, combtype.ErrPartitionNotFound) && create {
		p = &combtype.Partition{UUID: newUUID(), QueueID: q.ID, Name: name, LastOffset: -1, CreatedAt: fromMicros(micros(w.now))}
		var res sql.Result
		res, err = w.ExecContext(w.ctx, `INSERT INTO partitions (id, uuid, queue_id, name, created_at)
			VALUES (MAX(?, (SELECT COALESCE(MAX(id), 0) + 1 FROM partitions)), ?, ?, ?, ?)`,
			w.s.nextIDs.partition, p.UUID, q.ID, name, micros(p.CreatedAt))
		if err == nil {
			p.ID, err = res.LastInsertId()
			w.s.nextIDs.partition = p.ID + 1
		}
		if err != nil {
			return nil, fmt.Errorf("insert partition %q: %w", name, err)
		}
		w.s.grown(q)
	}
	if err != nil {
		return nil, err
	}
	w.partitions[k] = p
	return p, nil
}

// Statements that resolve many partitions at once (resolvePartitions):
// the pairs [queue id, name] go as one JSON array.
const (
	partitionLookupNames = 1000
	nextPartitionIDSQL   = `SELECT COALESCE(MAX(id), 0) + 1 FROM partitions`
	insertPartitionsSQL  = `INSERT INTO partitions (id, uuid, queue_id, name, created_at)
		SELECT ?1 + j.key, json_extract(j.value, '$[0]'), json_extract(j.value, '$[1]'), json_extract(j.value, '$[2]'), ?2
		FROM json_each(?3) j`
)

var findPartitionsSQL = `SELECT ` + prefixed("p.", partitionColumns) + ` FROM json_each(?1) j
	JOIN partitions p ON p.queue_id = json_extract(j.value, '$[0]') AND p.name = json_extract(j.value, '$[1]')`

// partMiss is a partition push names that neither the transaction nor
// the row cache knows.
type partMiss struct {
	q    *combtype.Queue
	name string
}

// resolvePartitions finds or creates, in a few statements, the partitions
// of items that neither this transaction nor the row cache knows, so that
// push then finds each one known. One by one, a lookup and an insert
// each, a transaction naming 20,000 new partitions made 40,000
// statements in the writer, and every other client's write waited for
// them (1.2-1.9 s).
func (w *wtx) resolvePartitions(tenant string, items []combtype.PushItem) error {
	var misses []partMiss
	seen := map[partKey]bool{}
	for i := range items {
		it := &items[i]
		q, err := w.queue(tenant, it.Queue, true)
		if err != nil {
			return err
		}
		name := cmp.Or(it.Partition, combtype.DefaultPartition)
		k := partKey{q.ID, name}
		if seen[k] || w.partitions[k] != nil {
			continue
		}
		seen[k] = true
		if _, ok := w.s.rows.parts[k]; ok && !w.stale {
			continue
		}
		misses = append(misses, partMiss{q, name})
	}
	if len(misses) < 2 {
		return nil // partition() looks a single one up as cheaply
	}
	for start := 0; start < len(misses); start += partitionLookupNames {
		if err := w.findOrMakePartitions(misses[start:min(start+partitionLookupNames, len(misses))]); err != nil {
			return err
		}
	}
	return nil
}

// findOrMakePartitions reads those of misses that exist, and inserts the
// others in one statement, with ids in the order of misses.
func (w *wtx) findOrMakePartitions(misses []partMiss) error {
	pairs := make([][2]any, len(misses))
	for i, m := range misses {
		pairs[i] = [2]any{m.q.ID, m.name}
	}
	list, err := json.Marshal(pairs)
	if err != nil {
		return fmt.Errorf("look up partitions: %w", err)
	}
	found, err := queryPartitions(w.ctx, w, findPartitionsSQL, string(list))
	if err != nil {
		return err
	}
	for _, p := range found {
		w.partitions[partKey{p.QueueID, p.Name}] = p
	}
	if len(found) == len(misses) {
		return nil
	}
	var next int64
	if err := w.QueryRowContext(w.ctx, nextPartitionIDSQL).Scan(&next); err != nil {
		return fmt.Errorf("insert partitions: %w", err)
	}
	base := max(next, w.s.nextIDs.partition)
	created := fromMicros(micros(w.now))
	rows := make([][3]any, 0, len(misses)-len(found))
	var made []*combtype.Partition
	for _, m := range misses {
		if w.partitions[partKey{m.q.ID, m.name}] != nil {
			continue
		}
		p := &combtype.Partition{ID: base + int64(len(made)), UUID: newUUID(), QueueID: m.q.ID, Name: m.name, LastOffset: -1, CreatedAt: created}
		rows = append(rows, [3]any{p.UUID, m.q.ID, m.name})
		made = append(made, p)
	}
	if list, err = json.Marshal(rows); err != nil {
		return fmt.Errorf("insert partitions: %w", err)
	}
	if _, err := w.ExecContext(w.ctx, insertPartitionsSQL, base, micros(created), string(list)); err != nil {
		return fmt.Errorf("insert %d partitions: %w", len(made), err)
	}
	w.s.nextIDs.partition = base + int64(len(made))
	grew := map[int64]*combtype.Queue{}
	for _, p := range made {
		w.partitions[partKey{p.QueueID, p.Name}] = p
		grew[p.QueueID] = nil
	}
	for _, m := range misses {
		if q, ok := grew[m.q.ID]; ok && q == nil {
			grew[m.q.ID] = m.q
			w.s.grown(m.q)
		}
	}
	return nil
}

// Configure creates or replaces a queue's settings and makes sure its
// Default partition exists.
func (s *Store) Configure(ctx context.Context, tenant string, req combtype.ConfigureRequest) (*combtype.Queue, *combtype.Partition, error) {
	var q *combtype.Queue
	var p *combtype.Partition
	err := s.submit(ctx, &writeOp{apply: func(w *wtx) error {
		var err error
		q, err = w.queue(tenant, req.Queue, false)
		switch {
		case errors.Is(err, combtype.ErrQueueNotFound):
			q = &combtype.Queue{UUID: newUUID(), Tenant: tenant, Name: req.Queue, Namespace: req.Namespace, Task: req.Task,
				Options: req.Options, CreatedAt: fromMicros(micros(w.now))}
			if q.ID, err = w.insertQueue(q); err != nil {
				return err
			}
			w.queues[queueKey{tenant, req.Queue}] = q
		case err != nil:
			return err
		default:
			w.rowsChanged()
			o := req.Options
			if _, err := w.ExecContext(w.ctx, `UPDATE queues SET namespace = ?, task = ?, lease_time = ?, retry_limit = ?,
				retry_delay = ?, max_size = ?, ttl = ?, dead_letter_queue = ?, dlq_after_max_retries = ?, priority = ?,
				delayed_processing = ?, window_buffer = ?, retention_seconds = ?, completed_retention_seconds = ?,
				retention_enabled = ?, encryption_enabled = ?, max_wait_time_seconds = ?, max_bytes = ? WHERE id = ?`,
				req.Namespace, req.Task, o.LeaseTime, o.RetryLimit, o.RetryDelay, o.MaxSize, o.TTL, o.DeadLetterQueue,
				o.DLQAfterMaxRetries, o.Priority, o.DelayedProcessing, o.WindowBuffer, o.RetentionSeconds,
				o.CompletedRetentionSeconds, o.RetentionEnabled, o.EncryptionEnabled, o.MaxWaitTimeSeconds, o.MaxBytes,
				q.ID); err != nil {
				return fmt.Errorf("update queue %q: %w", req.Queue, err)
			}
			q.Namespace, q.Task, q.Options = req.Namespace, req.Task, req.Options
			// A shorter delay, window or retry delay makes held-back
			// messages due now: the pops parked on the queue look again.
			w.touch(tenant, req.Queue)
		}
		p, err = w.partition(q, combtype.DefaultPartition, true)
		return err
	}})
	if err != nil {
		return nil, nil, err
	}
	return q, p, nil
}

// filteredQueues lists the tenant's queues that f's namespace and task
// match, newest first: one page of them when f has a limit or an offset.
func filteredQueues(ctx context.Context, db querier, tenant string, f combtype.QueueFilter) ([]*combtype.Queue, error) {
	q := `SELECT ` + queueColumns + ` FROM queues WHERE tenant = ? AND (? = '' OR namespace = ?) AND (? = '' OR task = ?)
		ORDER BY created_at DESC, id DESC`
	args := []any{tenant, f.Namespace, f.Namespace, f.Task, f.Task}
	if f.Limit > 0 {
		q += ` LIMIT ? OFFSET ?`
		args = append(args, f.Limit, max(f.Offset, 0))
	} else if f.Offset > 0 {
		q += ` LIMIT -1 OFFSET ?`
		args = append(args, f.Offset)
	}
	return listQueues(ctx, db, q, args...)
}

func listQueues(ctx context.Context, db querier, query string, args ...any) ([]*combtype.Queue, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	defer rows.Close()
	var out []*combtype.Queue
	for rows.Next() {
		q, err := scanQueue(rows)
		if err != nil {
			return nil, fmt.Errorf("scan queue: %w", err)
		}
		out = append(out, q)
	}
	return out, rows.Err()
}
