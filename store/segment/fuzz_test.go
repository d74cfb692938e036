package segment_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/comb-broker/comb/store/segment"
)

// seedSegments are encoded segments to start the fuzzers from: raw and
// lz4, one frame and many.
func seedSegments(f *testing.F) []segment.Encoded {
	var e segment.Encoder
	var out []segment.Encoded
	for _, frames := range [][]segment.Frame{
		{{TxnID: "a", Payload: []byte(`1`)}},
		{{TxnID: "a", TraceID: "t", ProducerSub: "p", Payload: []byte(`{"x":[1,2,3]}`)}, {TxnID: "b", Payload: []byte(`null`)}},
		slices.Repeat([]segment.Frame{{TxnID: "0198f0f8-0000-7000-8000-000000000000", Payload: []byte(`{"pad":"aaaaaaaaaaaaaaaa"}`)}}, 40),
	} {
		seg, err := e.Encode(frames)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, seg)
	}
	return out
}

// FuzzDecode feeds stored columns as a damaged database could hold them:
// decoding never panics, and either fails with ErrCorrupt or yields
// exactly the frame count asked for, which TxnIDs and Verify agree with.
func FuzzDecode(f *testing.F) {
	for _, seg := range seedSegments(f) {
		f.Add(seg.Codec, seg.RawSize, seg.Checksum, seg.Data, 3)
	}
	f.Add(segment.LZ4, 1<<30, uint32(0), []byte{0xff}, 1)
	f.Fuzz(func(t *testing.T, codec, rawSize int, checksum uint32, data []byte, want int) {
		want = want % 1024
		for _, sum := range []uint32{checksum, segment.Checksum(data)} {
			seg := segment.Encoded{Codec: codec, RawSize: rawSize, Checksum: sum, Data: data}
			frames, err := segment.Decode(seg, want)
			if err != nil {
				if !errors.Is(err, segment.ErrCorrupt) {
					t.Fatalf("Decode error %v does not match ErrCorrupt", err)
				}
			} else if len(frames) != want {
				t.Fatalf("Decode gave %d frames, asked %d", len(frames), want)
			}
			var ids []string
			idErr := segment.TxnIDs(seg, want, func(_ int, txn []byte) { ids = append(ids, string(txn)) })
			if (idErr == nil) != (err == nil) {
				t.Fatalf("Decode err %v, TxnIDs err %v", err, idErr)
			}
			for i := range ids {
				if err == nil && ids[i] != frames[i].TxnID {
					t.Fatalf("TxnIDs[%d] = %q, Decode %q", i, ids[i], frames[i].TxnID)
				}
			}
			// Verify says what Decode says, word for word, and
			// TxnIDsInto what TxnIDs says, whatever the buffer they are
			// handed held before.
			buf := bytes.Repeat([]byte{0xa5}, 64)
			for range 2 {
				var vErr error
				buf, vErr = segment.Verify(seg, want, buf)
				if fmt.Sprint(vErr) != fmt.Sprint(err) {
					t.Fatalf("Decode err %v, Verify err %v", err, vErr)
				}
				var into []string
				buf, vErr = segment.TxnIDsInto(seg, want, buf, func(_ int, txn []byte) { into = append(into, string(txn)) })
				if fmt.Sprint(vErr) != fmt.Sprint(idErr) || (vErr == nil && !slices.Equal(into, ids)) {
					t.Fatalf("TxnIDs err %v ids %q, TxnIDsInto err %v ids %q", idErr, ids, vErr, into)
				}
			}
		}
	})
}

// FuzzRoundTrip encodes arbitrary frames: what decodes is what went in.
func FuzzRoundTrip(f *testing.F) {
	f.Add("a", "", "", []byte(`{"x":1}`), 1)
	f.Add("0198f0f8-0000-7000-8000-000000000000", "trace", "sub", bytes.Repeat([]byte("ab"), 300), 50)
	f.Fuzz(func(t *testing.T, txn, trace, sub string, payload []byte, n int) {
		n = 1 + abs(n)%300
		frames := make([]segment.Frame, n)
		for i := range frames {
			frames[i] = segment.Frame{TxnID: txn, TraceID: trace, ProducerSub: sub, Payload: payload[:len(payload)*i/n]}
		}
		var e segment.Encoder
		seg, err := e.Encode(frames)
		if err != nil {
			t.Fatal(err)
		}
		out, err := segment.Decode(seg, n)
		if err != nil {
			t.Fatal(err)
		}
		sameFrames(t, out, frames)
	})
}

// FuzzOpen feeds stored payloads: Open never panics, and a payload it did
// not seal or escape comes back unchanged.
func FuzzOpen(f *testing.F) {
	c, err := segment.NewCipher(bytes.Repeat([]byte{7}, segment.KeySize))
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(`{"a":1}`))
	f.Add(segment.Seal(c, []byte(`{"a":1}`)))
	f.Add([]byte{0x00})
	f.Add([]byte{0x01, 0x02})
	f.Fuzz(func(t *testing.T, p []byte) {
		for _, k := range []*segment.Cipher{nil, c} {
			got, err := segment.Open(k, p)
			if err != nil {
				if !errors.Is(err, segment.ErrNoKey) && !errors.Is(err, segment.ErrCorrupt) {
					t.Fatalf("Open error %v is neither ErrNoKey nor ErrCorrupt", err)
				}
				continue
			}
			if len(p) > 0 && p[0] > 0x01 && !bytes.Equal(got, p) {
				t.Fatalf("Open changed an unmarked payload")
			}
			if again, err := segment.Open(k, segment.Seal(k, got)); err != nil || !bytes.Equal(again, got) {
				t.Fatalf("reseal of %q = %q, %v", got, again, err)
			}
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
