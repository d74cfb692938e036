package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/comb-broker/comb/combtype"
)

// Traces are events a consumer files against a message it handles
// (msg.trace() in the SDKs), readable per message or by trace name. They
// live as long as their message: retention drops them with its segment.

// RecordTrace stores a trace event for a message of tenant and returns its
// id. A message that does not exist (or that retention removed) is
// ErrMessageNotFound.
func (s *Store) RecordTrace(ctx context.Context, tenant string, in combtype.TraceInput) (string, error) {
	id := newUUID()
	names := slices.Compact(slices.Sorted(slices.Values(in.Names)))
	err := s.submit(ctx, &writeOp{isolated: true, bytes: len(in.Data), apply: func(w *wtx) error {
		var partitionID int64
		err := w.QueryRowContext(w.ctx, `SELECT p.id FROM partitions p JOIN queues q ON q.id = p.queue_id
			WHERE p.uuid = ? AND q.tenant = ?`, in.PartitionID, tenant).Scan(&partitionID)
		if errors.Is(err, sql.ErrNoRows) {
			return combtype.ErrMessageNotFound
		}
		if err != nil {
			return fmt.Errorf("look up traced message: %w", err)
		}
		found, err := txnOffsets(w.ctx, w, partitionID, []string{in.TxnID})
		if err != nil {
			return fmt.Errorf("look up traced message: %w", err)
		}
		if _, ok := found[in.TxnID]; !ok {
			return combtype.ErrMessageNotFound
		}
		res, err := w.ExecContext(w.ctx, `INSERT INTO traces (uuid, tenant, partition_uuid, txn_id, group_name, event_type,
			data, worker_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, NULLIF(?, ''), ?)`,
			id, tenant, in.PartitionID, in.TxnID, cmp.Or(in.Group, combtype.QueueModeGroup), cmp.Or(in.EventType, "info"),
			string(in.Data), in.WorkerID, micros(w.now))
		if err != nil {
			return fmt.Errorf("insert trace: %w", err)
		}
		rowID, err := res.LastInsertId()
		if err != nil {
			return fmt.Errorf("insert trace: %w", err)
		}
		for _, name := range names {
			if _, err := w.ExecContext(w.ctx, `INSERT INTO trace_names (tenant, name, trace_id) VALUES (?, ?, ?)`,
				tenant, name, rowID); err != nil {
				return fmt.Errorf("insert trace name: %w", err)
			}
		}
		return nil
	}})
	if err != nil {
		return "", err
	}
	return id, nil
}

const traceColumns = `t.uuid, t.txn_id, t.partition_uuid, COALESCE(q.name, ''), COALESCE(p.name, ''), t.group_name,
	t.event_type, t.data, COALESCE(t.worker_id, ''), t.created_at,
	(SELECT json_group_array(name) FROM (SELECT n.name FROM trace_names n WHERE n.trace_id = t.id ORDER BY n.name))`

const traceJoins = ` LEFT JOIN partitions p ON p.uuid = t.partition_uuid LEFT JOIN queues q ON q.id = p.queue_id`

func (s *Store) queryTraces(ctx context.Context, query string, args ...any) ([]combtype.Trace, error) {
	rows, err := s.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list traces: %w", err)
	}
	defer rows.Close()
	out := []combtype.Trace{}
	size := 0
	for rows.Next() {
		var t combtype.Trace
		var data, names string
		var created int64
		if err := rows.Scan(&t.ID, &t.TxnID, &t.PartitionID, &t.Queue, &t.Partition, &t.Group, &t.EventType, &data,
			&t.WorkerID, &created, &names); err != nil {
			return nil, fmt.Errorf("scan trace: %w", err)
		}
		// A listing is bounded by bytes as well as by count, as a page of
		// dead letters is: sixty traces of a megabyte each made a reply
		// of 63 MB and took the server to 299 MB.
		if size += len(data) + len(names); len(out) > 0 && size > MaxListBytes {
			break
		}
		t.Data, t.CreatedAt = []byte(data), fromMicros(created)
		if err := json.Unmarshal([]byte(names), &t.Names); err != nil {
			return nil, fmt.Errorf("decode trace names: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// MessageTraces returns the traces of one message of tenant, oldest first,
// as many as MaxListBytes of data hold (one at least).
func (s *Store) MessageTraces(ctx context.Context, tenant, partitionID, txnID string) ([]combtype.Trace, error) {
	return s.queryTraces(ctx, `SELECT `+traceColumns+` FROM traces t`+traceJoins+`
		WHERE t.partition_uuid = ? AND t.txn_id = ? AND t.tenant = ? ORDER BY t.created_at, t.id`,
		partitionID, txnID, tenant)
}

// TracesByName returns a page of tenant's traces filed under name, oldest
// first, and how many there are in all. A page ends at limit traces or
// once MaxListBytes of data are in it (one trace at least); the caller
// pages on with offset.
func (s *Store) TracesByName(ctx context.Context, tenant, name string, limit, offset int) ([]combtype.Trace, int64, error) {
	var total int64
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM trace_names WHERE tenant = ? AND name = ?`,
		tenant, name).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count traces: %w", err)
	}
	traces, err := s.queryTraces(ctx, `SELECT `+traceColumns+` FROM trace_names tn JOIN traces t ON t.id = tn.trace_id`+traceJoins+`
		WHERE tn.tenant = ? AND tn.name = ? ORDER BY t.created_at, t.id LIMIT ? OFFSET ?`,
		tenant, name, max(limit, 0), max(offset, 0))
	if err != nil {
		return nil, 0, err
	}
	return traces, total, nil
}

// TraceNames returns a page of tenant's trace names, most recently used
// first, and how many names there are in all.
func (s *Store) TraceNames(ctx context.Context, tenant string, limit, offset int) ([]combtype.TraceName, int64, error) {
	var total int64
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(DISTINCT name) FROM trace_names WHERE tenant = ?`,
		tenant).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count trace names: %w", err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT tn.name, COUNT(*), COUNT(DISTINCT t.partition_uuid || ' ' || t.txn_id),
		MAX(t.created_at) FROM trace_names tn JOIN traces t ON t.id = tn.trace_id
		WHERE tn.tenant = ? GROUP BY tn.name ORDER BY MAX(t.created_at) DESC, tn.name LIMIT ? OFFSET ?`,
		tenant, max(limit, 0), max(offset, 0))
	if err != nil {
		return nil, 0, fmt.Errorf("list trace names: %w", err)
	}
	defer rows.Close()
	out := []combtype.TraceName{}
	for rows.Next() {
		var n combtype.TraceName
		var last int64
		if err := rows.Scan(&n.Name, &n.Traces, &n.Messages, &last); err != nil {
			return nil, 0, fmt.Errorf("scan trace name: %w", err)
		}
		n.LastSeen = fromMicros(last)
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("list trace names: %w", err)
	}
	return out, total, nil
}
