package store

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/comb-broker/comb/combtype"
)

// RegisterStreamQuery creates the query, or updates its queues when the
// hash is unchanged. A changed hash is a conflict unless Reset, which
// deletes all of the query's state and keeps its id: from its write on
// the query reads and writes state under a new key, and the old key's
// rows are deleted a bounded batch a write before it returns. Concurrent
// registrations of one name are serialized by the writer, so all of them
// get the same id.
func (s *Store) RegisterStreamQuery(ctx context.Context, tenant string, req combtype.StreamRegisterRequest) (combtype.StreamRegistration, error) {
	return s.registerStreamQuery(ctx, tenant, req, purgeRowBatch, purgeRowBytes)
}

func (s *Store) registerStreamQuery(ctx context.Context, tenant string, req combtype.StreamRegisterRequest, batch, batchBytes int) (combtype.StreamRegistration, error) {
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
			if err := w.checkStreamQueryRoom(); err != nil {
				return err
			}
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
			// The state is left under its old key for the purge, and the
			// query's state starts under a new one: deleted here, a million
			// rows held the writer 3.6 s.
			if err := w.detachStreamState(`id = ?1`, q.ID); err != nil {
				return err
			}
			if _, err := w.ExecContext(w.ctx, `UPDATE stream_queries SET state_id = ? WHERE id = ?`, newUUID(), q.ID); err != nil {
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
	if err == nil && out.Reset {
		// The old state goes before the reply, a bounded write at a time;
		// once begun, whatever becomes of the request.
		if err := s.purgeStreams(context.WithoutCancel(ctx), batch, batchBytes); err != nil {
			return out, err
		}
	}
	return out, err
}

// checkStreamQueryRoom refuses a new streaming query while the database
// holds Options.MaxStreamQueries already. A queue delete deletes the
// queries reading it in its first write: a million of them held every
// push 9 s.
func (w *wtx) checkStreamQueryRoom() error {
	if w.s.maxStreamQueries == 0 {
		return nil
	}
	n, err := w.countUpTo(`SELECT 1 FROM stream_queries`, w.s.maxStreamQueries)
	if err != nil {
		return fmt.Errorf("count stream queries: %w", err)
	}
	if n >= w.s.maxStreamQueries {
		return fmt.Errorf("%w: the database holds %d streaming queries, the most it may", combtype.ErrStreamQueryLimit, n)
	}
	return nil
}

// StreamQueryPage lists tenant's streaming queries by name, page pg
// (Limit 0: all of them), and how many there are.
func (s *Store) StreamQueryPage(ctx context.Context, tenant string, pg combtype.Page) ([]combtype.StreamQuery, combtype.PageInfo, error) {
	info := combtype.PageInfo{Total: -1}
	limit := pg.Limit
	if limit <= 0 {
		limit = -1 // SQLite's "no limit"
	} else if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM stream_queries WHERE tenant = ?`, tenant).Scan(&info.Total); err != nil {
		return nil, info, fmt.Errorf("count stream queries: %w", err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+streamQueryColumns+` FROM stream_queries WHERE tenant = ?
		ORDER BY name LIMIT ? OFFSET ?`, tenant, limit, max(pg.Offset, 0))
	if err != nil {
		return nil, info, fmt.Errorf("list stream queries: %w", err)
	}
	defer rows.Close()
	out := []combtype.StreamQuery{}
	for rows.Next() {
		q, err := scanStreamQuery(rows)
		if err != nil {
			return nil, info, fmt.Errorf("list stream queries: %w", err)
		}
		out = append(out, *q)
	}
	if err := rows.Err(); err != nil {
		return nil, info, fmt.Errorf("list stream queries: %w", err)
	}
	info.More = info.Total >= 0 && int64(max(pg.Offset, 0)+len(out)) < info.Total
	return out, info, nil
}

// DeleteStreamQuery deletes tenant's streaming query name, and its state
// in bounded writes after it (as a reset does) before it returns; it
// returns the query deleted, or combtype.ErrQueryNotFound. A worker still
// running it gets ErrQueryNotFound from its next cycle, and registering
// the name again makes a new query with no state. Queen has no such
// route: its queries go only with their source queue, and a client that
// named queries without end (a process id in the name) had no other way
// back under Options.MaxStreamQueries.
func (s *Store) DeleteStreamQuery(ctx context.Context, tenant, name string) (combtype.StreamQuery, error) {
	var out combtype.StreamQuery
	err := s.submit(ctx, &writeOp{isolated: true, apply: func(w *wtx) error {
		q, err := w.streamQueryByName(tenant, name)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: %q", combtype.ErrQueryNotFound, name)
		}
		if err != nil {
			return err
		}
		if err := w.detachStreamState(`id = ?1`, q.ID); err != nil {
			return err
		}
		if _, err := w.ExecContext(w.ctx, `DELETE FROM stream_queries WHERE id = ?`, q.ID); err != nil {
			return fmt.Errorf("delete stream query: %w", err)
		}
		out = *q
		return nil
	}})
	if err != nil {
		return combtype.StreamQuery{}, err
	}
	// Once begun, whatever becomes of the request.
	if err := s.purgeStreams(context.WithoutCancel(ctx), purgeRowBatch, purgeRowBytes); err != nil {
		return out, err
	}
	return out, nil
}

// stateKey is the key of a stream_queries row's state rows.
const stateKey = `coalesce(state_id, id)`

// detachStreamState leaves the state of the queries matching where (over
// stream_queries, with args) to the purge: their state keys go to
// stream_state_detached, whose rows no read reaches (reads go through a
// live query's key).
func (w *wtx) detachStreamState(where string, args ...any) error {
	// Only keys with state: a key without is a purge step for nothing.
	if _, err := w.ExecContext(w.ctx, `INSERT OR IGNORE INTO stream_state_detached (state_key)
		SELECT `+stateKey+` FROM stream_queries q WHERE (`+where+`)
		AND EXISTS (SELECT 1 FROM stream_state s WHERE s.query_id = `+stateKey+`)`, args...); err != nil {
		return fmt.Errorf("detach stream state: %w", err)
	}
	return nil
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
	out := []combtype.StateRow{}
	err := s.StreamStateEach(ctx, tenant, queryID, partitionID, f, func(r combtype.StateRow) error {
		r.Value = slices.Clone(r.Value)
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// StreamStateEach is StreamState a row at a time, for a reply written as
// it is read: a shard's rows are not held at once. A row's Value is valid
// only until fn returns. It stops at fn's first error and returns it.
//
// The rows are read a page at a time (statePageBytes), each page from a
// read snapshot of its own, and fn is called with no read open: fn writes
// to a client, and a client that does not read would otherwise keep one
// of the few reader connections for as long as it pleased (four such
// clients of a 12 MB shard stopped every read of the server, pops and
// /health included, for as long as they stayed). A shard that fits one
// page is read from one snapshot; a larger one is read in key order, so
// a cycle writing it meanwhile (the SDKs run one at a time per shard) can
// show in the pages after the write.
func (s *Store) StreamStateEach(ctx context.Context, tenant, queryID, partitionID string, f combtype.StateFilter, fn func(combtype.StateRow) error) error {
	var keys any // NULL = no key filter
	if len(f.Keys) > 0 {
		keys = jsonStrings(f.Keys)
	}
	var ripe any
	if f.RipeAtOrBefore != nil {
		ripe = *f.RipeAtOrBefore
	}
	var newest int64
	var page []combtype.StateRow
	var after any // NULL: from the prefix on
	for {
		var more bool
		var err error
		page, more, err = s.statePage(ctx, page[:0], tenant, queryID, partitionID, f.Prefix, keys, ripe, after)
		if err != nil {
			return err
		}
		for _, r := range page {
			newest = max(newest, micros(r.UpdatedAt))
			if err := fn(r); err != nil {
				return err
			}
		}
		if !more {
			break
		}
		after = page[len(page)-1].Key
	}
	// Taken after the read: a value written later than this was not in it.
	s.reads.served(shardKey{queryID, partitionID}, max(micros(s.clock.Now()), newest))
	return nil
}

// statePageBytes is about how many bytes of values a page of a state read
// holds: past it, the page ends with the row that crossed it.
const statePageBytes = 1 << 20

// statePage reads into page the rows of a state read after the key
// after (NULL: from prefix on), up to statePageBytes, and reports whether
// rows may follow. Its read is over when it returns.
func (s *Store) statePage(ctx context.Context, page []combtype.StateRow, tenant, queryID, partitionID, prefix string,
	keys, ripe, after any) ([]combtype.StateRow, bool, error) {
	// The prefix is a lower bound in SQL, which the primary key serves;
	// the scan stops at the first key past it, so wildcards and case
	// folding never enter.
	rows, err := s.r.QueryContext(ctx, `SELECT s.key, s.value, s.updated_at FROM stream_state s
		WHERE s.query_id = (SELECT `+stateKey+` FROM stream_queries WHERE id = ?1 AND tenant = ?4)
		AND s.partition_id = ?2 AND s.key >= ?3
		AND (?5 IS NULL OR s.key IN (SELECT value FROM json_each(?5)))
		AND (?6 IS NULL OR s.window_end <= ?6)
		AND (?7 IS NULL OR s.key > ?7)
		ORDER BY s.key`, queryID, partitionID, prefix, tenant, keys, ripe, after)
	if err != nil {
		return nil, false, fmt.Errorf("read stream state: %w", err)
	}
	defer rows.Close()
	size := 0
	for rows.Next() {
		var r combtype.StateRow
		var updated int64
		if err := rows.Scan(&r.Key, &r.Value, &updated); err != nil {
			return nil, false, fmt.Errorf("scan stream state: %w", err)
		}
		if !strings.HasPrefix(r.Key, prefix) {
			return page, false, nil
		}
		r.UpdatedAt = fromMicros(updated)
		page = append(page, r)
		if size += len(r.Key) + len(r.Value); size >= statePageBytes {
			return page, true, nil
		}
	}
	return page, false, rows.Err()
}

// shardKey names a state shard.
type shardKey struct{ query, partition string }

// shardReads remembers, per state shard, a time no earlier than the
// update time of every value the shard's readers have been served: the
// end of the latest read, or the newest value it returned if the clock
// stepped back. A cycle deletes only keys its client read (the SDKs delete
// windows and sessions they loaded), so a key it deletes that was updated
// after this time was rewritten since that client read it: the cycle was
// computed from state that is gone. Losing an entry (a restart, pruning)
// only loses that check; the entry never makes a fresh cycle look stale.
type shardReads struct {
	mu sync.Mutex
	at map[shardKey]int64
}

// maxShardReads bounds shardReads; past it, entries older than
// shardReadTTL go. A cycle reaches the server well within the SDKs' 30 s
// request timeout and its retries after its state read.
const (
	maxShardReads = 4096
	shardReadTTL  = int64(10 * time.Minute / time.Microsecond)
)

func (r *shardReads) served(k shardKey, at int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.at == nil {
		r.at = map[shardKey]int64{}
	}
	if len(r.at) >= maxShardReads {
		for old, t := range r.at {
			if t < at-shardReadTTL {
				delete(r.at, old)
			}
		}
		if len(r.at) >= maxShardReads {
			clear(r.at)
		}
	}
	r.at[k] = max(r.at[k], at)
}

// last is the shard's read time; ok is false when none is known.
func (r *shardReads) last(k shardKey) (at int64, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok = r.at[k]
	return at, ok
}

// cycleError refuses a cycle; its savepoint rolls everything back.
type cycleError struct{ err error }

func (e *cycleError) Error() string { return e.err.Error() }

// Cycle commits req all or nothing: state ops in order (later ops on a key
// win), then the ack under the ack rule (admit), then the pushes with push
// semantics (auto-created queues, dedup by transactionId). A refused cycle
// is reported in CycleResult.Err with nothing written; a returned error
// is a storage failure, also with nothing written. The writer runs one op
// at a time, so cycles on one shard are serialized.
//
// Serializing is not enough for exactly-once: a runner reads the shard,
// folds, and commits later, and its idle flush does the same on its own
// timer, so two cycles can be computed from one read, each closing (emit
// and delete) the same window. A cycle with an ack is guarded by its
// lease: while a batch is leased nothing else may change the shard, and a
// replay is refused. A cycle without an ack has no lease, so it is
// skipped, with nothing written, when the (partition, group) has a batch
// in flight (that batch's cycle read the shard and will close what is
// due), or when a key it deletes is gone or was rewritten after the
// shard's latest read (its emits are already out, or were computed from
// state that is gone). The SDKs delete only keys they read, and their
// flush reads again on its next tick, so a skipped flush loses nothing.
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
	var key string
	if err := w.QueryRowContext(w.ctx, `SELECT `+stateKey+` FROM stream_queries WHERE id = ?`, q.ID).Scan(&key); err != nil {
		return fmt.Errorf("load stream query: %w", err)
	}
	for _, op := range req.StateOps {
		if op.Type != combtype.StateUpsert && op.Type != combtype.StateDelete {
			return &cycleError{fmt.Errorf("%w: Unknown state_op type: %s", combtype.ErrInvalid, op.Type)}
		}
	}
	if req.Ack == nil {
		skip, err := w.flushSkip(tenant, key, req)
		if err != nil || skip != "" {
			res.Skipped = skip
			return err
		}
	}
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
			// Bound as bytes and stored as text: a string of them was a copy
			// per op, garbage the size of the cycle.
			if _, err := w.ExecContext(w.ctx, `INSERT INTO stream_state (query_id, partition_id, key, value, window_end, updated_at)
				VALUES (?, ?, ?, CAST(? AS TEXT), ?, ?)
				ON CONFLICT (query_id, partition_id, key) DO UPDATE SET value = excluded.value,
					window_end = excluded.window_end, updated_at = excluded.updated_at`,
				key, req.PartitionID, op.Key, value, end, now); err != nil {
				return fmt.Errorf("upsert stream state: %w", err)
			}
		case combtype.StateDelete:
			if _, err := w.ExecContext(w.ctx, `DELETE FROM stream_state WHERE query_id = ? AND partition_id = ? AND key = ?`,
				key, req.PartitionID, op.Key); err != nil {
				return fmt.Errorf("delete stream state: %w", err)
			}
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
		if errors.Is(err, combtype.ErrInvalid) || errors.Is(err, combtype.ErrQueueLimit) {
			return &cycleError{err}
		}
		return err
	}
	res.StateOpsApplied = len(req.StateOps)
	return nil
}

// flushSkip says why a cycle without an ack must not apply (see Cycle),
// or "" when it may; key is the query's state key.
func (w *wtx) flushSkip(tenant, key string, req *combtype.CycleRequest) (string, error) {
	var lease sql.NullString
	var expires sql.NullInt64
	err := w.QueryRowContext(w.ctx, `SELECT c.lease_id, c.lease_expires_at FROM cursors c
		JOIN partitions p ON p.id = c.partition_id JOIN queues q ON q.id = p.queue_id
		WHERE p.uuid = ? AND q.tenant = ? AND c.group_name = ?`,
		req.PartitionID, tenant, cmp.Or(req.Group, combtype.QueueModeGroup)).Scan(&lease, &expires)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("read lease: %w", err)
	}
	if c := (cursor{leaseID: lease, leaseExpires: expires}); c.live(micros(w.now)) {
		return combtype.SkipBatchInFlight, nil
	}
	read, known := w.s.reads.last(shardKey{req.QueryID, req.PartitionID})
	seen := map[string]bool{} // keys an earlier op of this cycle wrote, or checked
	for _, op := range req.StateOps {
		if seen[op.Key] {
			continue
		}
		seen[op.Key] = true
		if op.Type != combtype.StateDelete {
			continue
		}
		var updated int64
		err := w.QueryRowContext(w.ctx, `SELECT updated_at FROM stream_state
			WHERE query_id = ? AND partition_id = ? AND key = ?`, key, req.PartitionID, op.Key).Scan(&updated)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return combtype.SkipStateGone, nil
		case err != nil:
			return "", fmt.Errorf("read stream state: %w", err)
		case known && updated > read:
			return combtype.SkipStateChanged, nil
		}
	}
	return "", nil
}

// windowEnd is the numeric windowEnd of value when it is an object that
// has one. It is read in Go rather than with SQLite's JSON functions,
// which refuse values nested deeper than they allow. ok is false when
// value is not JSON.
func windowEnd(value []byte) (end sql.NullFloat64, ok bool) {
	if !json.Valid(value) {
		return end, false
	}
	raw, found := topMember(value, "windowEnd")
	if found && len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		if f, err := strconv.ParseFloat(string(raw), 64); err == nil {
			end = sql.NullFloat64{Float64: f, Valid: true}
		}
	}
	return end, true
}

// topMember returns the value of the last member named name of the
// object value (valid JSON), as a slice of it, when value is an object
// that has one. Keys match exactly, after unescaping, as a map's keys do:
// a cycle's state values are scanned once each, where decoding each into
// a map copied every member (a cycle of 62 MB made 57 MB of garbage).
func topMember(value []byte, name string) (raw []byte, found bool) {
	i := skipWS(value, 0)
	if i == len(value) || value[i] != '{' {
		return nil, false
	}
	i = skipWS(value, i+1)
	for i < len(value) && value[i] == '"' {
		keyEnd := skipString(value, i)
		key := value[i+1 : keyEnd-1]
		match := string(key) == name
		if bytes.IndexByte(key, '\\') >= 0 {
			var k string
			match = json.Unmarshal(value[i:keyEnd], &k) == nil && k == name
		}
		i = skipWS(value, keyEnd)
		i = skipWS(value, i+1) // the ':'
		start := i
		i = skipValue(value, i)
		if match {
			raw, found = value[start:i], true
		}
		i = skipWS(value, i)
		if i < len(value) && value[i] == ',' {
			i = skipWS(value, i+1)
		}
	}
	return raw, found
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string that starts at b[i].
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

// skipValue returns the index after the value that starts at b[i].
func skipValue(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch c := b[i]; {
		case c == '"':
			i = skipString(b, i)
		case c == '{' || c == '[':
			depth++
			i++
		case c == '}' || c == ']':
			if depth == 0 {
				return i // the end of the enclosing object
			}
			depth--
			i++
		case depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return i
		default:
			i++
		}
		if depth == 0 && i > 0 && (b[i-1] == '"' || b[i-1] == '}' || b[i-1] == ']') {
			return i
		}
	}
	return i
}

// cycleAck applies a cycle's ack to the cursor of (partition, group),
// under the ack rule every route shares (admit, applyAck).
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
	it := combtype.AckItem{TxnID: a.TxnID, PartitionID: req.PartitionID, LeaseID: a.LeaseID, Status: status, Error: a.Error,
		Group: req.Group}
	locs := make([]*located, 1)
	if err := locate(w.ctx, w, nil, tenant, []combtype.AckItem{it}, locs); err != nil {
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
	res, c, err := w.applyAck(&it, loc, c, ackInCycle, !req.ReleaseLease)
	if err != nil {
		return nil, err
	}
	if res.Err != nil {
		return nil, &cycleError{res.Err}
	}
	if err := w.saveCursor(loc.p.ID, group, c); err != nil {
		return nil, err
	}
	return &combtype.CycleAckResult{Count: a.Count, LeaseReleased: res.LeaseReleased, DLQ: res.DLQ}, nil
}

// dropStreamsOf deletes the queries reading tenant's queue: a deleted
// source queue takes its streams with it. Their state, which can hold
// millions of rows, is left to the purge (purgeStreamStep): deleted here,
// it held the writer for as long as it took.
func (w *wtx) dropStreamsOf(tenant, queue string) error {
	if err := w.detachStreamState(`tenant = ?1 AND source_queue = ?2`, tenant, queue); err != nil {
		return err
	}
	if _, err := w.ExecContext(w.ctx, `DELETE FROM stream_queries WHERE tenant = ? AND source_queue = ?`, tenant, queue); err != nil {
		return fmt.Errorf("delete stream queries: %w", err)
	}
	return nil
}

// purgeStreams deletes the state left under stream_state_detached's keys,
// one bounded op at a time.
func (s *Store) purgeStreams(ctx context.Context, batch, batchBytes int) error {
	return s.inSteps(ctx, "purge deleted stream state", func(w *wtx) (bool, error) { return w.purgeStreamStep(batch, batchBytes) })
}

// purgeStreamStep deletes at most batch rows of the detached state keys:
// the state rows of the next keys in key order, up to batch less the keys
// taken and batchBytes of values (one row at least), and each key whose
// last rows went; done is true when there is none to purge. A step takes
// many keys at once, each statement for all of them: ending a step at a
// key's end made a queue read by 10,000 queries of a few rows each 10,000
// writes.
func (w *wtx) purgeStreamStep(batch, batchBytes int) (done bool, err error) {
	want := max(batch/2, 1)
	keys, err := column[string](w.ctx, w, `SELECT state_key FROM stream_state_detached ORDER BY state_key LIMIT ?`, want)
	if err != nil {
		return false, fmt.Errorf("find deleted stream state: %w", err)
	}
	if len(keys) == 0 {
		return true, nil
	}
	list, err := json.Marshal(keys)
	if err != nil {
		return false, fmt.Errorf("purge stream state: %w", err)
	}
	limit := max(batch-len(keys), 1)
	rows, err := w.QueryContext(w.ctx, `SELECT query_id, partition_id, key, length(value) FROM stream_state
		WHERE query_id IN (SELECT value FROM json_each(?1)) ORDER BY query_id, partition_id, key LIMIT ?2`, string(list), limit)
	if err != nil {
		return false, fmt.Errorf("find deleted stream state: %w", err)
	}
	var lastQuery, lastPart, lastKey string
	found, taken, size := 0, 0, 0
	for rows.Next() {
		var query, part, key string
		var n int
		if err := rows.Scan(&query, &part, &key, &n); err != nil {
			rows.Close()
			return false, fmt.Errorf("find deleted stream state: %w", err)
		}
		found++
		if size += n; taken > 0 && size > batchBytes {
			break
		}
		lastQuery, lastPart, lastKey, taken = query, part, key, taken+1
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("find deleted stream state: %w", err)
	}
	// The rows taken are the keys' first in key order, up to the last:
	// all of the keys before the last one's, and the last one's up to
	// its last row, each a range of the primary key. One statement
	// comparing (query_id, partition_id, key) read every row of the keys
	// in list to match them, a million a write for a key of a million.
	if taken > 0 {
		// The keys are in key order, so those before the last one's are
		// a prefix of them. Compared in SQL (query_id < the last), the
		// last key's rows were all read to be passed over.
		if before := keys[:slices.Index(keys, lastQuery)]; len(before) > 0 {
			list, err := json.Marshal(before)
			if err != nil {
				return false, fmt.Errorf("purge stream state: %w", err)
			}
			if _, err := w.ExecContext(w.ctx, `DELETE FROM stream_state WHERE query_id IN (SELECT value FROM json_each(?))`,
				string(list)); err != nil {
				return false, fmt.Errorf("delete stream state: %w", err)
			}
		}
		if _, err := w.ExecContext(w.ctx, `DELETE FROM stream_state WHERE query_id = ?1 AND (partition_id, key) <= (?2, ?3)`,
			lastQuery, lastPart, lastKey); err != nil {
			return false, fmt.Errorf("delete stream state: %w", err)
		}
	}
	res, err := w.ExecContext(w.ctx, `DELETE FROM stream_state_detached WHERE state_key IN (SELECT value FROM json_each(?1))
		AND NOT EXISTS (SELECT 1 FROM stream_state WHERE query_id = state_key)`, string(list))
	if err != nil {
		return false, fmt.Errorf("delete stream state: %w", err)
	}
	gone, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("delete stream state: %w", err)
	}
	return len(keys) < want && found < limit && taken == found && gone == int64(len(keys)), nil
}
