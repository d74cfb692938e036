package segment_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/comb-broker/comb/store/segment"
)

func sameFrames(t *testing.T, got, want []segment.Frame) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d frames, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].TxnID != want[i].TxnID || got[i].TraceID != want[i].TraceID ||
			got[i].ProducerSub != want[i].ProducerSub || !bytes.Equal(got[i].Payload, want[i].Payload) {
			t.Fatalf("frame %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestRoundTrip(t *testing.T) {
	var e segment.Encoder
	small := []segment.Frame{
		{TxnID: "a", Payload: []byte(`{"x":1}`)},
		{TxnID: "b", TraceID: "0198f0f8-0000-7000-8000-000000000000", ProducerSub: "alice", Payload: []byte(`null`)},
		{TxnID: "c", Payload: []byte(`""`)},
	}
	noise := make([]byte, 512)
	rand.NewChaCha8([32]byte{1}).Read(noise)
	incompressible := []segment.Frame{{TxnID: "n", Payload: noise}}
	var big []segment.Frame
	for i := range 500 {
		big = append(big, segment.Frame{TxnID: fmt.Sprint("t", i), Payload: []byte(`{"pad":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}`)})
	}
	for _, c := range []struct {
		name   string
		frames []segment.Frame
		codec  int
	}{
		{"small frames", small, -1},
		{"incompressible frames stay raw", incompressible, segment.Raw},
		{"repetitive frames are lz4", big, segment.LZ4},
	} {
		t.Run(c.name, func(t *testing.T) {
			seg, err := e.Encode(c.frames)
			if err != nil {
				t.Fatal(err)
			}
			if c.codec >= 0 && seg.Codec != c.codec {
				t.Errorf("codec %d, want %d", seg.Codec, c.codec)
			}
			out, err := segment.Decode(seg, len(c.frames))
			if err != nil {
				t.Fatal(err)
			}
			sameFrames(t, out, c.frames)
			var ids []string
			if err := segment.TxnIDs(seg, len(c.frames), func(i int, txn []byte) { ids = append(ids, string(txn)) }); err != nil {
				t.Fatal(err)
			}
			for i := range c.frames {
				if ids[i] != c.frames[i].TxnID {
					t.Fatalf("TxnIDs[%d] = %q, want %q", i, ids[i], c.frames[i].TxnID)
				}
			}
			if _, err := segment.Decode(seg, len(c.frames)+1); !errors.Is(err, segment.ErrCorrupt) {
				t.Errorf("decode with a wrong frame count = %v", err)
			}
			seg.Data[len(seg.Data)/2] ^= 0xff
			if _, err := segment.Decode(seg, len(c.frames)); !errors.Is(err, segment.ErrCorrupt) {
				t.Errorf("a flipped byte decoded: %v", err)
			}
			if err := segment.TxnIDs(seg, len(c.frames), func(int, []byte) {}); !errors.Is(err, segment.ErrCorrupt) {
				t.Errorf("a flipped byte read its ids: %v", err)
			}
		})
	}
}

func TestSealOpen(t *testing.T) {
	key := bytes.Repeat([]byte{0x5a}, segment.KeySize)
	c, err := segment.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	other, err := segment.NewCipher(bytes.Repeat([]byte{0x33}, segment.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range [][]byte{[]byte(`{"secret":1}`), {0x00, 'x'}, {0x01}, {}} {
		sealed := segment.Seal(c, p)
		if len(p) > 2 && bytes.Contains(sealed, p) {
			t.Errorf("sealed %q holds it in clear", p)
		}
		if got, err := segment.Open(c, sealed); err != nil || !bytes.Equal(got, p) {
			t.Errorf("open(seal(%q)) = %q, %v", p, got, err)
		}
		if _, err := segment.Open(nil, sealed); !errors.Is(err, segment.ErrNoKey) {
			t.Errorf("open without a key = %v, want ErrNoKey", err)
		}
		if _, err := segment.Open(other, sealed); !errors.Is(err, segment.ErrNoKey) {
			t.Errorf("open with another key = %v, want ErrNoKey", err)
		}
		clear := segment.Seal(nil, p)
		if got, err := segment.Open(nil, clear); err != nil || !bytes.Equal(got, p) {
			t.Errorf("open(seal(nil, %q)) = %q, %v", p, got, err)
		}
	}
	if _, err := segment.Open(c, []byte{0x01, 1, 2}); !errors.Is(err, segment.ErrCorrupt) {
		t.Errorf("a truncated sealed payload = %v, want ErrCorrupt", err)
	}
	if _, err := segment.NewCipher(key[:16]); !errors.Is(err, segment.ErrKey) {
		t.Errorf("a 16-byte key = %v, want ErrKey", err)
	}
	if _, err := segment.ParseKey("abc"); !errors.Is(err, segment.ErrKey) {
		t.Errorf("ParseKey(abc) = %v, want ErrKey", err)
	}
	if k, err := segment.ParseKey(fmt.Sprintf("%x", key)); err != nil || !bytes.Equal(k, key) {
		t.Errorf("ParseKey(hex) = %x, %v", k, err)
	}
}

// EncodeScratch stores what Encode stores, whichever segments came before
// it through the same buffers: large and small, compressed and raw.
func TestEncodeScratchMatchesEncode(t *testing.T) {
	var scratch, fresh segment.Encoder
	noise := make([]byte, 3<<20)
	rand.NewChaCha8([32]byte{2}).Read(noise)
	var cases [][]segment.Frame
	for i, n := range []int{500, 1, 40, 0, 3, 200} {
		var frames []segment.Frame
		for j := range n {
			frames = append(frames, segment.Frame{TxnID: fmt.Sprint("t", i, "-", j), Payload: []byte(fmt.Sprintf(`{"i":%d,"pad":"aaaaaaaaaaaaaaaaaaaaaaaaaaaa"}`, j))})
		}
		if n == 0 {
			frames = []segment.Frame{{TxnID: "big", Payload: noise}}
		}
		cases = append(cases, frames)
	}
	for i, frames := range cases {
		got, err := scratch.EncodeScratch(frames)
		if err != nil {
			t.Fatal(err)
		}
		want, err := fresh.Encode(frames)
		if err != nil {
			t.Fatal(err)
		}
		if got.Codec != want.Codec || got.RawSize != want.RawSize || got.Checksum != want.Checksum || !bytes.Equal(got.Data, want.Data) {
			t.Fatalf("segment %d: EncodeScratch gave codec %d, %d raw bytes, checksum %08x; Encode codec %d, %d, %08x",
				i, got.Codec, got.RawSize, got.Checksum, want.Codec, want.RawSize, want.Checksum)
		}
		out, err := segment.Decode(got, len(frames))
		if err != nil {
			t.Fatal(err)
		}
		sameFrames(t, out, frames)
	}
}

// Verify and TxnIDsInto, handed back the buffer they returned, read
// segment after segment without allocating: comb check reads every
// segment of a file through Verify, a retention sweep every segment it
// removes through TxnIDsInto, and a new buffer for each held the check's
// heap at two or three times what it kept.
func TestVerifyAndTxnIDsReuseTheirBuffer(t *testing.T) {
	var e segment.Encoder
	frames := slices.Repeat([]segment.Frame{{TxnID: "0198f0f8-0000-7000-8000-000000000000", TraceID: "t",
		Payload: []byte(`{"pad":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}`)}}, 200)
	seg, err := e.Encode(frames)
	if err != nil {
		t.Fatal(err)
	}
	if seg.Codec != segment.LZ4 {
		t.Fatalf("codec %d, want lz4 (the case that decompresses)", seg.Codec)
	}
	buf, err := segment.Verify(seg, len(frames), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cap(buf) < seg.RawSize {
		t.Fatalf("returned a buffer of %d bytes for a segment of %d", cap(buf), seg.RawSize)
	}
	allocs := testing.AllocsPerRun(20, func() {
		if buf, err = segment.Verify(seg, len(frames), buf); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Verify with its own buffer back allocated %.0f times", allocs)
	}
	if _, err := segment.Verify(seg, len(frames)-1, buf); !errors.Is(err, segment.ErrCorrupt) {
		t.Fatalf("one frame fewer than stored: %v, want ErrCorrupt", err)
	}

	n := 0
	count := func(int, []byte) { n++ }
	allocs = testing.AllocsPerRun(20, func() {
		if buf, err = segment.TxnIDsInto(seg, len(frames), buf, count); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("TxnIDsInto with its own buffer back allocated %.0f times", allocs)
	}
	if n != 21*len(frames) {
		t.Fatalf("TxnIDsInto called fn %d times in 21 runs of %d frames", n, len(frames))
	}
}
