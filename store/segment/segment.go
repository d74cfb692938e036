// Package segment is comb's segment codec: how a batch of messages becomes
// the one blob a segment row stores, and back. A segment is frames packed
// back to back, compressed with the lz4 block format when that helps, and
// covered by a CRC-32C checksum; each frame's payload may be sealed with
// AES-256-GCM.
//
// The codec is pure: it reads and writes byte slices only, and imports
// nothing else of comb. The store owns the rows; this package owns what is
// inside their data column, and its fuzz tests hold that no stored bytes,
// however damaged, make it panic or decode silently wrong.
package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/pierrec/lz4/v4"
)

// ErrCorrupt is returned, wrapped with what failed, when stored bytes fail
// their checksum or do not decode.
var ErrCorrupt = errors.New("segment corrupt")

// Frame is one message as stored inside a segment.
type Frame struct {
	TxnID       string
	TraceID     string // "" when absent
	ProducerSub string // "" when absent
	Payload     []byte // raw JSON, never re-encoded; sealed when encrypted
}

// Codecs of the data column.
const (
	Raw = 0 // frames stored as packed
	LZ4 = 1 // frames compressed with the lz4 block format
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Encoded is a segment as stored: the codec, raw_size, checksum and data
// columns of its row.
type Encoded struct {
	Codec    int
	RawSize  int    // bytes of the packed frames before compression
	Checksum uint32 // CRC-32C of Data
	Data     []byte
}

// Encoder packs frames into segments. It keeps lz4's hash table between
// calls, so it is not safe for concurrent use: the store's single writer
// owns one.
type Encoder struct {
	c lz4.Compressor
	// EncodeScratch's buffers: packed frames, and their compressed form.
	raw, dst []byte
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

// Encode packs frames and compresses them with the lz4 block format, which
// decompresses about 1.8x faster than the frame format. Frames that do not
// compress are stored raw.
func (e *Encoder) Encode(frames []Frame) (Encoded, error) {
	seg, _, _, err := e.encode(frames, nil, nil)
	return seg, err
}

// maxScratch bounds the buffers EncodeScratch keeps between calls: a
// segment of one 64 MiB message must not stay in memory after its commit.
const maxScratch = 1 << 20

// EncodeScratch is Encode into buffers e keeps and reuses: the Data it
// returns is valid only until the next call on e. It spares a writer that
// stores each segment at once (SQLite copies what it is bound) two
// allocations of the segment's size per segment.
func (e *Encoder) EncodeScratch(frames []Frame) (Encoded, error) {
	seg, raw, dst, err := e.encode(frames, e.raw[:0], e.dst[:0])
	if cap(raw) <= maxScratch {
		e.raw = raw[:0]
	}
	if cap(dst) <= maxScratch {
		e.dst = dst[:0]
	}
	return seg, err
}

// encode is Encode into raw and dst, grown as needed, which it returns.
func (e *Encoder) encode(frames []Frame, raw, dst []byte) (_ Encoded, _, _ []byte, _ error) {
	compress := true
	if len(frames) == 1 && len(frames[0].Payload) > inPlaceOver {
		if seg, ok := e.encodeInPlace(&frames[0]); ok {
			return seg, raw, dst, nil
		}
		// It does not compress to half: packed, it is stored raw, without
		// a second try whose destination, as large as the frame, would be
		// written through before lz4 gave up.
		compress = false
	}
	size := 0
	for i := range frames {
		size += len(frames[i].TxnID) + len(frames[i].TraceID) + len(frames[i].ProducerSub) + len(frames[i].Payload) + 4*binary.MaxVarintLen32
	}
	if cap(raw) < size {
		raw = make([]byte, 0, size)
	}
	for i := range frames {
		raw = appendFrame(raw, &frames[i])
	}
	seg := Encoded{Codec: Raw, RawSize: len(raw), Data: raw}
	if compress && len(raw) > inPlaceOver {
		// A large segment is compressed only if a sample of it compresses
		// to half: lz4 writes its destination, as large as the segment,
		// through to the end before it finds that incompressible frames
		// (binary in base64, sealed payloads) do not compress.
		var probe [probeBytes / 2]byte
		n, err := e.c.CompressBlock(raw[:probeBytes], probe[:])
		compress = err == nil && n > 0
	}
	if !compress {
		seg.Checksum = Checksum(seg.Data)
		return seg, raw, dst, nil
	}
	if bound := lz4.CompressBlockBound(len(raw)); cap(dst) < bound {
		dst = make([]byte, bound)
	} else {
		dst = dst[:bound]
	}
	n, err := e.c.CompressBlock(raw, dst)
	if err != nil {
		return Encoded{}, raw, dst, fmt.Errorf("compress segment: %w", err)
	}
	if n > 0 && n < len(raw) {
		seg.Codec, seg.Data = LZ4, dst[:n]
	}
	seg.Checksum = Checksum(seg.Data)
	return seg, raw, dst, nil
}

// inPlaceOver is the payload size past which a segment of one frame is
// compressed from its payload where it lies (encodeInPlace), and past
// which a packed segment is compressed only if its first probeBytes
// compress to half.
const (
	inPlaceOver = maxScratch
	probeBytes  = 64 << 10
)

// encodeInPlace encodes a segment of the one frame f, a large one, without
// packing it first. Packing copies the payload: a message as large as the
// body limit was then held three times while it was stored (the request,
// the packed frame, the compressed one), 164-177 MB for 63 MB. Instead the
// payload is compressed where it lies, and the fields before it are put in
// front of the block as literals: an lz4 block is sequences of literals
// and back-references counted from the current position, so literals
// added to its first sequence decode to those bytes followed by exactly
// what the block decoded to before, and the result is the lz4 block of
// the packed frame that Bytes reads. It reports false, having stored
// nothing, when the payload does not compress to half its size; encode
// then packs it and stores it raw.
func (e *Encoder) encodeInPlace(f *Frame) (Encoded, bool) {
	hdr := appendFrame(nil, &Frame{TxnID: f.TxnID, TraceID: f.TraceID, ProducerSub: f.ProducerSub})
	hdr = hdr[:len(hdr)-1] // the empty payload's length, in place of which:
	hdr = binary.AppendUvarint(hdr, uint64(len(f.Payload)))
	// The first sequence grows by hdr and by at most len(hdr)/255+1 bytes
	// of its literal length; the block is compressed after room for both.
	room := len(hdr) + len(hdr)/255 + 2
	dst := make([]byte, room+len(f.Payload)/2)
	n, err := e.c.CompressBlock(f.Payload, dst[room:])
	if err != nil || n == 0 {
		return Encoded{}, false
	}
	block := dst[room : room+n]
	// The first sequence: a token whose high nibble is its literal length,
	// 15 meaning that bytes follow, each added, until one below 255.
	token, lit, p := block[0], int(block[0]>>4), 1
	if lit == 15 {
		for {
			if p >= len(block) {
				return Encoded{}, false
			}
			b := block[p]
			p++
			lit += int(b)
			if b != 255 {
				break
			}
		}
	}
	lit += len(hdr)
	prefix := []byte{byte(min(lit, 15))<<4 | token&0x0f}
	if lit >= 15 {
		rest := lit - 15
		for ; rest >= 255; rest -= 255 {
			prefix = append(prefix, 255)
		}
		prefix = append(prefix, byte(rest))
	}
	prefix = append(prefix, hdr...)
	start := room + p - len(prefix)
	if start < 0 {
		return Encoded{}, false
	}
	copy(dst[start:], prefix)
	data := dst[start : room+n]
	return Encoded{Codec: LZ4, RawSize: len(hdr) + len(f.Payload), Checksum: Checksum(data), Data: data}, true
}

// Bytes verifies a stored segment and returns its packed frames.
func Bytes(s Encoded) ([]byte, error) {
	return bytesInto(s, nil)
}

// bytesInto is Bytes decompressing into buf when it is large enough, and
// into a new slice otherwise.
func bytesInto(s Encoded, buf []byte) ([]byte, error) {
	if got := Checksum(s.Data); got != s.Checksum {
		return nil, fmt.Errorf("%w: checksum %08x, stored %08x", ErrCorrupt, got, s.Checksum)
	}
	switch s.Codec {
	case Raw:
		return s.Data, nil
	case LZ4:
		if s.RawSize < 0 || s.RawSize > maxRawSize(len(s.Data)) {
			return nil, fmt.Errorf("%w: raw size %d for %d stored bytes", ErrCorrupt, s.RawSize, len(s.Data))
		}
		raw := buf[:0]
		if cap(raw) < s.RawSize {
			raw = make([]byte, s.RawSize)
		}
		raw = raw[:s.RawSize]
		n, err := lz4.UncompressBlock(s.Data, raw)
		if err != nil {
			return nil, fmt.Errorf("%w: decompress: %v", ErrCorrupt, err)
		}
		if n != s.RawSize {
			return nil, fmt.Errorf("%w: decompressed %d bytes, want %d", ErrCorrupt, n, s.RawSize)
		}
		return raw, nil
	default:
		return nil, fmt.Errorf("%w: unknown codec %d", ErrCorrupt, s.Codec)
	}
}

// maxRawSize bounds what n bytes of an lz4 block can expand to (a match
// copies at most 255 bytes per byte of its length field), so a damaged
// raw_size cannot make Bytes allocate more than the data could fill.
func maxRawSize(n int) int { return 256*n + 64 }

// Decode verifies and unpacks a stored segment of want frames.
func Decode(s Encoded, want int) ([]Frame, error) {
	raw, err := Bytes(s)
	if err != nil {
		return nil, err
	}
	return Unpack(raw, want)
}

// Unpack unpacks want frames from the packed frames Bytes returned; their
// payloads are slices of raw.
func Unpack(raw []byte, want int) ([]Frame, error) {
	var err error
	frames := make([]Frame, 0, min(max(want, 0), len(raw)/4+1))
	for len(raw) > 0 {
		var f Frame
		var fields [4][]byte
		for i := range fields {
			if fields[i], raw, err = nextField(raw); err != nil {
				return nil, fmt.Errorf("%w: frame %d", err, len(frames))
			}
		}
		f.TxnID, f.TraceID, f.ProducerSub, f.Payload = string(fields[0]), string(fields[1]), string(fields[2]), fields[3]
		frames = append(frames, f)
	}
	if len(frames) != want {
		return nil, fmt.Errorf("%w: %d frames, want %d", ErrCorrupt, len(frames), want)
	}
	return frames, nil
}

// Verify verifies a stored segment of want frames as Decode does, with
// the same errors, and unpacks nothing: what comb check reads of every
// segment. It decompresses into buf when buf is large enough and returns
// the buffer it used, for the next call. Decode's copies of every frame's
// strings, and a new buffer for each segment, made the check of a 2 GiB
// file allocate about a gigabyte a second, which held its heap at two or
// three times what it kept.
func Verify(s Encoded, want int, buf []byte) ([]byte, error) {
	raw, err := bytesInto(s, buf)
	if err != nil {
		return buf, err
	}
	if s.Codec == LZ4 {
		buf = raw[:0]
	}
	n := 0
	for ; len(raw) > 0; n++ {
		for range 4 {
			if _, raw, err = nextField(raw); err != nil {
				return buf, fmt.Errorf("%w: frame %d", err, n)
			}
		}
	}
	if n != want {
		return buf, fmt.Errorf("%w: %d frames, want %d", ErrCorrupt, n, want)
	}
	return buf, nil
}

// TxnIDs verifies a stored segment of want frames and calls fn with each
// frame's index and transactionId, without copying or opening payloads:
// what the dedup check reads. txn is only valid during the call.
func TxnIDs(s Encoded, want int, fn func(i int, txn []byte)) error {
	_, err := TxnIDsInto(s, want, nil, fn)
	return err
}

// TxnIDsInto is TxnIDs decompressing into buf when it is large enough; it
// returns the buffer it used, for the next call, as Verify does. A
// retention sweep reads the transactionIds of every segment it removes,
// in the writer.
func TxnIDsInto(s Encoded, want int, buf []byte, fn func(i int, txn []byte)) ([]byte, error) {
	raw, err := bytesInto(s, buf)
	if err != nil {
		return buf, err
	}
	if s.Codec == LZ4 {
		buf = raw[:0]
	}
	if want < 0 {
		return buf, fmt.Errorf("%w: frame count %d", ErrCorrupt, want)
	}
	for i := 0; i < want; i++ {
		var txn []byte
		if txn, raw, err = nextFrameTxnID(raw); err != nil {
			return buf, fmt.Errorf("%w: frame %d", err, i)
		}
		fn(i, txn)
	}
	if len(raw) > 0 {
		return buf, fmt.Errorf("%w: more than %d frames", ErrCorrupt, want)
	}
	return buf, nil
}

// nextFrameTxnID returns the transactionId of the frame raw starts with,
// and what follows the frame.
func nextFrameTxnID(raw []byte) (txn, rest []byte, err error) {
	if txn, raw, err = nextField(raw); err != nil {
		return nil, nil, err
	}
	for range 3 {
		if _, raw, err = nextField(raw); err != nil {
			return nil, nil, err
		}
	}
	return txn, raw, nil
}

// nextField splits the length-prefixed field raw starts with from what
// follows it.
func nextField(raw []byte) (field, rest []byte, err error) {
	n, w := binary.Uvarint(raw)
	if w <= 0 || uint64(len(raw)-w) < n {
		return nil, nil, fmt.Errorf("%w: truncated frame", ErrCorrupt)
	}
	return raw[w : w+int(n)], raw[w+int(n):], nil
}

// Checksum is the checksum Encode stores for data.
func Checksum(data []byte) uint32 { return crc32.Checksum(data, castagnoli) }
