package store

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/comb-broker/comb/combtype"
	"strconv"
	"strings"
)

// RegisterStreamQuery creates the query, or updates its queues when the
// hash is unchanged. A changed hash is a conflict unless Reset, which
// deletes all of the query's state and keeps its id. Concurrent
// registrations of one name are serialized by the writer, so all of them
// get the same id.
func (s *Store) RegisterStreamQuery(ctx context.Context, tenant string, req combtype.StreamRegisterRequest) (combtype.StreamRegistration, error) {
	if req.Name == "" || req.SourceQueue == "" || req.ConfigHash == "" {
		return combtype.StreamRegistration{}, fmt.Errorf("%w: name, source queue and config hash are required", combtype.ErrInvalid)
	}
	var out combtype.StreamRegistration
	err := s.submit(ctx, &writeOp{isolated: true, apply: func(w *wtx) error {
		out = combtype.StreamRegistration{}
		now := micros(w.now)
		q, err := w.streamQueryByName(tenant, req.Name)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			q = &combtype.StreamQuery{ID: newUUID(), Tenant: tenant, Name: req.Name, SourceQueue: req.SourceQueue,
				SinkQueue: req.SinkQueue, ConfigHash: req.ConfigHash, CreatedAt: fromMicros(now), UpdatedAt: fromMicros(now)}
			if _, err := w.ExecContext(w.ctx, `INSERT INTO stream_queries (id, tenant, name, source_queue, sink_queue,
				config_hash, created_at, updated_at) VALUES (?, ?, ?, ?, NULLIF(?, ''), ?, ?, ?)`,
				q.ID, q.Tenant, q.Name, q.SourceQueue, q.SinkQueue, q.ConfigHash, now, now); err != nil {
				return fmt.Errorf("insert stream query: %w", err)
			}
			out.Query, out.Fresh = *q, true
			return nil
		case err != nil:
			return err
		}
		if q.ConfigHash != req.ConfigHash {
			if !req.Reset {
				out.Query, out.Conflict = *q, true
				return nil
			}
			if _, err := w.ExecContext(w.ctx, `DELETE FROM stream_state WHERE query_id = ?`, q.ID); err != nil {
				return fmt.Errorf("reset stream state: %w", err)
			}
			out.Reset = true
		}
		q.SourceQueue, q.SinkQueue, q.ConfigHash, q.UpdatedAt = req.SourceQueue, req.SinkQueue, req.ConfigHash, fromMicros(now)
		if _, err := w.ExecContext(w.ctx, `UPDATE stream_queries SET source_queue = ?, sink_queue = NULLIF(?, ''),
			config_hash = ?, updated_at = ? WHERE id = ?`, q.SourceQueue, q.SinkQueue, q.ConfigHash, now, q.ID); err != nil {
			return fmt.Errorf("update stream query: %w", err)
		}
		out.Query = *q
		return nil
	}})
	return out, err
}

const streamQueryColumns = `id, tenant, name, source_queue, COALESCE(sink_queue, ''), config_hash, created_at, updated_at`

func scanStreamQuery(r scanner) (*combtype.StreamQuery, error) {
	var q combtype.StreamQuery
	var created, updated int64
	if err := r.Scan(&q.ID, &q.Tenant, &q.Name, &q.SourceQueue, &q.SinkQueue, &q.ConfigHash, &created, &updated); err != nil {
		return nil, err
	}
	q.CreatedAt, q.UpdatedAt = fromMicros(created), fromMicros(updated)
	return &q, nil
}

func (w *wtx) streamQueryByName(tenant, name string) (*combtype.StreamQuery, error) {
	q, err := scanStreamQuery(w.QueryRowContext(w.ctx, `SELECT `+streamQueryColumns+` FROM stream_queries
		WHERE tenant = ? AND name = ?`, tenant, name))
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("load stream query: %w", err)
	}
	return q, err
}

// StreamState reads the shard (queryID, partitionID) of tenant's query in
// byte order of key. An unknown query or shard reads as empty.
func (s *Store) StreamState(ctx context.Context, tenant, queryID, partitionID string, f combtype.StateFilter) ([]combtype.StateRow, error) {
	var keys any // NULL = no key filter
	if len(f.Keys) > 0 {
		keys = jsonStrings(f.Keys)
	}
	var ripe any
	if f.RipeAtOrBefore != nil {
		ripe = *f.RipeAtOrBefore
	}
	// The prefix is a lower bound in SQL, which the primary key serves;
	// the scan stops at the first key past it, so wildcards and case
	// folding never enter.
	rows, err := s.r.QueryContext(ctx, `SELECT s.key, s.value, s.updated_at FROM stream_state s
		WHERE s.query_id = ?1 AND s.partition_id = ?2 AND s.key >= ?3
		AND EXISTS (SELECT 1 FROM stream_queries q WHERE q.id = ?1 AND q.tenant = ?4)
		AND (?5 IS NULL OR s.key IN (SELECT value FROM json_each(?5)))
		AND (?6 IS NULL OR s.window_end <= ?6)
		ORDER BY s.key`, queryID, partitionID, f.Prefix, tenant, keys, ripe)
	if err != nil {
		return nil, fmt.Errorf("read stream state: %w", err)
	}
	defer rows.Close()
	out := []combtype.StateRow{}
	for rows.Next() {
		var r combtype.StateRow
		var value string
		var updated int64
		if err := rows.Scan(&r.Key, &value, &updated); err != nil {
			return nil, fmt.Errorf("scan stream state: %w", err)
		}
		if !strings.HasPrefix(r.Key, f.Prefix) {
			break
		}
		r.Value, r.UpdatedAt = []byte(value), fromMicros(updated)
		out = append(out, r)
	}
	return out, rows.Err()
}

// cycleError refuses a cycle; its savepoint rolls everything back.
type cycleError struct{ err error }

func (e *cycleError) Error() string { return e.err.Error() }

// Cycle commits req all or nothing: state ops in order (later ops on a key
// win), then the ack with its lease check, then the pushes with push
// semantics (auto-created queues, dedup by transactionId). A refused cycle
// is reported in CycleResult.Err with nothing written; a returned error
// is a storage failure, also with nothing written. The writer runs one op
// at a time, so cycles on one shard are serialized.
func (s *Store) Cycle(ctx context.Context, tenant string, req combtype.CycleRequest) (combtype.CycleResult, error) {
	var res combtype.CycleResult
	size := itemsBytes(req.Push)
	for _, op := range req.StateOps {
		size += len(op.Key) + len(op.Value)
	}
	err := s.submit(ctx, &writeOp{isolated: true, bytes: size, apply: func(w *wtx) error {
		res = combtype.CycleResult{}
		return w.cycle(tenant, &req, &res)
	}})
	var refused *cycleError
	if errors.As(err, &refused) {
		return combtype.CycleResult{Err: refused.err}, nil
	}
	if err != nil {
		return combtype.CycleResult{}, err
	}
	return res, nil
}

func (w *wtx) cycle(tenant string, req *combtype.CycleRequest, res *combtype.CycleResult) error {
	q, err := scanStreamQuery(w.QueryRowContext(w.ctx, `SELECT `+streamQueryColumns+` FROM stream_queries
		WHERE id = ? AND tenant = ?`, req.QueryID, tenant))
	if errors.Is(err, sql.ErrNoRows) {
		return &cycleError{combtype.ErrQueryNotFound}
	}
	if err != nil {
		return fmt.Errorf("load stream query: %w", err)
	}
	res.SourceQueue = q.SourceQueue
	now := micros(w.now)
	for i := range req.StateOps {
		op := &req.StateOps[i]
		switch op.Type {
		case combtype.StateUpsert:
			value := op.Value
			if len(value) == 0 {
				value = []byte("{}")
			}
			end, ok := windowEnd(value)
			if !ok {
				return &cycleError{fmt.Errorf("%w: state_ops[%d].value is not valid JSON", combtype.ErrInvalid, i)}
			}
			if _, err := w.ExecContext(w.ctx, `INSERT INTO stream_state (query_id, partition_id, key, value, window_end, updated_at)
				VALUES (?, ?, ?, ?, ?, ?)
				ON CONFLICT (query_id, partition_id, key) DO UPDATE SET value = excluded.value,
					window_end = excluded.window_end, updated_at = excluded.updated_at`,
				q.ID, req.PartitionID, op.Key, string(value), end, now); err != nil {
				return fmt.Errorf("upsert stream state: %w", err)
			}
		case combtype.StateDelete:
			if _, err := w.ExecContext(w.ctx, `DELETE FROM stream_state WHERE query_id = ? AND partition_id = ? AND key = ?`,
				q.ID, req.PartitionID, op.Key); err != nil {
				return fmt.Errorf("delete stream state: %w", err)
			}
		default:
			return &cycleError{fmt.Errorf("%w: Unknown state_op type: %s", combtype.ErrInvalid, op.Type)}
		}
	}
	if req.Ack != nil {
		ack, err := w.cycleAck(tenant, req)
		if err != nil {
			return err
		}
		res.Ack = ack
	}
	// Pushes are staged last: staging is in memory, and nothing after it
	// can fail, so a refused cycle never leaves items behind.
	res.Pushes = make([]combtype.PushResult, len(req.Push))
	if err := w.push(tenant, req.Push, res.Pushes, false); err != nil {
		if errors.Is(err, combtype.ErrInvalid) {
			return &cycleError{err}
		}
		return err
	}
	res.StateOpsApplied = len(req.StateOps)
	return nil
}

// windowEnd is the numeric windowEnd of value when it is an object that
// has one. It is read in Go rather than with SQLite's JSON functions,
// which refuse values nested deeper than they allow. ok is false when
// value is not JSON.
func windowEnd(value []byte) (end sql.NullFloat64, ok bool) {
	if !json.Valid(value) {
		return end, false
	}
	value = bytes.TrimSpace(value)
	if len(value) == 0 || value[0] != '{' {
		return end, true
	}
	// A map, not a struct: struct fields match keys case-insensitively.
	var fields map[string]json.RawMessage
	if json.Unmarshal(value, &fields) != nil {
		return end, true
	}
	if raw := fields["windowEnd"]; len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		if f, err := strconv.ParseFloat(string(raw), 64); err == nil {
			end = sql.NullFloat64{Float64: f, Valid: true}
		}
	}
	return end, true
}

// cycleAck applies a cycle's ack to the cursor of (partition, group).
func (w *wtx) cycleAck(tenant string, req *combtype.CycleRequest) (*combtype.CycleAckResult, error) {
	a := req.Ack
	if a.TxnID == "" {
		return nil, &cycleError{fmt.Errorf("%w: ack.transactionId is required", combtype.ErrInvalid)}
	}
	status := cmp.Or(a.Status, combtype.AckCompleted)
	switch status {
	case combtype.AckCompleted, combtype.AckSuccess, combtype.AckFailed, combtype.AckDLQ:
	default:
		return nil, &cycleError{fmt.Errorf("%w: Unknown ack.status: %s", combtype.ErrInvalid, status)}
	}
	locs := make([]*located, 1)
	if err := locate(w.ctx, w, nil, tenant, []combtype.AckItem{{TxnID: a.TxnID, PartitionID: req.PartitionID}}, locs); err != nil {
		return nil, err
	}
	loc := locs[0]
	if loc == nil {
		return nil, &cycleError{combtype.ErrMessageNotFound}
	}
	group := cmp.Or(req.Group, combtype.QueueModeGroup)
	c, err := w.loadCursor(loc.p.ID, group)
	if err != nil {
		return nil, err
	}
	now := micros(w.now)
	if a.LeaseID != "" && (c == nil || !c.live(now) || c.leaseID.String != a.LeaseID) {
		return nil, &cycleError{combtype.ErrInvalidLease}
	}
	if c == nil {
		c = &cursor{committed: loc.p.LogStart - 1, created: true}
	}
	// A cycle acks past the cursor. One that acks at or behind it is a
	// replay of a committed cycle (a client retry whose reply was lost,
	// under a lease it kept): applying it again would fold the batch twice.
	if loc.offset <= c.committed {
		return nil, &cycleError{combtype.ErrAlreadyAcked}
	}
	out := &combtype.CycleAckResult{Count: a.Count}
	release := req.ReleaseLease
	if status == combtype.AckFailed || status == combtype.AckDLQ {
		if err := w.deadLetter(loc, group, cmp.Or(a.Error, "Streaming cycle reported failure"), 0); err != nil {
			return nil, err
		}
		out.DLQ, release = true, true
	}
	c.consume(loc.offset, now)
	if release {
		c.finishBatch()
		out.LeaseReleased = true
		w.touch(loc.q.Tenant, loc.q.Name)
	}
	if err := w.saveCursor(loc.p.ID, group, c); err != nil {
		return nil, err
	}
	return out, nil
}

// dropStreamsOf deletes the queries reading tenant's queue, with their
// state: a deleted source queue takes its streams with it.
func (w *wtx) dropStreamsOf(tenant, queue string) error {
	if _, err := w.ExecContext(w.ctx, `DELETE FROM stream_state WHERE query_id IN
		(SELECT id FROM stream_queries WHERE tenant = ? AND source_queue = ?)`, tenant, queue); err != nil {
		return fmt.Errorf("delete stream state: %w", err)
	}
	if _, err := w.ExecContext(w.ctx, `DELETE FROM stream_queries WHERE tenant = ? AND source_queue = ?`, tenant, queue); err != nil {
		return fmt.Errorf("delete stream queries: %w", err)
	}
	return nil
}
