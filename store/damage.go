package store

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/comb-broker/comb/combtype"
)

// Every path that reads segment bytes treats one that fails its checksum
// or does not decode as a claim does: it is put aside where an operator
// sees it (quarantined_segments, the Quarantined counter, the log) and the
// path goes on without its frames, instead of failing. A claim also moves
// the group past it (see wtx.quarantine); the other paths move no cursor:
//
//   - a push's duplicate check and a transaction's: a key found only in a
//     damaged segment is not a duplicate, so the message is stored again
//     rather than lost behind a copy nobody can read (txnOffsets);
//   - an ack or a trace naming a message there: not found (txnOffsets);
//   - a failed ack's copy to the DLQ: the copy is the quarantined one
//     (deadLetter);
//   - the messages listing and the one-message lookup: the damaged
//     segment's messages are left out, or not found.

// setAside puts the damaged segment bad aside, once, whoever meets it
// first, without moving any cursor.
func (w *wtx) setAside(bad *segmentError) error {
	res, err := w.ExecContext(w.ctx, `INSERT INTO quarantined_segments (tenant, queue_name, partition_name, partition_uuid,
		base_offset, frame_count, reason, segment_created_at, codec, raw_size, checksum, data, quarantined_at)
		SELECT q.tenant, q.name, p.name, p.uuid, s.base_offset, s.frame_count, ?, s.created_at, s.codec, s.raw_size,
			s.checksum, s.data, ?
		FROM segments s JOIN partitions p ON p.id = s.partition_id JOIN queues q ON q.id = p.queue_id
		WHERE s.partition_id = ? AND s.base_offset = ?
		ON CONFLICT DO NOTHING`, bad.err.Error(), micros(w.now), bad.partitionID, bad.base)
	if err != nil {
		return fmt.Errorf("quarantine segment: %w", err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		w.s.stats.Quarantined.Add(1)
		w.s.log.Error("segment put aside: it fails its checksum or does not decode", "partitionId", bad.partitionID,
			"baseOffset", bad.base, "frames", bad.count, "err", bad.err)
	}
	return nil
}

// setAsideLater puts aside the damaged segments a reader met, in a write
// of their own. It only logs a failure: the read that met them has its
// answer already, and the next path to meet them tries again.
func (s *Store) setAsideLater(ctx context.Context, damaged []*segmentError) {
	if len(damaged) == 0 {
		return
	}
	err := s.submit(ctx, &writeOp{apply: func(w *wtx) error {
		for _, bad := range damaged {
			if err := w.setAside(bad); err != nil {
				return err
			}
		}
		return nil
	}})
	if err != nil {
		s.log.Warn("could not put aside damaged segments a read met", "segments", len(damaged), "err", err)
	}
}

// damagedSegment returns err as a *segmentError when it is damage (a
// checksum or decoding failure), and nil otherwise: a key that does not
// open a payload is not damage.
func damagedSegment(err error) *segmentError {
	var bad *segmentError
	if errors.As(err, &bad) && errors.Is(err, combtype.ErrCorrupt) {
		return bad
	}
	return nil
}

// Segment rows that do not follow each other.
//
// A partition's segments tile its log: each begins where the one before
// it ends. A row edited or damaged outside comb (bit rot in base_offset,
// a row deleted by hand) breaks that without failing any checksum: the
// offsets between the two are read from the wrong segment or not at all,
// and a group's pops stopped at the hole or skipped past it with nothing
// said (comb check reports it as a tiling finding). Every read of a run
// of segments checks that they follow each other and logs the first
// break it meets in each place, once.

// tilingBreaks remembers the breaks already logged.
type tilingBreaks struct {
	mu     sync.Mutex
	logged map[[2]int64]bool // partition id, base offset of the later segment
}

// checkTiling logs, once, each place where metas, a partition's segments
// in base_offset order as one read listed them, do not follow each other.
func (s *Store) checkTiling(metas []cachedMeta) {
	for i := 1; i < len(metas); i++ {
		s.checkFollows(metas[i-1], metas[i])
	}
}

// checkFollows logs, once, m not beginning where prev, the segment before
// it, ends.
func (s *Store) checkFollows(prev, m cachedMeta) {
	if m.base == prev.base+prev.count {
		return
	}
	k := [2]int64{m.partitionID, m.base}
	s.tiling.mu.Lock()
	seen := s.tiling.logged[k]
	if !seen {
		if s.tiling.logged == nil {
			s.tiling.logged = map[[2]int64]bool{}
		}
		s.tiling.logged[k] = true
	}
	s.tiling.mu.Unlock()
	if !seen {
		s.log.Error("a partition's segments do not follow each other (a row edited or damaged outside comb): "+
			"the offsets between them are not delivered as they were stored; run comb check",
			"partitionId", m.partitionID, "segmentBase", prev.base, "segmentFrames", prev.count,
			"nextBase", m.base, "nextFrames", m.count)
	}
}
