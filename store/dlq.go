package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Defaults for DLQ reads and re-drives.
const (
	DefaultDLQLimit = 100
	// MaxDLQLimit caps one page of the DLQ listing.
	MaxDLQLimit = 10000
	// DefaultRedriveLimit caps how many dead-lettered messages one re-drive
	// takes, so one call is one bounded commit; call again while Remaining > 0.
	DefaultRedriveLimit = 1000
	// MaxRedriveLimit is the most messages one re-drive may take.
	MaxRedriveLimit = 10000
)

// DLQFilter selects dead-lettered messages. Empty strings and nil times
// match everything.
type DLQFilter struct {
	Tenant    string
	Queue     string
	Group     string
	Partition string
	From, To  *time.Time // bounds on the time the message failed, inclusive
	Limit     int        // <= 0 means DefaultDLQLimit; capped at MaxDLQLimit
	Offset    int
}

// DLQEntry is one dead-lettered copy of a message.
type DLQEntry struct {
	RowID        int64
	ID           string // the original message's id
	TxnID        string
	PartitionID  string // the partition's uuid
	Queue        string
	Partition    string
	Group        string
	ErrorMessage string
	RetryCount   int64
	Payload      []byte
	TraceID      string
	ProducerSub  string
	Offset       int64
	CreatedAt    time.Time // commit time of the original message
	FailedAt     time.Time
}

// where renders the filter as a WHERE clause over table dlq.
func (f *DLQFilter) where() (string, []any) {
	conds := []string{"tenant = ?"}
	args := []any{f.Tenant}
	if f.Queue != "" {
		conds, args = append(conds, "queue_name = ?"), append(args, f.Queue)
	}
	if f.Group != "" {
		conds, args = append(conds, "group_name = ?"), append(args, f.Group)
	}
	if f.Partition != "" {
		conds, args = append(conds, "partition_name = ?"), append(args, f.Partition)
	}
	if f.From != nil {
		conds, args = append(conds, "failed_at >= ?"), append(args, micros(*f.From))
	}
	if f.To != nil {
		conds, args = append(conds, "failed_at <= ?"), append(args, micros(*f.To))
	}
	return strings.Join(conds, " AND "), args
}

const dlqColumns = `id, message_id, txn_id, partition_uuid, queue_name, partition_name, group_name,
	COALESCE(error_message, ''), retry_count, payload, COALESCE(trace_id, ''), COALESCE(producer_sub, ''), offset,
	created_at, failed_at`

func scanDLQ(r scanner) (DLQEntry, error) {
	var e DLQEntry
	var created, failed int64
	err := r.Scan(&e.RowID, &e.ID, &e.TxnID, &e.PartitionID, &e.Queue, &e.Partition, &e.Group, &e.ErrorMessage,
		&e.RetryCount, &e.Payload, &e.TraceID, &e.ProducerSub, &e.Offset, &created, &failed)
	e.CreatedAt, e.FailedAt = fromMicros(created), fromMicros(failed)
	return e, err
}

// MaxListBytes bounds the payload bytes of one page of dead letters
// (one entry at least).
const MaxListBytes = 4 << 20

// ListDLQ returns one page of tenant's dead-lettered messages matching f,
// newest failure first, and how many match in all.
func (s *Store) ListDLQ(ctx context.Context, f DLQFilter) ([]DLQEntry, int64, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultDLQLimit
	}
	limit = min(limit, MaxDLQLimit)
	where, args := f.where()
	var total int64
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM dlq WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count dead letters: %w", err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+dlqColumns+` FROM dlq WHERE `+where+`
		ORDER BY failed_at DESC, id DESC LIMIT ? OFFSET ?`, append(args, limit, max(f.Offset, 0))...)
	if err != nil {
		return nil, 0, fmt.Errorf("list dead letters: %w", err)
	}
	defer rows.Close()
	out := []DLQEntry{}
	size := 0
	for rows.Next() {
		e, err := scanDLQ(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("scan dead letter: %w", err)
		}
		if e.Payload, err = s.openDLQPayload(&e); err != nil {
			return nil, 0, err
		}
		// A page is bounded by bytes as well as by count; the client
		// pages on with the offset, as it does past the count.
		if size += len(e.Payload); len(out) > 0 && size > MaxListBytes {
			break
		}
		out = append(out, e)
	}
	return out, total, rows.Err()
}

// openDLQPayload returns the payload of e as the client pushed it: a row
// of an encrypted queue is stored sealed, like the frame it was copied from.
func (s *Store) openDLQPayload(e *DLQEntry) ([]byte, error) {
	p, err := s.DecryptPayload(e.Payload)
	if err != nil {
		return nil, fmt.Errorf("dead letter %d: %w", e.RowID, err)
	}
	return p, nil
}

// RedriveRequest selects dead-lettered messages of one queue to append
// back to it.
type RedriveRequest struct {
	Tenant    string
	Queue     string   // required
	Group     string   // "" = rows of every group
	Partition string   // "" = every partition
	IDs       []string // message ids as ListDLQ reports them; nil = every matching row, empty = none
	Limit     int      // messages taken; <= 0 means DefaultRedriveLimit, capped at MaxRedriveLimit
}

// RedriveResult counts what a re-drive did.
type RedriveResult struct {
	Queue string
	// Redriven is the number of new messages appended.
	Redriven int
	// Duplicates is the number of messages whose re-drive key already
	// existed: an earlier re-drive of the same DLQ row got through.
	Duplicates int
	// Deleted is the number of DLQ rows removed.
	Deleted int
	// Remaining is the number of DLQ rows still matching the request.
	Remaining int64
}

// RedriveDLQ appends dead-lettered messages back to their queue and
// partition as new messages, and deletes their DLQ rows in the same commit.
//
// In a log there is no taking a message back: every group sees the new
// message, including groups that completed the original. Rows of several
// groups for one message therefore become one new message, not one per
// group. Each new message's transactionId is the original's with
// ":redrive:<row id>" appended, the lowest row id of its group of rows, so
// a re-drive that was committed but not answered and is sent again is
// deduplicated rather than appended twice.
func (s *Store) RedriveDLQ(ctx context.Context, req RedriveRequest) (*RedriveResult, error) {
	limit := req.Limit
	if limit <= 0 {
		limit = DefaultRedriveLimit
	}
	limit = min(limit, MaxRedriveLimit)
	res := &RedriveResult{Queue: req.Queue}
	f := DLQFilter{Tenant: req.Tenant, Queue: req.Queue, Group: req.Group, Partition: req.Partition}
	where, args := f.where()
	if req.IDs != nil {
		where += ` AND message_id IN (SELECT value FROM json_each(?))`
		args = append(args, jsonStrings(req.IDs))
	}
	var results []PushResult
	err := s.submit(ctx, &writeOp{isolated: true, apply: func(w *wtx) error {
		*res = RedriveResult{Queue: req.Queue}
		q, err := w.queue(req.Tenant, req.Queue, false)
		if err != nil {
			return err
		}
		// The limit counts messages, not rows, so the rows of several groups
		// for one message are never split across calls.
		selArgs := append(append(append([]any{}, args...), args...), limit)
		rows, err := w.QueryContext(w.ctx, `SELECT `+dlqColumns+` FROM dlq WHERE `+where+`
			AND (partition_uuid, offset) IN (SELECT partition_uuid, offset FROM dlq WHERE `+where+`
				GROUP BY partition_uuid, offset ORDER BY MIN(partition_name), offset LIMIT ?)
			ORDER BY partition_name, offset, id`, selArgs...)
		if err != nil {
			return fmt.Errorf("select dead letters: %w", err)
		}
		var entries []DLQEntry
		for rows.Next() {
			e, err := scanDLQ(rows)
			if err != nil {
				rows.Close()
				return fmt.Errorf("scan dead letter: %w", err)
			}
			entries = append(entries, e)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("select dead letters: %w", err)
		}
		if len(entries) == 0 {
			return nil
		}
		// Rows are ordered by (partition, offset): one item per message,
		// in the order the messages were first written.
		type msgKey struct {
			partition string
			offset    int64
		}
		seen := map[msgKey]bool{}
		var items []PushItem
		ids := make([]string, 0, len(entries))
		for i := range entries {
			e := &entries[i]
			ids = append(ids, strconv.FormatInt(e.RowID, 10))
			k := msgKey{e.PartitionID, e.Offset}
			if seen[k] {
				continue
			}
			seen[k] = true
			payload, err := w.s.openDLQPayload(e)
			if err != nil {
				return err
			}
			items = append(items, PushItem{Queue: q.Name, Partition: e.Partition, Payload: payload,
				TxnID: e.TxnID + ":redrive:" + strconv.FormatInt(e.RowID, 10), TraceID: e.TraceID, ProducerSub: e.ProducerSub})
		}
		// Push results are decided when the commit flushes, so they are
		// counted after submit returns.
		results = make([]PushResult, len(items))
		if err := w.push(req.Tenant, items, results, false); err != nil {
			return err
		}
		del, err := w.ExecContext(w.ctx, `DELETE FROM dlq WHERE id IN (SELECT value FROM json_each(?))`,
			"["+strings.Join(ids, ",")+"]")
		if err != nil {
			return fmt.Errorf("delete dead letters: %w", err)
		}
		n, _ := del.RowsAffected()
		res.Deleted = int(n)
		if err := w.QueryRowContext(w.ctx, `SELECT COUNT(*) FROM dlq WHERE `+where, args...).Scan(&res.Remaining); err != nil {
			return fmt.Errorf("count dead letters: %w", err)
		}
		return nil
	}})
	if err != nil {
		return nil, err
	}
	for _, r := range results {
		if r.Status == StatusQueued {
			res.Redriven++
		} else {
			res.Duplicates++
		}
	}
	return res, nil
}

// deadLetter copies the message at loc into the dead-letter table.
func (w *wtx) deadLetter(loc *located, group, errText string, retry int64) error {
	var frame *Frame
	var createdAt int64
	err := w.s.scanFrames(w.ctx, w, loc.p.ID, loc.offset, loc.offset, func(off, at int64, f *Frame) error {
		frame, createdAt = f, at
		return nil
	})
	if bad := damagedSegment(err); bad != nil {
		// Its segment was damaged since it was delivered: the copy kept
		// is the quarantined segment's, which the operator restores from.
		w.s.log.Error("a failed message's segment is damaged; it is dead-lettered through the quarantine",
			"queue", loc.q.Name, "partition", loc.p.Name, "offset", loc.offset, "group", group)
		return w.setAside(bad)
	}
	if err != nil {
		return err
	}
	if frame == nil {
		return nil // removed by retention before it failed: nothing left to copy
	}
	_, err = w.ExecContext(w.ctx, `INSERT INTO dlq (message_id, tenant, queue_name, partition_name, partition_uuid,
		group_name, txn_id, offset, trace_id, producer_sub, payload, error_message, retry_count, created_at, failed_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULLIF(?, ''), NULLIF(?, ''), ?, ?, ?, ?, ?)`,
		MessageID(loc.p.UUID, loc.offset), loc.q.Tenant, loc.q.Name, loc.p.Name, loc.p.UUID, group, frame.TxnID,
		loc.offset, frame.TraceID, frame.ProducerSub, w.s.sealPayload(loc.q, frame.Payload), errText, retry, createdAt, micros(w.now))
	if err != nil {
		return fmt.Errorf("insert dead letter: %w", err)
	}
	return nil
}

// dlqCountsByPartition counts DLQ rows per partition uuid, through the
// (partition_uuid, offset) index.
func dlqCountsByPartition(ctx context.Context, db querier, parts []*Partition) (map[string]int64, error) {
	out := map[string]int64{}
	if len(parts) == 0 {
		return out, nil
	}
	uuids := make([]string, len(parts))
	for i, p := range parts {
		uuids[i] = p.UUID
	}
	rows, err := db.QueryContext(ctx, `SELECT partition_uuid, COUNT(*) FROM dlq
		WHERE partition_uuid IN (SELECT value FROM json_each(?)) GROUP BY partition_uuid`, jsonStrings(uuids))
	if err != nil {
		return nil, fmt.Errorf("count dead letters: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var u string
		var n int64
		if err := rows.Scan(&u, &n); err != nil {
			return nil, fmt.Errorf("scan dead letter count: %w", err)
		}
		out[u] = n
	}
	return out, rows.Err()
}

// Bounds of one DLQ purge.
const (
	// DefaultPurgeLimit caps how many DLQ rows one purge deletes, so one
	// call is one bounded commit; call again while Remaining > 0.
	DefaultPurgeLimit = 10000
	// MaxPurgeLimit is the most rows one purge may delete.
	MaxPurgeLimit = 100000
)

// PurgeRequest selects dead-lettered rows to delete for good.
type PurgeRequest struct {
	Tenant    string
	Queue     string
	Group     string
	Partition string
	From, To  *time.Time // bounds on the time the message failed, inclusive
	IDs       []string   // message ids as ListDLQ reports them; nil = every matching row, empty = none
	// All must be set to purge with no filter at all: an empty request
	// would otherwise wipe the tenant's whole DLQ.
	All   bool
	Limit int // rows deleted; <= 0 means DefaultPurgeLimit, capped at MaxPurgeLimit
}

// Filtered reports whether req narrows the purge by anything.
func (req *PurgeRequest) Filtered() bool {
	return req.Queue != "" || req.Group != "" || req.Partition != "" || req.From != nil || req.To != nil || req.IDs != nil
}

// PurgeResult counts what a purge did.
type PurgeResult struct {
	// Deleted is the number of DLQ rows removed.
	Deleted int64
	// Remaining is the number of rows still matching the request.
	Remaining int64
}

// PurgeDLQ deletes dead-lettered rows of req.Tenant matching req, oldest
// failure first, in one commit. Nothing is appended anywhere: the messages
// are gone from the DLQ for good. A request with no filter is refused
// unless req.All is set.
func (s *Store) PurgeDLQ(ctx context.Context, req PurgeRequest) (*PurgeResult, error) {
	if !req.Filtered() && !req.All {
		return nil, fmt.Errorf("%w: a purge needs a filter (queue, consumerGroup, partition, from, to or ids), or all=true to delete every dead letter", ErrInvalid)
	}
	limit := req.Limit
	if limit <= 0 {
		limit = DefaultPurgeLimit
	}
	limit = min(limit, MaxPurgeLimit)
	f := DLQFilter{Tenant: req.Tenant, Queue: req.Queue, Group: req.Group, Partition: req.Partition, From: req.From, To: req.To}
	where, args := f.where()
	if req.IDs != nil {
		where += ` AND message_id IN (SELECT value FROM json_each(?))`
		args = append(args, jsonStrings(req.IDs))
	}
	res := &PurgeResult{}
	err := s.submit(ctx, &writeOp{apply: func(w *wtx) error {
		*res = PurgeResult{}
		del, err := w.ExecContext(w.ctx, `DELETE FROM dlq WHERE id IN (SELECT id FROM dlq WHERE `+where+`
			ORDER BY failed_at, id LIMIT ?)`, append(append([]any{}, args...), limit)...)
		if err != nil {
			return fmt.Errorf("purge dead letters: %w", err)
		}
		if res.Deleted, err = del.RowsAffected(); err != nil {
			return fmt.Errorf("purge dead letters: %w", err)
		}
		if err := w.QueryRowContext(w.ctx, `SELECT COUNT(*) FROM dlq WHERE `+where, args...).Scan(&res.Remaining); err != nil {
			return fmt.Errorf("count dead letters: %w", err)
		}
		return nil
	}})
	if err != nil {
		return nil, err
	}
	return res, nil
}
