package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/store/segment"
)

// decodeSegment verifies and unpacks a stored segment into want frames;
// its errors match ErrCorrupt.
func decodeSegment(codec, rawSize int, checksum uint32, data []byte, want int) ([]segment.Frame, error) {
	frames, _, err := decodeSegmentRaw(codec, rawSize, checksum, data, want)
	return frames, err
}

// decodeSegmentRaw is decodeSegment, which also returns the packed frames
// the frames' payloads are slices of.
func decodeSegmentRaw(codec, rawSize int, checksum uint32, data []byte, want int) ([]segment.Frame, []byte, error) {
	raw, err := segment.Bytes(segment.Encoded{Codec: codec, RawSize: rawSize, Checksum: checksum, Data: data})
	if err != nil {
		return nil, nil, fromCodec(err)
	}
	frames, err := segment.Unpack(raw, want)
	return frames, raw, fromCodec(err)
}

// verifySegment checks a stored segment of want frames as decodeSegment
// does and unpacks nothing, decompressing into buf (segment.Verify); it
// returns the buffer for the next call.
func verifySegment(codec, rawSize int, checksum uint32, data []byte, want int, buf []byte) ([]byte, error) {
	buf, err := segment.Verify(segment.Encoded{Codec: codec, RawSize: rawSize, Checksum: checksum, Data: data}, want, buf)
	return buf, fromCodec(err)
}

// fromCodec makes an error of the segment codec match the store's own
// sentinel as well: ErrCorrupt or ErrNoEncryptionKey.
func fromCodec(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, segment.ErrNoKey):
		return &codecError{err: err, is: combtype.ErrNoEncryptionKey}
	case errors.Is(err, segment.ErrCorrupt):
		return &codecError{err: err, is: combtype.ErrCorrupt}
	}
	return err
}

type codecError struct{ err, is error }

func (e *codecError) Error() string   { return e.err.Error() }
func (e *codecError) Unwrap() []error { return []error{e.err, e.is} }

// scanFrames calls fn for every stored frame of partition in [from, to], in
// offset order. Offsets that retention removed are skipped.
func (s *Store) scanFrames(ctx context.Context, db querier, partitionID, from, to int64, fn func(off, createdAt int64, f *segment.Frame) error) error {
	return s.scanSegments(ctx, db, partitionID, from, to, func(base, count, createdAt int64, frames []segment.Frame) error {
		for i := range frames {
			off := base + int64(i)
			if off < from || off > to {
				continue
			}
			var err error
			if frames[i].Payload, err = s.DecryptPayload(frames[i].Payload); err != nil {
				return &segmentError{partitionID: partitionID, base: base, count: count,
					err: fmt.Errorf("frame %d: %w", off, err)}
			}
			if err := fn(off, createdAt, &frames[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// scanSegments calls fn with the frames of each stored segment of
// partition that holds offsets in [from, to], in offset order, their
// payloads still sealed (DecryptPayload opens one). The frames are the
// call's own; their payload bytes may be shared, never to be written.
func (s *Store) scanSegments(ctx context.Context, db querier, partitionID, from, to int64, fn func(base, count, createdAt int64, frames []segment.Frame) error) error {
	// A segment too large to keep is read only if no other reader holds
	// it decoded (sharedSegs); its frames unpacked from shared bytes are
	// this call's own, their payloads not to be written.
	rows, err := db.QueryContext(ctx, `SELECT id, base_offset, frame_count, created_at, codec, raw_size, checksum,
		CASE WHEN raw_size > ?4 THEN NULL ELSE data END FROM segments
		WHERE partition_id = +?1 AND base_offset <= ?3 AND base_offset >= COALESCE(
			(SELECT base_offset FROM segments WHERE partition_id = +?1 AND base_offset <= ?2 ORDER BY base_offset DESC LIMIT 1), 0)
		ORDER BY base_offset`, partitionID, from, to, sharedFrom)
	if err != nil {
		return fmt.Errorf("read segments: %w", err)
	}
	type stored struct {
		m           cachedMeta
		codec, size int
		data        []byte
	}
	var segs []stored
	for rows.Next() {
		g := stored{m: cachedMeta{partitionID: partitionID}}
		if err := rows.Scan(&g.m.id, &g.m.base, &g.m.count, &g.m.createdAt, &g.codec, &g.size, &g.m.checksum, &g.data); err != nil {
			rows.Close()
			return fmt.Errorf("scan segment: %w", err)
		}
		segs = append(segs, g)
	}
	// Closed before a large segment's data is read on the same connection.
	if err := rows.Close(); err != nil {
		return fmt.Errorf("read segments: %w", err)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read segments: %w", err)
	}
	for i := 1; i < len(segs); i++ {
		s.checkFollows(segs[i-1].m, segs[i].m)
	}
	for _, g := range segs {
		base, count, createdAt := g.m.base, g.m.count, g.m.createdAt
		var frames []segment.Frame
		if g.size > sharedFrom {
			frames = s.shared.get(g.m)
		}
		if frames == nil {
			if g.size > sharedFrom {
				if err := db.QueryRowContext(ctx, `SELECT data FROM segments WHERE id = ?`, g.m.id).Scan(&g.data); err != nil {
					return fmt.Errorf("read segment: %w", err)
				}
			}
			s.stats.SegmentsDecoded.Add(1)
			var raw []byte
			if frames, raw, err = decodeSegmentRaw(g.codec, g.size, uint32(g.m.checksum), g.data, int(count)); err != nil {
				return &segmentError{partitionID: partitionID, base: base, count: count, err: err}
			}
			if g.size > sharedFrom {
				s.shared.put(g.m, raw)
			}
		}
		if err := fn(base, count, createdAt, frames); err != nil {
			return err
		}
	}
	return nil
}

// errSegmentGone is a segment listed by one statement and removed (by
// retention, a queue's purge) before the next read it: the listing goes
// on as if it had been listed after. It was a 500 for a message listing
// that met a retention sweep (about 1 in 100 beside a sweep every 200 ms).
var errSegmentGone = errors.New("segment removed since it was listed")

// segmentError is a stored segment that cannot be read.
type segmentError struct {
	partitionID, base, count int64
	err                      error
}

func (e *segmentError) Error() string {
	return fmt.Sprintf("segment %d of partition %d: %v", e.base, e.partitionID, e.err)
}

func (e *segmentError) Unwrap() error { return e.err }

// segmentFrames decodes one segment's frames without opening payloads:
// the listing shows ids and metadata only. A damaged segment is a
// *segmentError without its partition, which the caller knows.
func (s *Store) segmentFrames(ctx context.Context, segmentID int64, want int) ([]segment.Frame, error) {
	var codec, rawSize int
	var sum, base int64
	var data []byte
	if err := s.r.QueryRowContext(ctx, `SELECT codec, raw_size, checksum, data, base_offset FROM segments WHERE id = ?`, segmentID).
		Scan(&codec, &rawSize, &sum, &data, &base); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, errSegmentGone
		}
		return nil, fmt.Errorf("read segment %d: %w", segmentID, err)
	}
	frames, err := decodeSegment(codec, rawSize, uint32(sum), data, want)
	if err != nil {
		return nil, &segmentError{base: base, count: int64(want), err: err}
	}
	return frames, nil
}
