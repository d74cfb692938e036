package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/store/segment"
)

// where renders the filter as a WHERE clause over table dlq.
func dlqWhere(tenant string, f *combtype.DLQFilter) (string, []any) {
	conds := []string{"tenant = ?"}
	args := []any{tenant}
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

// dlqHidden is the condition, over a row of table dlq, that hides the
// dead letters of a deleted queue the purge has not removed yet
// (dlq_detached): DeleteQueue leaves them, so that a delete does not hold
// the writer for as long as its dead letters take to delete.
const dlqHidden = ` AND NOT EXISTS (SELECT 1 FROM dlq_detached x
	WHERE x.tenant = dlq.tenant AND x.queue_name = dlq.queue_name AND dlq.id <= x.through_id)`

// dlqLive returns the condition that hides tenant's deleted dead letters
// when tenant has some, and "" when it has none, which is almost always:
// the condition costs a lookup a row (a count of a million rows 53 ->
// 118 ms), and without hidden rows it hides nothing.
func dlqLive(ctx context.Context, db querier, tenant string) (string, error) {
	var some bool
	if err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM dlq_detached WHERE tenant = ?)`, tenant).Scan(&some); err != nil {
		return "", fmt.Errorf("read deleted dead letters: %w", err)
	}
	if some {
		return dlqHidden, nil
	}
	return "", nil
}

// nextDLQID is the row id of a new dead letter: above every row and above
// every deleted queue's through_id, so that a dead letter of a queue
// recreated under a deleted one's name is never taken for one of the
// deleted queue's (SQLite's own choice, the highest id plus one, can fall
// below through_id once the purge or a DLQ purge has deleted the highest
// rows).
const nextDLQID = `(SELECT max(ifnull((SELECT max(id) FROM dlq), 0), ifnull((SELECT max(through_id) FROM dlq_detached), 0)) + 1)`

const dlqColumns = `id, message_id, txn_id, partition_uuid, queue_name, partition_name, group_name,
	COALESCE(error_message, ''), retry_count, payload, COALESCE(trace_id, ''), COALESCE(producer_sub, ''), offset,
	created_at, failed_at`

func scanDLQ(r scanner) (combtype.DLQEntry, error) {
	var e combtype.DLQEntry
	var created, failed int64
	err := r.Scan(&e.RowID, &e.ID, &e.TxnID, &e.PartitionID, &e.Queue, &e.Partition, &e.Group, &e.ErrorMessage,
		&e.RetryCount, &e.Payload, &e.TraceID, &e.ProducerSub, &e.Offset, &created, &failed)
	e.CreatedAt, e.FailedAt = fromMicros(created), fromMicros(failed)
	return e, err
}

// MaxListBytes bounds the payload and error bytes of one page of dead
// letters (one entry at least).
const MaxListBytes = 4 << 20

// MaxErrorBytes bounds the error text a dead letter keeps: a failed ack's
// error, a stack trace often, is cut there. Sixty failed acks with an
// error of a megabyte each made a page of dead letters of 63 MB.
const MaxErrorBytes = 16 << 10

// keptError is errText as a dead letter keeps it: whole up to
// MaxErrorBytes, else cut on a character boundary and marked.
func keptError(errText string) string {
	if len(errText) <= MaxErrorBytes {
		return errText
	}
	mark := fmt.Sprintf(" [cut from %d bytes]", len(errText))
	cut := MaxErrorBytes - len(mark)
	for cut > 0 && !utf8.RuneStart(errText[cut]) {
		cut--
	}
	return errText[:cut] + mark
}

// ListDLQ returns one page of tenant's dead-lettered messages matching f,
// newest failure first, and how many match in all.
func (s *Store) ListDLQ(ctx context.Context, tenant string, f combtype.DLQFilter) ([]combtype.DLQEntry, int64, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = combtype.DefaultDLQLimit
	}
	limit = min(limit, combtype.MaxDLQLimit)
	where, args := dlqWhere(tenant, &f)
	live, err := dlqLive(ctx, s.r, tenant)
	if err != nil {
		return nil, 0, err
	}
	where += live
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
	out := []combtype.DLQEntry{}
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
		if size += len(e.Payload) + len(e.ErrorMessage); len(out) > 0 && size > MaxListBytes {
			break
		}
		out = append(out, e)
	}
	return out, total, rows.Err()
}

// openDLQPayload returns the payload of e as the client pushed it: a row
// of an encrypted queue is stored sealed, like the frame it was copied from.
func (s *Store) openDLQPayload(e *combtype.DLQEntry) ([]byte, error) {
	p, err := s.DecryptPayload(e.Payload)
	if err != nil {
		return nil, fmt.Errorf("dead letter %d: %w", e.RowID, err)
	}
	return p, nil
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
func (s *Store) RedriveDLQ(ctx context.Context, tenant string, req combtype.RedriveRequest) (*combtype.RedriveResult, error) {
	limit := req.Limit
	if limit <= 0 {
		limit = combtype.DefaultRedriveLimit
	}
	limit = min(limit, combtype.MaxRedriveLimit)
	res := &combtype.RedriveResult{Queue: req.Queue}
	f := combtype.DLQFilter{Queue: req.Queue, Group: req.Group, Partition: req.Partition}
	where, args := dlqWhere(tenant, &f)
	if req.IDs != nil {
		where += ` AND message_id IN (SELECT value FROM json_each(?))`
		args = append(args, jsonStrings(req.IDs))
	}
	live, err := dlqLive(ctx, s.r, tenant)
	if err != nil {
		return nil, err
	}
	where += live
	// The messages are chosen on a reader: grouping every row of the
	// queue's DLQ by message held the writer, and every push, for 2.5 s
	// at a million rows. The writer reads the chosen rows again by id;
	// one a purge or another re-drive deleted since is not there.
	// The limit counts messages, not rows, so the rows of several groups
	// for one message are never split across calls.
	chosen, _, err := s.chooseDeadLetters(ctx, `SELECT id, 0 FROM dlq WHERE `+where+`
		AND (partition_uuid, offset) IN (SELECT partition_uuid, offset FROM dlq WHERE `+where+`
			GROUP BY partition_uuid, offset ORDER BY MIN(partition_name), offset LIMIT ?)`,
		append(append(append([]any{}, args...), args...), limit)...)
	if err != nil {
		return nil, err
	}
	var results []combtype.PushResult
	err = s.submit(ctx, &writeOp{isolated: true, apply: func(w *wtx) error {
		*res = combtype.RedriveResult{Queue: req.Queue}
		q, err := w.queue(tenant, req.Queue, false)
		if err != nil {
			return err
		}
		rows, err := w.QueryContext(w.ctx, `SELECT `+dlqColumns+` FROM dlq WHERE id IN (SELECT value FROM json_each(?))
			ORDER BY partition_name, offset, id`, jsonInts(chosen))
		if err != nil {
			return fmt.Errorf("select dead letters: %w", err)
		}
		var entries []combtype.DLQEntry
		var size int
		for rows.Next() {
			e, err := scanDLQ(rows)
			if err != nil {
				rows.Close()
				return fmt.Errorf("scan dead letter: %w", err)
			}
			if n := len(entries); n > 0 && size >= redriveBytes &&
				(entries[n-1].PartitionID != e.PartitionID || entries[n-1].Offset != e.Offset) {
				break // the rest is left for the next call, each message whole
			}
			size += len(e.Payload)
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
		var items []combtype.PushItem
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
			items = append(items, combtype.PushItem{Queue: q.Name, Partition: e.Partition, Payload: payload,
				TxnID: redriveID(e.TxnID, e.RowID), TraceID: e.TraceID, ProducerSub: e.ProducerSub})
		}
		// Push results are decided when the commit flushes, so they are
		// counted after submit returns.
		results = make([]combtype.PushResult, len(items))
		if err := w.push(tenant, items, results, false); err != nil {
			return err
		}
		del, err := w.ExecContext(w.ctx, `DELETE FROM dlq WHERE id IN (SELECT value FROM json_each(?))`,
			"["+strings.Join(ids, ",")+"]")
		if err != nil {
			return fmt.Errorf("delete dead letters: %w", err)
		}
		n, _ := del.RowsAffected()
		res.Deleted = int(n)
		return nil
	}})
	if err != nil {
		return nil, err
	}
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM dlq WHERE `+where, args...).Scan(&res.Remaining); err != nil {
		return nil, fmt.Errorf("count dead letters: %w", err)
	}
	for _, r := range results {
		if r.Status == combtype.StatusQueued {
			res.Redriven++
		} else {
			res.Duplicates++
		}
	}
	return res, nil
}

// redriveBytes is about how many bytes of payload one re-drive takes: past
// them it stops at the end of a message and leaves the rest (Remaining)
// for the next call. All the messages it takes are held at once, in its
// commit; at MaxRedriveLimit messages of 1 MB that was 10 GB in one
// request (240 of them took the server from 62 to 303 MB).
const redriveBytes = 16 << 20

// maxRedriveID is the longest transactionId a re-drive writes, in bytes:
// the bound every transactionId a client sends is held to
// (broker.MaxNameLength), as Queen stores them in VARCHAR(255) columns.
const maxRedriveID = 255

// redriveID is the transactionId of the re-driven copy of a message of
// transactionId id, from the dead-letter row rowID: id and a suffix, or,
// when the two would pass maxRedriveID (an id near the bound, or one
// re-driven again and again), a SHA-256 digest of id and the suffix. The
// same at every attempt, so that a re-drive sent again is deduplicated.
func redriveID(id string, rowID int64) string {
	suffix := ":redrive:" + strconv.FormatInt(rowID, 10)
	if len(id)+len(suffix) <= maxRedriveID {
		return id + suffix
	}
	sum := sha256.Sum256([]byte(id))
	return "sha256-" + hex.EncodeToString(sum[:]) + suffix
}

// deadLetter copies the message at loc into the dead-letter table, once
// per group: a message the group has dead-lettered already, and whose copy
// is still there, is not copied again. Each repeat of an ack with status
// dlq had copied the payload anew: one transaction repeating the ack of a
// 1 MB message 400 times (a 54 KB body) wrote 400 copies, 418 MB, holding
// every other client's writes 4-5 s.
func (w *wtx) deadLetter(loc *located, group, errText string, retry int64) error {
	var copied bool
	if err := w.QueryRowContext(w.ctx, `SELECT EXISTS (SELECT 1 FROM dlq WHERE partition_uuid = ? AND offset = ? AND group_name = ?)`,
		loc.p.UUID, loc.offset, group).Scan(&copied); err != nil {
		return fmt.Errorf("look up dead letter: %w", err)
	}
	if copied {
		return nil
	}
	frame, createdAt, err := w.deadLetterFrame(loc)
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
	_, err = w.ExecContext(w.ctx, `INSERT INTO dlq (id, message_id, tenant, queue_name, partition_name, partition_uuid,
		group_name, txn_id, offset, trace_id, producer_sub, payload, error_message, retry_count, created_at, failed_at)
		VALUES (`+nextDLQID+`, ?, ?, ?, ?, ?, ?, ?, ?, NULLIF(?, ''), NULLIF(?, ''), ?, ?, ?, ?, ?)`,
		w.s.messageID(loc.p.UUID, loc.offset), loc.q.Tenant, loc.q.Name, loc.p.Name, loc.p.UUID, group, frame.TxnID,
		loc.offset, frame.TraceID, frame.ProducerSub, w.s.sealPayload(loc.q, frame.Payload), keptError(errText), retry, createdAt, micros(w.now))
	if err != nil {
		return fmt.Errorf("insert dead letter: %w", err)
	}
	w.dlqCopies++
	w.dlqCopied += int64(len(frame.Payload))
	return nil
}

// deadLetterSegment is the segment a transaction's last dead letter was
// copied from, decoded, its payloads still sealed: the acks of one request
// mostly fail the messages of one pop, which lie in a few segments. Each
// copy decoded its whole segment: 10,000 dlq acks of one transaction
// decoded 10,000 segments of 100 messages, 2.9-4.9 s while every other
// client's writes waited.
type deadLetterSegment struct {
	partitionID, base, count, createdAt int64
	frames                              []segment.Frame
}

// deadLetterFrame is the frame at loc with its payload opened, and when
// its segment was written; nil when retention removed it.
func (w *wtx) deadLetterFrame(loc *located) (*segment.Frame, int64, error) {
	c := w.dlqSegment
	if c == nil || c.partitionID != loc.p.ID || loc.offset < c.base || loc.offset >= c.base+int64(len(c.frames)) {
		c = nil
		err := w.s.scanSegments(w.ctx, w, loc.p.ID, loc.offset, loc.offset, func(base, count, createdAt int64, frames []segment.Frame) error {
			if loc.offset >= base && loc.offset < base+int64(len(frames)) {
				c = &deadLetterSegment{partitionID: loc.p.ID, base: base, count: count, createdAt: createdAt, frames: frames}
			}
			return nil
		})
		if err != nil {
			return nil, 0, err
		}
		if c == nil {
			return nil, 0, nil
		}
		w.dlqSegment = c
	}
	f := c.frames[loc.offset-c.base]
	payload, err := w.s.DecryptPayload(f.Payload)
	if err != nil {
		return nil, 0, &segmentError{partitionID: c.partitionID, base: c.base, count: c.count,
			err: fmt.Errorf("frame %d: %w", loc.offset, err)}
	}
	f.Payload = payload
	return &f, c.createdAt, nil
}

// maxDeadLetterBytes is about how many bytes of payload the acks of one
// request may copy into the dead-letter table; the first copy is made
// whatever its size. Each copy is written in the request's commit, which
// every other write waits for: 3,000 acks with status dlq of 64 KiB
// messages (one transaction) held other clients' pushes 2.2-2.5 s. A
// consumer that fails a whole pop copies at most combtype.MaxPopBytes.
const maxDeadLetterBytes = 16 << 20

// deadLetterBound refuses the acks of a request once their dead-letter
// copies pass maxDeadLetterBytes; the op, and what it copied, is rolled
// back.
func (w *wtx) deadLetterBound() error {
	if w.dlqCopies > 1 && w.dlqCopied > maxDeadLetterBytes {
		return fmt.Errorf("%w: the acks of one request may dead-letter about %d MiB of payload; these pass it: split them",
			combtype.ErrInvalid, maxDeadLetterBytes>>20)
	}
	return nil
}

// dlqCountsByPartition counts DLQ rows per partition uuid, through the
// (partition_uuid, offset) index.
func dlqCountsByPartition(ctx context.Context, db querier, parts []*combtype.Partition) (map[string]int64, error) {
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

// PurgeDLQ deletes dead-lettered rows of req.Tenant matching req, oldest
// failure first. Nothing is appended anywhere: the messages are gone from
// the DLQ for good. A request with no filter is refused unless req.All is
// set.
//
// The rows are chosen on a reader, in one query, and deleted by id
// purgeRowBatch rows (purgeRowBytes of payload) a write: one
// write of a whole purge held the writer, and every push, for as long as
// its rows took (100,000 rows: 0.9 s). A chosen row a re-drive deletes
// first is skipped; a row failed after the choice is left, as if the
// purge had run before it. Remaining is counted on a reader at the end.
func (s *Store) PurgeDLQ(ctx context.Context, tenant string, req combtype.PurgeRequest) (*combtype.PurgeResult, error) {
	return s.purgeDLQ(ctx, tenant, req, purgeRowBatch, purgeRowBytes)
}

func (s *Store) purgeDLQ(ctx context.Context, tenant string, req combtype.PurgeRequest, batch, batchBytes int) (*combtype.PurgeResult, error) {
	if !req.Filtered() && !req.All {
		return nil, fmt.Errorf("%w: a purge needs a filter (queue, consumerGroup, partition, from, to or ids), or all=true to delete every dead letter", combtype.ErrInvalid)
	}
	limit := req.Limit
	if limit <= 0 {
		limit = combtype.DefaultPurgeLimit
	}
	limit = min(limit, combtype.MaxPurgeLimit)
	f := combtype.DLQFilter{Queue: req.Queue, Group: req.Group, Partition: req.Partition, From: req.From, To: req.To}
	where, args := dlqWhere(tenant, &f)
	if req.IDs != nil {
		where += ` AND message_id IN (SELECT value FROM json_each(?))`
		args = append(args, jsonStrings(req.IDs))
	}
	live, err := dlqLive(ctx, s.r, tenant)
	if err != nil {
		return nil, err
	}
	where += live
	ids, sizes, err := s.chooseDeadLetters(ctx, `SELECT id, length(payload) FROM dlq WHERE `+where+`
		ORDER BY failed_at, id LIMIT ?`, append(append([]any{}, args...), limit)...)
	if err != nil {
		return nil, err
	}
	res := &combtype.PurgeResult{}
	for len(ids) > 0 {
		n, size := 1, sizes[0]
		for n < len(ids) && n < batch && size+sizes[n] <= batchBytes {
			size += sizes[n]
			n++
		}
		var deleted int64
		err := s.submit(ctx, &writeOp{apply: func(w *wtx) error {
			del, err := w.ExecContext(w.ctx, `DELETE FROM dlq WHERE id IN (SELECT value FROM json_each(?))`, jsonInts(ids[:n]))
			if err != nil {
				return fmt.Errorf("purge dead letters: %w", err)
			}
			if deleted, err = del.RowsAffected(); err != nil {
				return fmt.Errorf("purge dead letters: %w", err)
			}
			return nil
		}})
		if err != nil {
			return nil, err
		}
		res.Deleted += deleted
		ids, sizes = ids[n:], sizes[n:]
	}
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM dlq WHERE `+where, args...).Scan(&res.Remaining); err != nil {
		return nil, fmt.Errorf("count dead letters: %w", err)
	}
	return res, nil
}

// chooseDeadLetters reads the ids and payload sizes sel selects, in its
// order, on a reader.
func (s *Store) chooseDeadLetters(ctx context.Context, sel string, args ...any) (ids []int64, sizes []int, err error) {
	rows, err := s.r.QueryContext(ctx, sel, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("choose dead letters: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, nil, fmt.Errorf("choose dead letters: %w", err)
		}
		ids, sizes = append(ids, id), append(sizes, n)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("choose dead letters: %w", err)
	}
	return ids, sizes, nil
}
