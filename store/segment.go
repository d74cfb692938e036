package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/pierrec/lz4/v4"
)

// Frame is one message as stored inside a segment.
type Frame struct {
	TxnID       string
	TraceID     string // "" when absent
	ProducerSub string // "" when absent
	Payload     []byte // raw JSON, never re-encoded
}

const (
	codecRaw = 0
	codecLZ4 = 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodedSegment is a segment ready to insert.
type encodedSegment struct {
	codec    int
	rawSize  int
	checksum uint32
	data     []byte
}

// appendFrame appends f to buf as four length-prefixed fields.
func appendFrame(buf []byte, f *Frame) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(f.TxnID)))
	buf = append(buf, f.TxnID...)
	buf = binary.AppendUvarint(buf, uint64(len(f.TraceID)))
	buf = append(buf, f.TraceID...)
	buf = binary.AppendUvarint(buf, uint64(len(f.ProducerSub)))
	buf = append(buf, f.ProducerSub...)
	buf = binary.AppendUvarint(buf, uint64(len(f.Payload)))
	buf = append(buf, f.Payload...)
	return buf
}

// encodeSegment packs frames and compresses them with the lz4 block format,
// which decompresses about 1.8x faster than the frame format. Frames that do
// not compress are stored raw.
func encodeSegment(c *lz4.Compressor, frames []Frame) (encodedSegment, error) {
	size := 0
	for i := range frames {
		size += len(frames[i].TxnID) + len(frames[i].TraceID) + len(frames[i].ProducerSub) + len(frames[i].Payload) + 4*binary.MaxVarintLen32
	}
	raw := make([]byte, 0, size)
	for i := range frames {
		raw = appendFrame(raw, &frames[i])
	}
	seg := encodedSegment{codec: codecRaw, rawSize: len(raw), data: raw}
	dst := make([]byte, lz4.CompressBlockBound(len(raw)))
	n, err := c.CompressBlock(raw, dst)
	if err != nil {
		return encodedSegment{}, fmt.Errorf("compress segment: %w", err)
	}
	if n > 0 && n < len(raw) {
		seg.codec, seg.data = codecLZ4, dst[:n]
	}
	seg.checksum = crc32.Checksum(seg.data, castagnoli)
	return seg, nil
}

// segmentBytes verifies a stored segment and returns its packed frames.
func segmentBytes(codec, rawSize int, checksum uint32, data []byte) ([]byte, error) {
	if got := crc32.Checksum(data, castagnoli); got != checksum {
		return nil, fmt.Errorf("%w: checksum %08x, stored %08x", ErrCorrupt, got, checksum)
	}
	switch codec {
	case codecRaw:
		return data, nil
	case codecLZ4:
		raw := make([]byte, rawSize)
		n, err := lz4.UncompressBlock(data, raw)
		if err != nil {
			return nil, fmt.Errorf("%w: decompress: %v", ErrCorrupt, err)
		}
		if n != rawSize {
			return nil, fmt.Errorf("%w: decompressed %d bytes, want %d", ErrCorrupt, n, rawSize)
		}
		return raw, nil
	default:
		return nil, fmt.Errorf("%w: unknown codec %d", ErrCorrupt, codec)
	}
}

// decodeSegment verifies and unpacks a stored segment into want frames.
func decodeSegment(codec, rawSize int, checksum uint32, data []byte, want int) ([]Frame, error) {
	raw, err := segmentBytes(codec, rawSize, checksum, data)
	if err != nil {
		return nil, err
	}
	frames := make([]Frame, 0, want)
	for len(raw) > 0 {
		var f Frame
		var fields [4][]byte
		for i := range fields {
			n, w := binary.Uvarint(raw)
			if w <= 0 || uint64(len(raw)-w) < n {
				return nil, fmt.Errorf("%w: truncated frame %d", ErrCorrupt, len(frames))
			}
			fields[i] = raw[w : w+int(n)]
			raw = raw[w+int(n):]
		}
		f.TxnID, f.TraceID, f.ProducerSub, f.Payload = string(fields[0]), string(fields[1]), string(fields[2]), fields[3]
		frames = append(frames, f)
	}
	if len(frames) != want {
		return nil, fmt.Errorf("%w: %d frames, want %d", ErrCorrupt, len(frames), want)
	}
	return frames, nil
}

// scanFrames calls fn for every stored frame of partition in [from, to], in
// offset order. Offsets that retention removed are skipped.
func (s *Store) scanFrames(ctx context.Context, db querier, partitionID, from, to int64, fn func(off, createdAt int64, f *Frame) error) error {
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
func (s *Store) segmentFrames(ctx context.Context, segmentID int64, want int) ([]Frame, error) {
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
