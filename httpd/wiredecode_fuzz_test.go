package httpd_test

import (
	"strings"
	"testing"

	"github.com/comb-broker/comb/httpd"
)

// The push and ack routes decode their bodies in one pass of their own
// (httpd/wiredecode.go). These fuzzers hold that decoder to the
// encoding/json path it replaced: for any body, and any body limit at or
// under its length, both accept with the same items, or both refuse with
// the same status and, unless the JSON itself is bad, the same message.
// The seeds run as part of go test; go test -fuzz FuzzPushDecode ./httpd
// explores further.

// fuzzLimit is the body limit of one run: the body's length, or cut when
// that is shorter, so that bodies past the limit are tried too.
func fuzzLimit(body []byte, cut uint16) int64 {
	if cut > 0 && int(cut) < len(body) {
		return int64(cut)
	}
	return int64(len(body))
}

// wireEdgeCases are bodies around the corners of JSON and of encoding/json's
// way of reading it into structs; each is tried on every route.
var wireEdgeCases = []string{
	``, ` `, "\t\r\n", `null`, `null `, `nul`, `true`, `-0`, `"x"`, `[]`, `{}`, `{} `, `{}}`, `{}]`, `{} x`, `{}{}`, `{},`,
	`{"items":null}`, `{"items":{}}`, `{"items":"[]"}`, `{"items":[null]}`, `{"items":[1]}`, `{"items":[[]]}`,
	`{"items":[{"queue":1},5]}`, `{"items":[],"items":[{"queue":"a"}]}`, `{"items":[{"queue":"a"}],"items":null}`,
	`{"items":[{"queue":"a","queue":"b","QUEUE":"c","Queue":null}]}`,
	`{"ITEMS":[{"QuEuE":"q","PAYLOAD":1,"TransactionID":"t","traceid":null,"Partition":"p"}]}`,
	`{"items":[{"queue":"q","tranſactionId":"t","parti\u0074ion":"p"}]}`,
	`{"\u0069tems":[{"q\u0075eue":"q\"\\\/\b\f\n\r\t","payload":"\ud83d\ude00"}]}`,
	`{"items":[{"queue":"\ud800","partition":"\udc00x","transactionId":"\ud800\u0041","traceId":null}]}`,
	`{"items":[{"queue":"\u00e9","partition":"é","transactionId":"t\u0000"}]}`,
	"{\"items\":[{\"queue\":\"q\xff\",\"partition\":\"\xc3\",\"transactionId\":\"\\n\xff\"}]}",
	"{\"it\xffems\":[], \"items\":[{\"queue\":\"q\x01\"}]}",
	`{"items":[{"queue":"q","payload":-0},{"queue":"q","payload":1e5},{"queue":"q","payload":1E+5},{"queue":"q","payload":-0.5e-3}]}`,
	`{"items":[{"queue":"q","payload":01}]}`, `{"items":[{"queue":"q","payload":1.}]}`, `{"items":[{"queue":"q","payload":-}]}`,
	`{"items":[{"queue":"q","payload":.5}]}`, `{"items":[{"queue":"q","payload":+1}]}`, `{"items":[{"queue":"q","payload":1e}]}`,
	`{"items":[{"queue":"q","payload":"\x"}]}`, `{"items":[{"queue":"q","payload":"\u12g4"}]}`, `{"items":[{"queue":"q","payload":"\u12"}]}`,
	` { "items" : [ { "queue" : "q" , "payload" : { "a" : [ 1 , true , false , null , "s" ] } } ] } `,
	`{"extra":{"a":[1,{"b":null}]},"items":[{"queue":"q","meta":[true,false],"payload":{"deep":[[[[{}]]]]}}]}`,
	`{"items":[{"queue":"q","payload":{"a":1,}}]}`, `{"items":[{"queue":"q",}]}`, `{"items":[{"queue":"q"},]}`, `{"items":[{"queue" "q"}]}`,
	`{"items":[{"queue":"q","traceId":"6f1d7a52-3b4c-4d5e-8f90-a1b2c3d4e5f6"}]}`, `{"items":[{"queue":"q","traceId":"not-a-uuid"}]}`,
	`{"items":[{"queue":""}]}`, `{"items":[{"queue":"q","partition":5}]}`, `{"items":[{"queue":"q","transactionId":[]}]}`,
	`{"items":[{"queue":"q","payload":` + strings.Repeat("[", 9997) + strings.Repeat("]", 9997) + `}]}`,
	`{"items":[{"queue":"q","payload":` + strings.Repeat("[", 9998) + strings.Repeat("]", 9998) + `}]}`,
	`{"transactionId":"t","partitionId":"p","leaseId":null,"status":"failed","error":"e","consumerGroup":"g"}`,
	`{"TRANSACTIONID":"t","partitionid":"p","transactionId":null}`, `{"transactionId":"","partitionId":"p"}`,
	`{"transactionId":"t","partitionId":"p","status":1}`, `{"transactionId":"t\u00e9","partitionId":"p\\","error":"\ud83d"}`,
	`{"acknowledgments":[{"transactionId":"t","partitionId":"p"}],"consumerGroup":null}`,
	`{"acknowledgments":[],"consumerGroup":1}`, `{"acknowledgments":[{},[]],"consumerGroup":1}`, `{"acknowledgments":{}}`,
	`{"consumerGroup":"g","ac\u212Anowledgments":[null,{"transactionId":"t","partitionId":"p","consumerGroup":"h"}]}`,
	`{"acknowledgments":[{"transactionId":"t","partitionId":"p"}],"ACKNOWLEDGMENTS":[],"consumergroup":"g","consumerGroup":"\u0067"}`,
}

// wireCuts are bodies with a limit that ends them early: a top-level
// value must be followed by a byte, or the body's end, to be complete.
var wireCuts = []struct {
	body string
	cut  uint16
}{{"null  ", 4}, {"null  ", 5}, {`"x" `, 3}, {`{} `, 2}, {`{"items":[]}  x  `, 15}, {`{"items":[]}    `, 13}}

// addWireSeeds adds the edge cases and cuts both decoders are seeded with.
func addWireSeeds(f *testing.F) {
	for _, body := range wireEdgeCases {
		f.Add([]byte(body), uint16(0))
		f.Add([]byte(body), uint16(len(body)/2))
	}
	for _, c := range wireCuts {
		f.Add([]byte(c.body), c.cut)
	}
}

func FuzzPushDecode(f *testing.F) {
	f.Add([]byte(goPushBody("orders", "Default", `{"a":1}`, `{"index":1}`, `"text"`, `[1,2,3]`, `null`)), uint16(0))
	f.Add([]byte(jsPushBody("test-js-q", "p1", `{"message":"Hello, world!"}`)), uint16(0))
	f.Add([]byte(goPushBody("q", "custom-partition", `{"test":"data","value":42}`)), uint16(40))
	f.Add([]byte(`{"items":[{"queue":"q","payload":{"a":1},"transactionId":"t","traceId":"6f1d7a52-3b4c-4d5e-8f90-a1b2c3d4e5f6"}]}`), uint16(0))
	addWireSeeds(f)
	f.Fuzz(func(t *testing.T, body []byte, cut uint16) {
		limit := fuzzLimit(body, cut)
		if d := httpd.WireDecodeDiff("push", body, limit); d != "" {
			t.Fatalf("push %q (limit %d): %s", body, limit, d)
		}
	})
}

func FuzzAckDecode(f *testing.F) {
	m := sdkMessage{TransactionID: "0198d4f2-7c1e-7a3b-9c41-000000000001", PartitionID: "0198d4f2-0000-7000-8000-000000000001",
		LeaseID: "0198d4f2-1111-7000-8000-000000000002"}
	noLease := m
	noLease.LeaseID = ""
	msgs := []sdkMessage{m, noLease, m}
	for _, body := range []string{
		goAckBody(m, "completed", "", ""), goAckBody(noLease, "failed", "intentional failure", "g"),
		jsAckBody(m, "completed", "", ""), jsAckBody(noLease, "failed", "boom", "test-js-group"),
		goAckBatchBody(msgs, "completed", "", "g"), goAckBatchBody(msgs, "failed", "why", ""),
		jsAckBatchBody(msgs, "completed", "", ""), jsAckBatchBody(msgs, "failed", "why", "grp"),
	} {
		f.Add([]byte(body), uint16(0))
		f.Add([]byte(body), uint16(len(body)*2/3))
	}
	addWireSeeds(f)
	f.Fuzz(func(t *testing.T, body []byte, cut uint16) {
		limit := fuzzLimit(body, cut)
		for _, route := range []string{"ack", "ack/batch"} {
			if d := httpd.WireDecodeDiff(route, body, limit); d != "" {
				t.Fatalf("%s %q (limit %d): %s", route, body, limit, d)
			}
		}
	})
}
