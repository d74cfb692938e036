package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/comb-broker/comb/combtype"
)

// Check verifies the database file at path without changing it: SQLite's
// integrity check, every segment's checksum and encoding, the log
// invariants (each partition's segments tile [log_start, last_offset] with
// no gap or overlap, created_at never decreases with the offset, cursors,
// leases, dedup keys and tombstones inside their partition) and rows whose
// owner is gone. It works on a file a running server has open, through
// SQLite's connections only, and refuses one whose running server's WAL is
// gone from the directory (ErrStale). An error means the check could not
// run; what it found is in the report, damage SQLite meets while reading
// included: a step it stops is a finding, and the next steps still run.
func Check(ctx context.Context, path string) (*combtype.CheckReport, error) {
	return CheckProgress(ctx, path, nil)
}

// CheckProgress is Check telling fn how far it has come: a phase at a
// time (integrity, segments, rows), from this goroutine and from a
// watcher's, never after it returns. fn must return at once. A nil fn
// checks exactly as Check does; a non-nil one adds two reads (the page
// and segment counts) to the same snapshot and changes nothing found.
func CheckProgress(ctx context.Context, path string, fn func(combtype.Progress)) (*combtype.CheckReport, error) {
	inUse, err := checkNotStale(path)
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	// A WAL left by a crash is read as recovery will read it, before the
	// connection below replays it (waldamage.go); a server's WAL is still
	// being written, and its damage, if any, was found when it started.
	if err := checkSideFiles(path); err != nil {
		return nil, err
	}
	var wal walScan
	if !inUse {
		if wal, err = scanWAL(walPath(path)); err != nil {
			return nil, fmt.Errorf("check: %w", err)
		}
	}
	db, err := openReadOnly(ctx, path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	// One read transaction: every query sees the same snapshot, even while
	// a server keeps writing.
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("check: begin: %w", err)
	}
	defer tx.Rollback()
	rep := &combtype.CheckReport{}
	latest, err := latestMigration()
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	version, mend, err := schemaVersion(ctx, tx, latest)
	if err != nil {
		return nil, fmt.Errorf("check: schema version: %w", err)
	}
	rep.SchemaVersion = version
	if mend {
		rep.Findings = append(rep.Findings, combtype.Finding{Check: "schema", Detail: fmt.Sprintf(
			"goose_db_version's rows do not say the schema's version, %d (comb serve writes them again when it starts)", version)})
	}
	if wal.dropped > 0 && wal.header {
		rep.Findings = append(rep.Findings, combtype.Finding{Check: "wal", Detail: fmt.Sprintf(
			"the WAL's header is damaged: SQLite's recovery reads none of the WAL and drops its %d commits that still verify; comb serve keeps a copy of the WAL when it starts (docs/operations.md, The WAL)",
			wal.dropped)})
	} else if wal.dropped > 0 {
		rep.Findings = append(rep.Findings, combtype.Finding{Check: "wal", Detail: fmt.Sprintf(
			"the WAL is damaged at frame %d (byte %d): SQLite's recovery keeps the %d commits before it and drops the %d after it that still verify; comb serve keeps a copy of the WAL when it starts (docs/operations.md, The WAL)",
			wal.badFrame, wal.droppedAt, wal.kept, wal.dropped)})
	}
	c := &checker{progress: fn, on: fn != nil}
	if fn == nil {
		c.progress = func(combtype.Progress) {}
	}
	steps := []struct {
		name string
		run  func(context.Context, *sql.Tx, *combtype.CheckReport) error
	}{{"integrity", c.integrity}, {"schema", checkSchemaDrift}, {"segments", c.segments}, {"rows", c.rows}, {"quarantine", checkQuarantine}}
	for _, step := range steps {
		err := step.run(ctx, tx, rep)
		if err == nil {
			continue
		}
		if !isMalformed(err) {
			return nil, err
		}
		// A damaged page stops the statement that meets it: what the step
		// found before stays in the report, and the damage is a finding,
		// not a failure to check (the file is what needs a look).
		rep.Findings = append(rep.Findings, combtype.Finding{Check: step.name,
			Detail: "SQLite stopped reading, the rest of this check was not made: " + sqliteMessage(err)})
	}
	return rep, nil
}

// checker carries a check's progress callback through its steps.
type checker struct {
	progress func(combtype.Progress)
	on       bool // false: no reads beyond the check's own
}

func (c *checker) integrity(ctx context.Context, tx *sql.Tx, rep *combtype.CheckReport) error {
	if !c.on {
		return checkIntegrity(ctx, tx, rep)
	}
	total, err := pageBytes(ctx, tx)
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	stop := readProgress("integrity", total, c.progress)
	err = checkIntegrity(ctx, tx, rep)
	stop()
	if err == nil {
		c.progress(combtype.Progress{Phase: "integrity", Done: total, Total: total, Unit: combtype.UnitBytes})
	}
	return err
}

func (c *checker) segments(ctx context.Context, tx *sql.Tx, rep *combtype.CheckReport) error {
	var total int64
	if c.on {
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM segments`).Scan(&total); err != nil {
			return fmt.Errorf("check: count segments: %w", err)
		}
	}
	return checkSegments(ctx, tx, rep, func(done int64) {
		c.progress(combtype.Progress{Phase: "segments", Done: done, Total: total, Unit: combtype.UnitSegments})
	})
}

func (c *checker) rows(ctx context.Context, tx *sql.Tx, rep *combtype.CheckReport) error {
	return checkRows(ctx, tx, rep, func(done int64) {
		c.progress(combtype.Progress{Phase: "rows", Done: done, Total: int64(len(rowChecks)), Unit: combtype.UnitChecks})
	})
}

func checkIntegrity(ctx context.Context, tx *sql.Tx, rep *combtype.CheckReport) error {
	rows, err := tx.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return fmt.Errorf("check: integrity: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return fmt.Errorf("check: integrity: %w", err)
		}
		if line != "ok" {
			rep.Findings = append(rep.Findings, combtype.Finding{Check: "integrity", Detail: line})
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("check: integrity: %w", err)
	}
	return nil
}

// partInfo is a partition as checkSegments walks it.
type partInfo struct {
	id                   int64
	tenant, queue, name  string
	lastOffset, logStart int64
}

func (p *partInfo) finding(check string, from, to int64, detail string, args ...any) combtype.Finding {
	return combtype.Finding{Check: check, Tenant: p.tenant, Queue: p.queue, Partition: p.name,
		From: from, To: to, HasOffsets: true, Detail: fmt.Sprintf(detail, args...)}
}

// checkSegments reads every segment once, in offset order per partition,
// verifying its checksum and frames and that the segments tile the log.
func checkSegments(ctx context.Context, tx *sql.Tx, rep *combtype.CheckReport, done func(int64)) error {
	parts := map[int64]*partInfo{}
	rows, err := tx.QueryContext(ctx, `SELECT p.id, q.tenant, q.name, p.name, p.last_offset, p.log_start
		FROM partitions p JOIN queues q ON q.id = p.queue_id`)
	if err != nil {
		return fmt.Errorf("check: partitions: %w", err)
	}
	for rows.Next() {
		p := &partInfo{}
		if err := rows.Scan(&p.id, &p.tenant, &p.queue, &p.name, &p.lastOffset, &p.logStart); err != nil {
			rows.Close()
			return fmt.Errorf("check: partitions: %w", err)
		}
		parts[p.id] = p
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("check: partitions: %w", err)
	}
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM queues`).Scan(&rep.Queues); err != nil {
		return fmt.Errorf("check: queues: %w", err)
	}
	rep.Partitions = int64(len(parts))

	// next is where the partition being walked expects its next segment.
	// lastID is the id of the segment before: ids follow commit order
	// within a partition, which a missing cursor of a group subscribed to
	// new messages is read by (store/implied.go).
	type walk struct {
		next, lastAt, lastID int64
	}
	walked := map[int64]*walk{}
	rows, err = tx.QueryContext(ctx, `SELECT id, partition_id, base_offset, frame_count, created_at, codec, raw_size, checksum, data
		FROM segments ORDER BY partition_id, base_offset`)
	if err != nil {
		return fmt.Errorf("check: segments: %w", err)
	}
	defer rows.Close()
	// One segment's bytes at a time, held no longer than the row: RawBytes
	// is the driver's copy itself, and scratch is decompressed into again
	// and again (segment.Verify), so what the walk keeps is one segment.
	var scratch []byte
	for rows.Next() {
		var id, pid, base, count, createdAt, checksum int64
		var codec, rawSize int
		var data sql.RawBytes
		if err := rows.Scan(&id, &pid, &base, &count, &createdAt, &codec, &rawSize, &checksum, &data); err != nil {
			return fmt.Errorf("check: segments: %w", err)
		}
		rep.Segments++
		rep.Frames += count
		done(rep.Segments)
		last := base + count - 1
		p := parts[pid]
		if p == nil {
			rep.Findings = append(rep.Findings, combtype.Finding{Check: "orphan", From: base, To: last, HasOffsets: true,
				Detail: fmt.Sprintf("segment of partition id %d, which does not exist", pid)})
			continue
		}
		var bad error
		if scratch, bad = verifySegment(codec, rawSize, uint32(checksum), data, int(count), scratch); bad != nil {
			rep.Findings = append(rep.Findings, p.finding("checksum", base, last, "%v", bad))
		}
		w := walked[pid]
		if w == nil {
			w = &walk{next: p.logStart, lastAt: createdAt}
			walked[pid] = w
		}
		switch {
		case base > w.next:
			rep.Findings = append(rep.Findings, p.finding("tiling", w.next, base-1, "gap: no segment holds these offsets"))
		case base < w.next:
			rep.Findings = append(rep.Findings, p.finding("tiling", base, min(w.next-1, last), "overlap: segment at %d starts before %d", base, w.next))
		}
		if createdAt < w.lastAt {
			rep.Findings = append(rep.Findings, p.finding("created_at", base, last, "created_at %d is before the previous segment's %d", createdAt, w.lastAt))
		}
		if id < w.lastID {
			rep.Findings = append(rep.Findings, p.finding("sequence", base, last, "segment id %d is below the previous segment's %d", id, w.lastID))
		}
		w.next, w.lastAt, w.lastID = max(w.next, last+1), max(w.lastAt, createdAt), max(w.lastID, id)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("check: segments: %w", err)
	}
	for id, p := range parts {
		end := p.logStart
		if w := walked[id]; w != nil {
			end = w.next
		}
		switch {
		case end < p.lastOffset+1:
			rep.Findings = append(rep.Findings, p.finding("tiling", end, p.lastOffset, "missing: last_offset is %d but the segments end at %d", p.lastOffset, end-1))
		case end > p.lastOffset+1:
			rep.Findings = append(rep.Findings, p.finding("tiling", p.lastOffset+1, end-1, "segments run past last_offset %d", p.lastOffset))
		}
	}
	return nil
}

// rowChecks are the invariants that hold row by row. Each query returns
// (tenant, queue, partition, from, to, detail) of every violation; queue ”
// marks a row whose owner is gone.
var rowChecks = []struct{ check, query string }{
	{"bounds", `SELECT q.tenant, q.name, p.name, c.committed, c.committed,
			'cursor of group ' || quote(c.group_name) || ' outside [-1, last_offset ' || p.last_offset || ']'
		FROM cursors c JOIN partitions p ON p.id = c.partition_id JOIN queues q ON q.id = p.queue_id
		WHERE c.committed > p.last_offset OR c.committed < -1`},
	{"bounds", `SELECT q.tenant, q.name, p.name, c.lease_from, c.lease_to,
			'lease of group ' || quote(c.group_name) || ' outside [0, last_offset ' || p.last_offset || ']'
		FROM cursors c JOIN partitions p ON p.id = c.partition_id JOIN queues q ON q.id = p.queue_id
		WHERE c.lease_id IS NOT NULL AND (c.lease_from < 0 OR c.lease_to > p.last_offset OR c.lease_from > c.lease_to)`},
	{"bounds", `SELECT q.tenant, q.name, p.name, t.offset, t.offset,
			'dedup key ' || t.txn_key || ' past last_offset ' || p.last_offset
		FROM txids t JOIN partitions p ON p.id = t.partition_id JOIN queues q ON q.id = p.queue_id
		WHERE t.offset > p.last_offset OR t.offset < 0`},
	{"bounds", `SELECT q.tenant, q.name, p.name, t.offset, t.offset,
			'tombstone past last_offset ' || p.last_offset
		FROM tombstones t JOIN partitions p ON p.id = t.partition_id JOIN queues q ON q.id = p.queue_id
		WHERE t.offset > p.last_offset`},
	{"bounds", `SELECT q.tenant, q.name, p.name, p.log_start, p.last_offset, 'log_start past last_offset + 1'
		FROM partitions p JOIN queues q ON q.id = p.queue_id WHERE p.log_start > p.last_offset + 1 OR p.log_start < 0`},
	{"orphan", `SELECT '', '', '', NULL, NULL, 'partition ' || quote(p.name) || ' of queue id ' || p.queue_id || ', which does not exist'
		FROM partitions p WHERE NOT EXISTS (SELECT 1 FROM queues q WHERE q.id = p.queue_id)`},
	{"orphan", `SELECT '', '', '', c.committed, c.committed, 'cursor of group ' || quote(c.group_name) || ' on partition id ' || c.partition_id || ', which does not exist'
		FROM cursors c WHERE NOT EXISTS (SELECT 1 FROM partitions p WHERE p.id = c.partition_id)`},
	{"orphan", `SELECT '', '', '', NULL, NULL, COUNT(*) || ' dedup keys of partition id ' || t.partition_id || ', which does not exist'
		FROM txids t WHERE NOT EXISTS (SELECT 1 FROM partitions p WHERE p.id = t.partition_id) GROUP BY t.partition_id`},
	{"orphan", `SELECT '', '', '', NULL, NULL, COUNT(*) || ' tombstones of partition id ' || t.partition_id || ', which does not exist'
		FROM tombstones t WHERE NOT EXISTS (SELECT 1 FROM partitions p WHERE p.id = t.partition_id) GROUP BY t.partition_id`},
	{"orphan", `SELECT '', '', '', NULL, NULL, 'subscription of group ' || quote(s.group_name) || ' to queue id ' || s.queue_id || ', which does not exist'
		FROM subscriptions s WHERE NOT EXISTS (SELECT 1 FROM queues q WHERE q.id = s.queue_id)`},
	{"orphan", `SELECT '', '', '', NULL, NULL, COUNT(*) || ' snapshot cursors of snapshot id ' || c.snapshot_id || ', which does not exist'
		FROM snapshot_cursors c WHERE NOT EXISTS (SELECT 1 FROM snapshots s WHERE s.id = c.snapshot_id) GROUP BY c.snapshot_id`},
	{"orphan", `SELECT '', '', '', NULL, NULL, COUNT(*) || ' trace names of trace id ' || n.trace_id || ', which does not exist'
		FROM trace_names n WHERE NOT EXISTS (SELECT 1 FROM traces t WHERE t.id = n.trace_id) GROUP BY n.trace_id`},
}

func checkRows(ctx context.Context, tx *sql.Tx, rep *combtype.CheckReport, done func(int64)) error {
	for i, c := range rowChecks {
		done(int64(i))
		if err := func() error {
			rows, err := tx.QueryContext(ctx, c.query)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				f := combtype.Finding{Check: c.check}
				var from, to sql.NullInt64
				if err := rows.Scan(&f.Tenant, &f.Queue, &f.Partition, &from, &to, &f.Detail); err != nil {
					return err
				}
				if from.Valid && to.Valid {
					f.From, f.To, f.HasOffsets = from.Int64, to.Int64, true
				}
				rep.Findings = append(rep.Findings, f)
			}
			return rows.Err()
		}(); err != nil {
			return fmt.Errorf("check %s: %w", c.check, err)
		}
	}
	done(int64(len(rowChecks)))
	return nil
}
