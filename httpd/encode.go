package httpd

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/comb-broker/comb/combtype"
)

// The replies of push, pop and ack are the hot path: they are appended
// directly instead of through encoding/json's reflection, which measured
// as a large share of the HTTP layer's CPU. Each appender writes exactly
// the bytes json.Marshal writes for the matching struct (pushOut, popOut,
// ackOut); encode_test.go holds them to that.

// writeJSONBytes answers body, already encoded.
func writeJSONBytes(w http.ResponseWriter, status int, body []byte) {
	setJSONHeaders(w, len(body))
	w.WriteHeader(status)
	w.Write(body)
}

// replyBuffers recycles the buffers the hot routes (push, pop, ack)
// encode their replies into: a pop of 100 messages writes ~25 KB, and
// allocating it afresh for every reply was the largest part of the
// garbage those routes make.
type replyBuffers struct{ pool sync.Pool }

// maxPooledReply keeps an occasional huge reply from being held on to.
const maxPooledReply = 1 << 20

func (r *replyBuffers) get(size int) []byte {
	if b, ok := r.pool.Get().(*[]byte); ok && cap(*b) >= size {
		return (*b)[:0]
	}
	return make([]byte, 0, size)
}

// put returns b once its reply is written: net/http has copied or sent
// it by the time Write returns.
func (r *replyBuffers) put(b []byte) {
	if cap(b) <= maxPooledReply {
		r.pool.Put(&b)
	}
}

// setJSONHeaders names a JSON body of n bytes. With its length known, a
// reply goes out in one piece: without it, net/http chunks any body past
// its 2 KB buffer (a pop of 100 messages is ~25 KB), which costs writes and
// parsing on both ends.
func setJSONHeaders(w http.ResponseWriter, n int) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(n))
}

// appendString appends s as json.Marshal does. Plain ASCII, the common case,
// is copied; anything that json.Marshal escapes or replaces (quotes,
// backslashes, control and HTML characters, non-ASCII) goes through it.
func appendString(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // a string always encodes
			return append(buf, b...)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}

// appendNullString appends "" as null, like nullString does.
func appendNullString(buf []byte, s string) []byte {
	if s == "" {
		return append(buf, "null"...)
	}
	return appendString(buf, s)
}

// appendRaw appends a stored payload as json.Marshal does a json.RawMessage:
// compacted, HTML characters escaped. One without whitespace, HTML
// characters or non-ASCII bytes is already in that form, so it is copied
// once a scan has found it valid.
//
// The broker refuses a payload that is not JSON at every entry, but a
// file written by an older comb, or edited outside it, may hold one: it
// is answered as a JSON string of its bytes rather than fail the reply,
// which would fail every pop of its partition for ever.
func appendRaw(buf []byte, raw []byte) []byte {
	if marshalled(raw) {
		return append(buf, raw...)
	}
	if len(raw) == 0 {
		return append(buf, "null"...)
	}
	if !utf8.Valid(raw) {
		// JSON but for bytes that are not UTF-8 in a string: json.Marshal
		// would copy them, and a reply that is not UTF-8 is not JSON.
		return appendString(buf, string(raw))
	}
	b, err := json.Marshal(json.RawMessage(raw))
	if err != nil {
		return appendString(buf, string(raw))
	}
	return append(buf, b...)
}

// marshalled reports whether raw is one JSON value already in the form
// json.Marshal gives it: no whitespace, HTML characters or non-ASCII
// bytes, and valid.
func marshalled(raw []byte) bool {
	for _, c := range raw {
		if c <= ' ' || c >= 0x80 || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return len(raw) > 0 && validValue(raw)
}

// rawBytes is what appendRaw appends of raw, raw itself when it is
// already in that form: a large payload is written from where it lies.
func rawBytes(raw []byte) []byte {
	if marshalled(raw) {
		return raw
	}
	return appendRaw(nil, raw)
}

// validValue reports whether raw is exactly one JSON value.
func validValue(raw []byte) bool {
	d := wireDecoder{buf: raw}
	if err := d.value(); err != nil {
		return false
	}
	d.skipSpace()
	return d.pos == len(raw)
}

// storedJSON is a stored payload or value to answer inside a reply built
// by encoding/json: as it is when it is JSON, null when empty, and
// otherwise a JSON string of its bytes (see appendRaw).
func storedJSON(raw []byte) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	if json.Valid(raw) && utf8.Valid(raw) {
		return raw
	}
	return appendString(nil, string(raw))
}

// appendPushResults encodes what pushResultsJSON would.
func appendPushResults(buf []byte, results []combtype.PushResult) []byte {
	buf = append(buf, '[')
	for i := range results {
		res := &results[i]
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"index":`...)
		buf = strconv.AppendInt(buf, int64(i), 10)
		buf = append(buf, `,"transaction_id":`...)
		buf = appendString(buf, res.TxnID)
		buf = append(buf, `,"transactionId":`...)
		buf = appendString(buf, res.TxnID)
		buf = append(buf, `,"status":`...)
		buf = appendString(buf, res.Status)
		buf = append(buf, `,"message_id":`...)
		buf = appendString(buf, res.MessageID)
		buf = append(buf, `,"partition_id":`...)
		buf = appendString(buf, res.PartitionID)
		buf = append(buf, `,"trace_id":`...)
		buf = appendNullString(buf, res.TraceID)
		buf = append(buf, `,"queueName":`...)
		buf = appendString(buf, res.Queue)
		buf = append(buf, '}')
	}
	return append(buf, ']')
}

// appendAckResults encodes what ackResultsJSON would.
func appendAckResults(buf []byte, results []combtype.AckResult) []byte {
	buf = append(buf, '[')
	for i := range results {
		res := &results[i]
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"index":`...)
		buf = strconv.AppendInt(buf, int64(i), 10)
		buf = append(buf, `,"transactionId":`...)
		buf = appendString(buf, res.TxnID)
		buf = append(buf, `,"success":`...)
		buf = strconv.AppendBool(buf, res.Success)
		buf = append(buf, `,"error":`...)
		buf = appendNullString(buf, itemErrorText(res.Err))
		buf = append(buf, `,"queueName":`...)
		buf = appendNullString(buf, res.Queue)
		buf = append(buf, `,"partitionName":`...)
		buf = appendNullString(buf, res.Partition)
		buf = append(buf, `,"leaseReleased":`...)
		buf = strconv.AppendBool(buf, res.LeaseReleased)
		buf = append(buf, `,"dlq":`...)
		buf = strconv.AppendBool(buf, res.DLQ)
		buf = append(buf, '}')
	}
	return append(buf, ']')
}

// appendPop encodes the popOut the pop handler would build from res.
func appendPop(buf []byte, res *combtype.PopResult) []byte {
	buf = append(buf, `{"success":true`...)
	buf = append(buf, `,"queue":`...)
	buf = appendString(buf, res.Queue)
	buf = append(buf, `,"partition":`...)
	buf = appendString(buf, res.Partition)
	buf = append(buf, `,"partitionId":`...)
	buf = appendString(buf, res.PartitionID)
	buf = append(buf, `,"leaseId":`...)
	buf = appendString(buf, res.LeaseID)
	buf = append(buf, `,"consumerGroup":`...)
	buf = appendString(buf, res.Group)
	buf = append(buf, `,"partitionsClaimed":`...)
	buf = strconv.AppendInt(buf, int64(res.PartitionsClaimed), 10)
	buf = append(buf, `,"messages":[`...)
	// The messages of a batch mostly share their partition, queue, lease
	// and group, and those of one segment their commit time: what equals
	// the last message's is copied from its encoding instead of escaped
	// or formatted again.
	var prev *combtype.Message
	var shared, at [2]int // where in buf the last encoding of each lies
	for i := range res.Messages {
		m := &res.Messages[i]
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, `{"id":`...)
		buf = appendString(buf, m.ID)
		buf = append(buf, `,"transactionId":`...)
		buf = appendString(buf, m.TxnID)
		if prev != nil && m.PartitionID == prev.PartitionID && m.Partition == prev.Partition && m.Queue == prev.Queue &&
			m.LeaseID == prev.LeaseID && m.Group == prev.Group {
			buf = append(buf, buf[shared[0]:shared[1]]...)
		} else {
			shared[0] = len(buf)
			buf = append(buf, `,"partitionId":`...)
			buf = appendString(buf, m.PartitionID)
			buf = append(buf, `,"partition":`...)
			buf = appendString(buf, m.Partition)
			buf = append(buf, `,"queue":`...)
			buf = appendString(buf, m.Queue)
			buf = append(buf, `,"leaseId":`...)
			buf = appendString(buf, m.LeaseID)
			buf = append(buf, `,"consumerGroup":`...)
			buf = appendString(buf, m.Group)
			shared[1] = len(buf)
		}
		buf = append(buf, `,"data":`...)
		buf = appendRaw(buf, m.Payload)
		buf = append(buf, `,"createdAt":`...)
		if prev != nil && m.CreatedAt.Equal(prev.CreatedAt) {
			buf = append(buf, buf[at[0]:at[1]]...)
		} else {
			// A formatted time is plain ASCII: no escaping to do.
			at[0] = len(buf)
			buf = append(buf, '"')
			buf = m.CreatedAt.UTC().AppendFormat(buf, timeMicro)
			buf = append(buf, '"')
			at[1] = len(buf)
		}
		buf = append(buf, `,"traceId":`...)
		buf = appendNullString(buf, m.TraceID)
		buf = append(buf, `,"producerSub":`...)
		buf = appendNullString(buf, m.ProducerSub)
		buf = append(buf, `,"retryCount":`...)
		buf = strconv.AppendInt(buf, m.RetryCount, 10)
		buf = append(buf, '}')
		prev = m
	}
	return append(buf, "]}"...)
}
