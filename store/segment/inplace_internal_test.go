package segment

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// encodeInPlace makes the lz4 block of the packed frame, whatever the
// frame's fields and however the payload's first literal run is long:
// the decoded bytes are what packing gives, and Decode gives the frame.
func TestEncodeInPlaceDecodesToThePackedFrame(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return b
	}
	repeated := bytes.Repeat([]byte(`{"i":1,"v":"abcdefgh"},`), 2000)
	var cases int
	for _, fields := range []Frame{
		{},
		{TxnID: "t"},
		{TxnID: "0198f0f8-0000-7000-8000-000000000000", TraceID: "0198f0f8-0000-7000-8000-000000000001", ProducerSub: "device-7"},
		{TxnID: strings.Repeat("x", 255), TraceID: strings.Repeat("y", 36), ProducerSub: strings.Repeat("z", 300)},
	} {
		// The payload's first literals: none to many, across the 15 and
		// 15+255 boundaries of their length's encoding.
		for _, lead := range []int{0, 1, 13, 14, 15, 16, 269, 270, 271, 600, 5000} {
			for _, filler := range [][]byte{repeated, bytes.Repeat([]byte("a"), 50_000)} {
				f := fields
				f.Payload = append(random(lead), filler...)
				var e Encoder
				seg, ok := e.encodeInPlace(&f)
				if !ok {
					t.Fatalf("fields %d+%d+%d, lead %d: not encoded in place", len(f.TxnID), len(f.TraceID), len(f.ProducerSub), lead)
				}
				got, err := Bytes(seg)
				if err != nil {
					t.Fatalf("lead %d: %v", lead, err)
				}
				if want := appendFrame(nil, &f); !bytes.Equal(got, want) {
					t.Fatalf("lead %d: decoded %d bytes, packed %d; not the same", lead, len(got), len(want))
				}
				out, err := Decode(seg, 1)
				if err != nil || out[0].TxnID != f.TxnID || out[0].TraceID != f.TraceID || out[0].ProducerSub != f.ProducerSub ||
					!bytes.Equal(out[0].Payload, f.Payload) {
					t.Fatalf("lead %d: Decode %v", lead, err)
				}
				cases++
			}
		}
	}
	// A payload that does not compress to half is left to packing. The
	// payloads above start with the lead's random bytes, so the first
	// literal run is lead+1 long after a run of "a" and lead+23 after the
	// JSON: every length's encoding, below 15, at 15 and past 15+255.
	var e Encoder
	if _, ok := e.encodeInPlace(&Frame{TxnID: "r", Payload: random(100_000)}); ok {
		t.Fatal("random bytes encoded in place")
	}
	t.Log(cases, "cases")
}

// Encode takes the in-place path for one large frame and packs otherwise;
// both decode to the frames given, and the in-place one stores the same
// bytes packing would decode to.
func TestEncodeOfOneLargeFrame(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var json strings.Builder
	for i := 0; json.Len() <= 3*inPlaceOver; i++ {
		fmt.Fprintf(&json, `{"i":%d,"v":"%x"},`, i, rng.Uint32()%64)
	}
	noise := make([]byte, 2*inPlaceOver)
	for i := range noise {
		noise[i] = byte(rng.IntN(256))
	}
	for name, frames := range map[string][]Frame{
		"json":           {{TxnID: "a", Payload: []byte(json.String())}},
		"noise":          {{TxnID: "a", Payload: noise}},
		"half noise":     {{TxnID: "a", Payload: append(noise[:inPlaceOver:inPlaceOver], json.String()[:inPlaceOver/2]...)}},
		"noise, packed":  {{TxnID: "a", Payload: noise}, {TxnID: "b", Payload: []byte(json.String())}},
		"two frames":     {{TxnID: "a", Payload: []byte(json.String())}, {TxnID: "b", Payload: []byte("{}")}},
		"at the bound":   {{TxnID: "a", Payload: []byte(json.String())[:inPlaceOver]}},
		"past the bound": {{TxnID: "a", Payload: []byte(json.String())[:inPlaceOver+1]}},
	} {
		var e Encoder
		seg, err := e.EncodeScratch(frames)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out, err := Decode(seg, len(frames))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i := range frames {
			if out[i].TxnID != frames[i].TxnID || !bytes.Equal(out[i].Payload, frames[i].Payload) {
				t.Fatalf("%s: frame %d differs", name, i)
			}
		}
		// A large packed segment is compressed when its first bytes
		// compress (probeBytes): "noise, packed" starts with noise.
		if (name == "noise" || name == "half noise" || name == "noise, packed") && seg.Codec != Raw {
			t.Errorf("%s stored with codec %d, want raw", name, seg.Codec)
		}
		if (name == "json" || name == "past the bound" || name == "two frames") && seg.Codec != LZ4 {
			t.Errorf("%s stored with codec %d, want lz4", name, seg.Codec)
		}
	}
}
