package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/google/uuid"
)

// DefaultPartition is the partition a push goes to when it names none.
const DefaultPartition = "Default"

// QueueOptions are a queue's settings as /api/v1/configure carries them.
// Durations are in seconds except RetryDelay (milliseconds).
type QueueOptions struct {
	LeaseTime                 int64 // seconds a popped batch stays leased; 0 is read as 60
	RetryLimit                int64 // failed rounds before a message is dead-lettered
	RetryDelay                int64 // milliseconds; stored and echoed only
	MaxSize                   int64 // stored and echoed only, as Queen does
	TTL                       int64 // seconds; stored and echoed only
	DeadLetterQueue           bool  // stored and echoed only
	DLQAfterMaxRetries        bool  // stored and echoed only
	Priority                  int64 // orders queues in namespace pops, highest first
	DelayedProcessing         int64 // seconds a message stays hidden after its commit
	WindowBuffer              int64 // seconds a partition is held after its newest commit
	RetentionSeconds          int64
	CompletedRetentionSeconds int64
	RetentionEnabled          bool
	EncryptionEnabled         bool
	MaxWaitTimeSeconds        int64
	MaxBytes                  int64 // bound on stored segment bytes; 0 = none
}

// DefaultQueueOptions are the options of a queue created by a push, and what
// /configure falls back to for every option it omits.
func DefaultQueueOptions() QueueOptions {
	return QueueOptions{LeaseTime: 300, RetryLimit: 3, RetryDelay: 1000, TTL: 3600}
}

// Queue is a queue row.
type Queue struct {
	ID        int64
	UUID      string
	Tenant    string
	Name      string
	Namespace string
	Task      string
	Options   QueueOptions
	CreatedAt time.Time
}

// LeaseDuration is how long a pop of this queue leases its batch.
func (q *Queue) LeaseDuration() time.Duration {
	if q.Options.LeaseTime <= 0 {
		return 60 * time.Second
	}
	// Saturates rather than wrapping into a lease born expired.
	return time.Duration(secondsMicros(min(q.Options.LeaseTime, math.MaxInt64/int64(time.Second)))) * time.Microsecond
}

// Partition is a partition row.
type Partition struct {
	ID            int64
	UUID          string
	QueueID       int64
	Name          string
	LastOffset    int64
	LogStart      int64
	LastSegmentAt int64 // µs
	CreatedAt     time.Time
}

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

func scanQueue(r scanner) (*Queue, error) {
	var q Queue
	var created int64
	if err := r.Scan(q.dest(&created)...); err != nil {
		return nil, err
	}
	q.CreatedAt = fromMicros(created)
	return &q, nil
}

// dest is where the columns of queueColumns scan to; created_at goes to
// created, in µs.
func (q *Queue) dest(created *int64) []any {
	o := &q.Options
	return []any{&q.ID, &q.UUID, &q.Tenant, &q.Name, &q.Namespace, &q.Task, &o.LeaseTime, &o.RetryLimit,
		&o.RetryDelay, &o.MaxSize, &o.TTL, &o.DeadLetterQueue, &o.DLQAfterMaxRetries, &o.Priority,
		&o.DelayedProcessing, &o.WindowBuffer, &o.RetentionSeconds, &o.CompletedRetentionSeconds,
		&o.RetentionEnabled, &o.EncryptionEnabled, &o.MaxWaitTimeSeconds, &o.MaxBytes, created}
}

const partitionColumns = `id, uuid, queue_id, name, last_offset, log_start, last_segment_at, created_at`

func scanPartition(r scanner) (*Partition, error) {
	var p Partition
	var created int64
	if err := r.Scan(p.dest(&created)...); err != nil {
		return nil, err
	}
	p.CreatedAt = fromMicros(created)
	return &p, nil
}

// dest is where the columns of partitionColumns scan to; created_at goes
// to created, in µs.
func (p *Partition) dest(created *int64) []any {
	return []any{&p.ID, &p.UUID, &p.QueueID, &p.Name, &p.LastOffset, &p.LogStart, &p.LastSegmentAt, created}
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func getQueue(ctx context.Context, db querier, tenant, name string) (*Queue, error) {
	q, err := scanQueue(db.QueryRowContext(ctx, `SELECT `+queueColumns+` FROM queues WHERE tenant = ? AND name = ?`, tenant, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrQueueNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get queue %q: %w", name, err)
	}
	return q, nil
}

func getPartition(ctx context.Context, db querier, queueID int64, name string) (*Partition, error) {
	p, err := scanPartition(db.QueryRowContext(ctx, `SELECT `+partitionColumns+` FROM partitions WHERE queue_id = ? AND name = ?`, queueID, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrPartitionNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get partition %q: %w", name, err)
	}
	return p, nil
}

// Queue returns tenant's queue by name, or ErrQueueNotFound.
func (s *Store) Queue(ctx context.Context, tenant, name string) (*Queue, error) {
	return getQueue(ctx, s.r, tenant, name)
}

// Partitions returns the partitions of a queue in creation order.
func (s *Store) Partitions(ctx context.Context, queueID int64) ([]*Partition, error) {
	return queryPartitions(ctx, s.r, `SELECT `+partitionColumns+` FROM partitions WHERE queue_id = ? ORDER BY id`, queueID)
}

func queryPartitions(ctx context.Context, db querier, query string, args ...any) ([]*Partition, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list partitions: %w", err)
	}
	defer rows.Close()
	var out []*Partition
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
func (w *wtx) queue(tenant, name string, create bool) (*Queue, error) {
	k := queueKey{tenant, name}
	if q := w.queues[k]; q != nil {
		return q, nil
	}
	if q, ok := w.s.rows.queues[k]; ok && !w.stale {
		w.queues[k] = &q
		return &q, nil
	}
	q, err := getQueue(w.ctx, w, tenant, name)
	if errors.Is(err, ErrQueueNotFound) && create {
		ns, task := impliedNamespaceTask(name)
		q = &Queue{UUID: newUUID(), Tenant: tenant, Name: name, Namespace: ns, Task: task,
			Options: DefaultQueueOptions(), CreatedAt: fromMicros(micros(w.now))}
		q.ID, err = w.insertQueue(q)
	}
	if err != nil {
		return nil, err
	}
	w.queues[k] = q
	return q, nil
}

func (w *wtx) insertQueue(q *Queue) (int64, error) {
	o := q.Options
	res, err := w.ExecContext(w.ctx, `INSERT INTO queues (uuid, tenant, name, namespace, task, lease_time, retry_limit,
		retry_delay, max_size, ttl, dead_letter_queue, dlq_after_max_retries, priority, delayed_processing, window_buffer,
		retention_seconds, completed_retention_seconds, retention_enabled, encryption_enabled, max_wait_time_seconds,
		max_bytes, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		q.UUID, q.Tenant, q.Name, q.Namespace, q.Task, o.LeaseTime, o.RetryLimit, o.RetryDelay, o.MaxSize, o.TTL,
		o.DeadLetterQueue, o.DLQAfterMaxRetries, o.Priority, o.DelayedProcessing, o.WindowBuffer, o.RetentionSeconds,
		o.CompletedRetentionSeconds, o.RetentionEnabled, o.EncryptionEnabled, o.MaxWaitTimeSeconds, o.MaxBytes,
		micros(q.CreatedAt))
	if err != nil {
		return 0, fmt.Errorf("insert queue %q: %w", q.Name, err)
	}
	return res.LastInsertId()
}

// partition resolves a partition of q, creating it if create.
func (w *wtx) partition(q *Queue, name string, create bool) (*Partition, error) {
	k := partKey{q.ID, name}
	if p := w.partitions[k]; p != nil {
		return p, nil
	}
	if p, ok := w.s.rows.parts[k]; ok && !w.stale {
		w.partitions[k] = &p
		return &p, nil
	}
	p, err := getPartition(w.ctx, w, q.ID, name)
	if errors.Is(err, ErrPartitionNotFound) && create {
		p = &Partition{UUID: newUUID(), QueueID: q.ID, Name: name, LastOffset: -1, CreatedAt: fromMicros(micros(w.now))}
		var res sql.Result
		res, err = w.ExecContext(w.ctx, `INSERT INTO partitions (uuid, queue_id, name, created_at) VALUES (?, ?, ?, ?)`,
			p.UUID, q.ID, name, micros(p.CreatedAt))
		if err == nil {
			p.ID, err = res.LastInsertId()
		}
		if err != nil {
			return nil, fmt.Errorf("insert partition %q: %w", name, err)
		}
		delete(w.queueParts, q.ID)
	}
	if err != nil {
		return nil, err
	}
	w.partitions[k] = p
	return p, nil
}

// ConfigureRequest is an upsert of a queue with a full replace of its options.
type ConfigureRequest struct {
	Tenant    string
	Queue     string
	Namespace string
	Task      string
	Options   QueueOptions
}

// Configure creates or replaces a queue's settings and makes sure its
// Default partition exists.
func (s *Store) Configure(ctx context.Context, req ConfigureRequest) (*Queue, *Partition, error) {
	var q *Queue
	var p *Partition
	err := s.submit(ctx, &writeOp{apply: func(w *wtx) error {
		var err error
		q, err = w.queue(req.Tenant, req.Queue, false)
		switch {
		case errors.Is(err, ErrQueueNotFound):
			q = &Queue{UUID: newUUID(), Tenant: req.Tenant, Name: req.Queue, Namespace: req.Namespace, Task: req.Task,
				Options: req.Options, CreatedAt: fromMicros(micros(w.now))}
			if q.ID, err = w.insertQueue(q); err != nil {
				return err
			}
			w.queues[queueKey{req.Tenant, req.Queue}] = q
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
		}
		p, err = w.partition(q, DefaultPartition, true)
		return err
	}})
	if err != nil {
		return nil, nil, err
	}
	return q, p, nil
}

func listQueues(ctx context.Context, db querier, query string, args ...any) ([]*Queue, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	defer rows.Close()
	var out []*Queue
	for rows.Next() {
		q, err := scanQueue(rows)
		if err != nil {
			return nil, fmt.Errorf("scan queue: %w", err)
		}
		out = append(out, q)
	}
	return out, rows.Err()
}
