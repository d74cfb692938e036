package httpd

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/comb-broker/comb/combtype"
)

// strs are strings json.Marshal copies as they are and strings it escapes
// or rewrites, so the appenders' fast path and fallback are both checked.
var strs = []string{"", "orders", "0198c0de-7a1b-7c2d-8e3f-0123456789ab", `quo"te`, `back\slash`,
	"tab\there", "new\nline", "<script>&", "héllo", "\u2028\u2029", "bad\xffutf8", "\x00\x1f"}

var payloads = [][]byte{nil, []byte(`null`), []byte(`{"a":1,"b":[true,false,null],"c":"x"}`),
	[]byte(`{ "a" : 1 ,
	"b" : "spaced" }`), []byte(`{"h":"<b>&amp;</b>"}`), []byte(`{"u":"héllo \u2028"}`), []byte(`"str"`), []byte(`12.5e3`),
	[]byte("{\"raw\":\"\u2028\"}")}

func TestReplyAppendersWriteWhatEncodingJSONWrites(t *testing.T) {
	var pushes []combtype.PushResult
	var acks []combtype.AckResult
	res := &combtype.PopResult{Queue: "q<1>", Partition: "p", PartitionID: "pid", LeaseID: "lease", Group: "g\"", PartitionsClaimed: 3}
	for i, s := range strs {
		other := strs[(i+5)%len(strs)]
		pushes = append(pushes, combtype.PushResult{TxnID: s, Status: combtype.StatusQueued, MessageID: other, PartitionID: s,
			TraceID: other, Queue: s, Offset: int64(i)})
		acks = append(acks, combtype.AckResult{TxnID: s, Success: i%2 == 0, Err: errorOf(other), Queue: s, Partition: other,
			LeaseReleased: i%3 == 0, DLQ: i%4 == 0})
		for j, p := range payloads {
			res.Messages = append(res.Messages, combtype.Message{ID: s, TxnID: other, PartitionID: s, Partition: other, Queue: s,
				LeaseID: other, Group: s, Payload: p, CreatedAt: time.Date(2026, 7, 30, 8, 0, j, 123456789, time.UTC),
				TraceID: other, ProducerSub: s, RetryCount: int64(i * j)})
		}
	}
	same := func(name string, got []byte, v any) {
		t.Helper()
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: json.Marshal: %v", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
	same("push", appendPushResults(nil, pushes), pushResultsJSON(pushes))
	same("push, none", appendPushResults(nil, nil), pushResultsJSON(nil))
	same("ack", appendAckResults(nil, acks), ackResultsJSON(acks))
	same("pop", appendPop(nil, res), popJSON(res))

	// A batch as claims hand it out: runs of messages share their
	// partition, queue, lease and group, and their segment's commit time.
	batch := &combtype.PopResult{Queue: "q", LeaseID: "lease"}
	for i := range 40 {
		s, other := strs[i/8%len(strs)], strs[i/5%len(strs)]
		batch.Messages = append(batch.Messages, combtype.Message{ID: strs[i%len(strs)], TxnID: other, PartitionID: s,
			Partition: s, Queue: s, LeaseID: s, Group: other, Payload: payloads[i%len(payloads)],
			CreatedAt: time.Date(2026, 7, 30, 8, 0, i/3, 1000*(i/7), time.UTC), RetryCount: int64(i % 2)})
	}
	same("pop of runs", appendPop(nil, batch), popJSON(batch))
}

// A stored payload that is not JSON (written by an older comb, or by hand)
// is answered as a JSON string of its bytes: the reply stays valid JSON,
// and the other messages of the batch go out with it.
func TestAPopOfAnInvalidStoredPayloadStillEncodes(t *testing.T) {
	// The last two are JSON but for bytes that are not UTF-8 in a string:
	// a reply must be UTF-8 to be JSON (RFC 8259), whatever Go's decoder
	// lets through.
	for _, bad := range []string{`{"a": nope}`, `hellonotjson`, `hello not json`, `{"a":1`, "\xff\xfe", `1 2`, "{\"a\":\"\xff\"}", "\"\xc3(\""} {
		res := &combtype.PopResult{Messages: []combtype.Message{{Payload: []byte(`{"ok":1}`)}, {Payload: []byte(bad)}}}
		got := appendPop(nil, res)
		if !utf8.Valid(got) {
			t.Fatalf("payload %q: reply %q is not UTF-8", bad, got)
		}
		var out struct {
			Messages []struct {
				Data json.RawMessage `json:"data"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(got, &out); err != nil {
			t.Fatalf("payload %q: reply %s is not JSON: %v", bad, got, err)
		}
		// As a Go string is marshalled: bytes that are not UTF-8 become U+FFFD.
		var s, want string
		quoted, _ := json.Marshal(bad)
		json.Unmarshal(quoted, &want)
		if len(out.Messages) != 2 || string(out.Messages[0].Data) != `{"ok":1}` || json.Unmarshal(out.Messages[1].Data, &s) != nil ||
			s != want {
			t.Errorf("payload %q: reply %s, want the good one as is and the bad one as a string of its bytes", bad, got)
		}
	}
}

// BenchmarkReplies compares the appenders with encoding/json on a pop of
// 100 ~200-byte orders and a push reply of 100 items.
func BenchmarkReplies(b *testing.B) {
	res := &combtype.PopResult{Queue: "orders", Partition: "p1", PartitionID: "0198c0de-7a1b-8c2d-8e3f-0123456789ab",
		LeaseID: "0198c0de-7a1b-7c2d-8e3f-0123456789ab", Group: "workers", PartitionsClaimed: 1}
	pushes := make([]combtype.PushResult, 100)
	for i := range 100 {
		res.Messages = append(res.Messages, combtype.Message{ID: "0198c0de-7a1b-8c2d-8e3f-0123456789ab",
			TxnID: "0198c0de-7a1b-7c2d-8e3f-0123456789ab", PartitionID: res.PartitionID, Partition: "p1", Queue: "orders",
			LeaseID: res.LeaseID, Group: "workers", CreatedAt: time.Now(),
			Payload: []byte(`{"orderId":"ord-00000042","customerId":"cus-000042","items":[{"sku":"SKU-00042","qty":3,"price":52.99},{"sku":"SKU-00294","qty":1,"price":4.50}],"currency":"EUR","total":57.49,"status":"placed","ts":1764547200042}`)})
		pushes[i] = combtype.PushResult{TxnID: "0198c0de-7a1b-7c2d-8e3f-0123456789ab", Status: combtype.StatusQueued,
			MessageID: "0198c0de-7a1b-8c2d-8e3f-0123456789ab", PartitionID: res.PartitionID, Queue: "orders", Offset: int64(i)}
	}
	b.Run("pop/encoding-json", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(popJSON(res)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pop/append", func(b *testing.B) {
		for b.Loop() {
			appendPop(make([]byte, 0, 100*600), res)
		}
	})
	b.Run("push/encoding-json", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(pushResultsJSON(pushes)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("push/append", func(b *testing.B) {
		for b.Loop() {
			appendPushResults(make([]byte, 0, 256*100), pushes)
		}
	})
}

// errorOf is an error reading s, or nil for "".
func errorOf(s string) error {
	if s == "" {
		return nil
	}
	return errors.New(s)
}
