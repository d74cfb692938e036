package store

import (
	"context"
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
	rows, err := db.QueryContext(ctx, `SELECT base_offset, frame_count, created_at, codec, raw_size, checksum, data FROM segments
		WHERE partition_id = +?1 AND base_offset <= ?3 AND base_offset >= COALESCE(
			(SELECT base_offset FROM segments WHERE partition_id = +?1 AND base_offset <= ?2 ORDER BY base_offset DESC LIMIT 1), 0)
		ORDER BY base_offset`, partitionID, from, to)
	if err != nil {
		return fmt.Errorf("read segments: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var base, count, createdAt, sum int64
		var codec, rawSize int
		var data []byte
		if err := rows.Scan(&base, &count, &createdAt, &codec, &rawSize, &sum, &data); err != nil {
			return fmt.Errorf("scan segment: %w", err)
		}
		frames, err := decodeSegment(codec, rawSize, uint32(sum), data, int(count))
		if err != nil {
			return &segmentError{partitionID: partitionID, base: base, count: count, err: err}
		}
		for i := range frames {
			off := base + int64(i)
			if off < from || off > to {
				continue
			}
			if frames[i].Payload, err = s.DecryptPayload(frames[i].Payload); err != nil {
				return &segmentError{partitionID: partitionID, base: base, count: count,
					err: fmt.Errorf("frame %d: %w", off, err)}
			}
			if err := fn(off, createdAt, &frames[i]); err != nil {
				return err
			}
		}
	}
	return rows.Err()
}

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
		return nil, fmt.Errorf("read segment %d: %w", segmentID, err)
	}
	frames, err := decodeSegment(codec, rawSize, uint32(sum), data, want)
	if err != nil {
		return nil, &segmentError{base: base, count: int64(want), err: err}
	}
	return frames, nil
}
