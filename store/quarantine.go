package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/comb-broker/comb/combtype"
)

func quarantineWhere(tenant string, f *combtype.QuarantineFilter) (string, []any) {
	conds := []string{"qs.tenant = ?"}
	args := []any{tenant}
	if f.Queue != "" {
		conds, args = append(conds, "qs.queue_name = ?"), append(args, f.Queue)
	}
	if f.Partition != "" {
		conds, args = append(conds, "qs.partition_name = ?"), append(args, f.Partition)
	}
	return strings.Join(conds, " AND "), args
}

// ListQuarantine returns one page of the tenant's quarantined segments
// matching f, the most recently put aside first, and how many match in all.
func (s *Store) ListQuarantine(ctx context.Context, tenant string, f combtype.QuarantineFilter) ([]combtype.QuarantinedSegment, int64, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = combtype.DefaultQuarantineLimit
	}
	limit = min(limit, combtype.MaxQuarantineLimit)
	where, args := quarantineWhere(tenant, &f)
	var total int64
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM quarantined_segments qs WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count quarantined segments: %w", err)
	}
	rows, err := s.r.QueryContext(ctx, quarantineSelect+` WHERE `+where+`
		ORDER BY qs.quarantined_at DESC, qs.id DESC LIMIT ? OFFSET ?`, append(args, limit, max(f.Offset, 0))...)
	if err != nil {
		return nil, 0, fmt.Errorf("list quarantined segments: %w", err)
	}
	out, err := scanQuarantine(rows)
	if err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// quarantineSelect reads quarantined segments with the groups past each,
// as scanQuarantine expects; the caller adds WHERE over alias qs.
const quarantineSelect = `SELECT qs.id, qs.tenant, qs.queue_name, qs.partition_name, qs.partition_uuid, qs.base_offset,
	qs.frame_count, qs.reason, length(qs.data), qs.segment_created_at, qs.quarantined_at,
	COALESCE((SELECT json_group_array(group_name) FROM (SELECT c.group_name FROM cursors c JOIN partitions p ON p.id = c.partition_id
		WHERE p.uuid = qs.partition_uuid AND c.committed >= qs.base_offset + qs.frame_count - 1 ORDER BY c.group_name)), '[]')
	FROM quarantined_segments qs`

func scanQuarantine(rows *sql.Rows) ([]combtype.QuarantinedSegment, error) {
	defer rows.Close()
	out := []combtype.QuarantinedSegment{}
	for rows.Next() {
		var q combtype.QuarantinedSegment
		var groups string
		var created, at int64
		if err := rows.Scan(&q.ID, &q.Tenant, &q.Queue, &q.Partition, &q.PartitionID, &q.FirstOffset, &q.Frames,
			&q.Reason, &q.Bytes, &created, &at, &groups); err != nil {
			return nil, fmt.Errorf("scan quarantined segment: %w", err)
		}
		q.LastOffset = q.FirstOffset + q.Frames - 1
		q.SegmentCreatedAt, q.QuarantinedAt = fromMicros(created), fromMicros(at)
		if err := json.Unmarshal([]byte(groups), &q.PassedBy); err != nil {
			return nil, fmt.Errorf("quarantined segment %d: groups: %w", q.ID, err)
		}
		out = append(out, q)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list quarantined segments: %w", err)
	}
	return out, nil
}

// CountQuarantine returns how many segments of tenant are quarantined.
func (s *Store) CountQuarantine(ctx context.Context, tenant string) (int64, error) {
	var n int64
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM quarantined_segments WHERE tenant = ?`, tenant).Scan(&n); err != nil {
		return 0, fmt.Errorf("count quarantined segments: %w", err)
	}
	return n, nil
}

// checkQuarantine reports each quarantined segment as a finding of its own
// kind: its frames were set aside, and the groups past it did not get them.
func checkQuarantine(ctx context.Context, tx *sql.Tx, rep *combtype.CheckReport) error {
	// A file from before the table existed has nothing put aside.
	var tables int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master
		WHERE type = 'table' AND name = 'quarantined_segments'`).Scan(&tables); err != nil {
		return fmt.Errorf("check: quarantine: %w", err)
	}
	if tables == 0 {
		return nil
	}
	rows, err := tx.QueryContext(ctx, quarantineSelect+` ORDER BY qs.tenant, qs.queue_name, qs.partition_name, qs.base_offset`)
	if err != nil {
		return fmt.Errorf("check: quarantine: %w", err)
	}
	segs, err := scanQuarantine(rows)
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	for _, q := range segs {
		groups := "no group is past it yet"
		if len(q.PassedBy) > 0 {
			groups = fmt.Sprintf("groups past it, which did not receive offsets %d-%d unless they read them before: %s",
				q.FirstOffset, q.LastOffset, strings.Join(q.PassedBy, ", "))
		}
		rep.Findings = append(rep.Findings, combtype.Finding{Check: "quarantine", Tenant: q.Tenant, Queue: q.Queue,
			Partition: q.Partition, From: q.FirstOffset, To: q.LastOffset, HasOffsets: true,
			Detail: fmt.Sprintf("segment %d of %d messages set aside at %s (%s); %s",
				q.ID, q.Frames, q.QuarantinedAt.UTC().Format(time.RFC3339), q.Reason, groups)})
	}
	return nil
}

// RestoreQuarantined tries a quarantined segment of tenant again: if its
// stored copy now passes its checksum, decodes and decrypts (an operator
// repaired the bytes in quarantined_segments.data, or the right encryption
// key is now loaded), each of its messages is dead-lettered for every group
// past it and the quarantine row is removed, in one commit. Otherwise
// nothing changes and the error wraps ErrStillDamaged.
//
// The messages go to the DLQ rather than straight back into the log: their
// original dedup keys are still recorded, so a push with the same
// transactionIds would be dropped as duplicates, and a push with new ones
// would reach every group, including those that read them before the
// damage. From the DLQ the operator inspects them and re-drives them
// (POST /api/v1/dlq/redrive), which appends them under new keys
// (":redrive:<row id>" appended) exactly once. The damaged row in segments
// stays until retention takes it: a group that meets it later puts it aside
// again and it is listed anew.
func (s *Store) RestoreQuarantined(ctx context.Context, tenant string, id int64) (*combtype.RestoreResult, error) {
	return s.restoreQuarantined(ctx, tenant, id, purgeRowBatch, purgeRowBytes)
}

// restoreQuarantined is RestoreQuarantined writing whole groups in writes
// of about rows dead letters or bytes of payload (one group at least).
// The groups are taken in name order, and the segment's row keeps the
// last one written (restored_through): a restore cut short by a stop is
// finished by the same request sent again, each group dead-lettered once.
// The groups are those past the segment as each write reads them.
func (s *Store) restoreQuarantined(ctx context.Context, tenant string, id int64, rows, bytes int) (*combtype.RestoreResult, error) {
	res := &combtype.RestoreResult{ID: id}
	for first := true; ; first = false {
		// A step's figures are added once its write committed: a write
		// applied again (its commit retried) starts from them afresh.
		var step combtype.RestoreResult
		var done bool
		op := &writeOp{isolated: true, apply: func(w *wtx) error {
			step = combtype.RestoreResult{}
			var err error
			done, err = w.restoreStep(tenant, id, first, rows, bytes, &step)
			return err
		}}
		if err := s.submit(ctx, op); err != nil {
			if first {
				return nil, err
			}
			return nil, fmt.Errorf("restore quarantined segment %d: %w", id, err)
		}
		if step.Queue != "" {
			res.Queue, res.Frames = step.Queue, step.Frames
		}
		res.Groups = append(res.Groups, step.Groups...)
		res.DeadLettered += step.DeadLettered
		if done {
			return res, nil
		}
		if s.seekChunkDone != nil {
			s.seekChunkDone()
		}
		// Begun: the rest runs to its end whatever becomes of the request.
		ctx = context.WithoutCancel(ctx)
	}
}

// restoreStep dead-letters the frames of segment id for the next groups
// past it, about rows rows or bytes of payload, and removes the segment's
// row once no group is left; done is true then. The first step of a
// request tells why nothing can be restored; a later one that finds the
// row gone (another request finished it) is done. res gathers the steps.
func (w *wtx) restoreStep(tenant string, id int64, first bool, rows, bytes int, res *combtype.RestoreResult) (done bool, err error) {
	q, err := w.QueryContext(w.ctx, quarantineSelect+` WHERE qs.id = ? AND qs.tenant = ?`, id, tenant)
	if err != nil {
		return false, fmt.Errorf("read quarantined segment %d: %w", id, err)
	}
	segs, err := scanQuarantine(q)
	if err != nil {
		return false, err
	}
	if len(segs) == 0 {
		if first {
			return false, fmt.Errorf("%w: %d", combtype.ErrQuarantineNotFound, id)
		}
		return true, nil
	}
	seg := segs[0]
	var codec, rawSize int
	var checksum int64
	var data []byte
	var createdAt int64
	var through sql.NullString
	if err := w.QueryRowContext(w.ctx, `SELECT codec, raw_size, checksum, data, segment_created_at, restored_through
		FROM quarantined_segments WHERE id = ?`, id).Scan(&codec, &rawSize, &checksum, &data, &createdAt, &through); err != nil {
		return false, fmt.Errorf("read quarantined segment %d: %w", id, err)
	}
	frames, err := decodeSegment(codec, rawSize, uint32(checksum), data, int(seg.Frames))
	if err != nil {
		return false, fmt.Errorf("%w: %v", combtype.ErrStillDamaged, err)
	}
	size := 0
	for i := range frames {
		if _, err := w.s.DecryptPayload(frames[i].Payload); err != nil {
			return false, fmt.Errorf("%w: frame %d: %v", combtype.ErrStillDamaged, seg.FirstOffset+int64(i), err)
		}
		size += len(frames[i].Payload)
	}
	groups := seg.PassedBy // in name order
	if through.Valid {
		groups = groups[sort.SearchStrings(groups, through.String+"\x00"):]
	}
	if len(groups) == 0 && !through.Valid {
		return false, fmt.Errorf("%w: its groups will meet it and put it aside again", combtype.ErrNoGroupPast)
	}
	take := 0
	for take < len(groups) && (take == 0 || ((take+1)*len(frames) <= rows && (take+1)*size <= bytes)) {
		take++
	}
	note := fmt.Sprintf("restored from quarantined segment %d (%s)", id, seg.Reason)
	now := micros(w.now)
	for _, g := range groups[:take] {
		for i := range frames {
			f := &frames[i]
			off := seg.FirstOffset + int64(i)
			// The payload is kept as the segment stored it, sealed
			// or escaped, as every DLQ row of its queue is.
			if _, err := w.ExecContext(w.ctx, `INSERT INTO dlq (id, message_id, tenant, queue_name, partition_name, partition_uuid,
				group_name, txn_id, offset, trace_id, producer_sub, payload, error_message, retry_count, created_at, failed_at)
				VALUES (`+nextDLQID+`, ?, ?, ?, ?, ?, ?, ?, ?, NULLIF(?, ''), NULLIF(?, ''), ?, ?, 0, ?, ?)`,
				w.s.messageID(seg.PartitionID, off), tenant, seg.Queue, seg.Partition, seg.PartitionID, g, f.TxnID, off,
				f.TraceID, f.ProducerSub, f.Payload, note, createdAt, now); err != nil {
				return false, fmt.Errorf("dead-letter restored message: %w", err)
			}
		}
	}
	res.Queue, res.Frames = seg.Queue, len(frames)
	res.Groups = append(res.Groups, groups[:take]...)
	res.DeadLettered += take * len(frames)
	if take == len(groups) {
		if _, err := w.ExecContext(w.ctx, `DELETE FROM quarantined_segments WHERE id = ?`, id); err != nil {
			return false, fmt.Errorf("remove quarantined segment %d: %w", id, err)
		}
		return true, nil
	}
	if _, err := w.ExecContext(w.ctx, `UPDATE quarantined_segments SET restored_through = ? WHERE id = ?`,
		groups[take-1], id); err != nil {
		return false, fmt.Errorf("record the restore of quarantined segment %d: %w", id, err)
	}
	return false, nil
}
