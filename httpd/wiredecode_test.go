package httpd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/comb-broker/comb/combtype"
)

// The push and ack routes' decoding as it was before wireDecoder:
// readJSON, then json.Unmarshal of the items. The fuzzers hold the new
// decoder to it.

func oldPush(s *Handler, w http.ResponseWriter, r *http.Request) ([]combtype.PushItem, error) {
	var in struct {
		Items json.RawMessage `json:"items"`
	}
	if err := s.readJSON(w, r, &in); err != nil {
		return nil, err
	}
	var raw []pushItemIn
	if len(in.Items) == 0 || in.Items[0] != '[' || json.Unmarshal(in.Items, &raw) != nil {
		return nil, &badRequest{"items array is required"}
	}
	return pushItems(raw, "sub")
}

func oldAck(s *Handler, w http.ResponseWriter, r *http.Request) (combtype.AckItem, error) {
	var in ackIn
	if err := s.readJSON(w, r, &in); err != nil {
		return combtype.AckItem{}, err
	}
	return in.item()
}

func oldAckBatch(s *Handler, w http.ResponseWriter, r *http.Request) (string, []combtype.AckItem, error) {
	var in struct {
		Acknowledgments json.RawMessage `json:"acknowledgments"`
		ConsumerGroup   json.RawMessage `json:"consumerGroup"`
	}
	if err := s.readJSON(w, r, &in); err != nil {
		return "", nil, err
	}
	var raw []ackIn
	if len(in.Acknowledgments) == 0 || in.Acknowledgments[0] != '[' || json.Unmarshal(in.Acknowledgments, &raw) != nil {
		return "", nil, &badRequest{"acknowledgments array is required"}
	}
	group, _, ok := rawString(in.ConsumerGroup)
	if !ok {
		return "", nil, &badRequest{"consumerGroup must be a string"}
	}
	items := make([]combtype.AckItem, len(raw))
	for i := range raw {
		it, err := raw[i].item()
		if err != nil {
			return "", nil, err
		}
		items[i] = it
	}
	if group == "" {
		group = combtype.QueueModeGroup
	}
	return group, items, nil
}

// oldItemsIn is how a transaction's push op and a stream cycle's
// push_items read an items array from an already decoded body.
func oldItemsIn(raw []byte) ([]combtype.PushItem, error) {
	var items []pushItemIn
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
		return nil, &badRequest{"items array is required"}
	}
	return pushItems(items, "sub")
}

// The same steps through wireDecoder, as the handlers take them.

func newPush(s *Handler, w http.ResponseWriter, r *http.Request) ([]combtype.PushItem, error) {
	raw, err := s.readPush(w, r)
	if err != nil {
		return nil, err
	}
	return pushItems(raw, "sub")
}

func newAck(s *Handler, w http.ResponseWriter, r *http.Request) (combtype.AckItem, error) {
	in, err := s.readAck(w, r)
	if err != nil {
		return combtype.AckItem{}, err
	}
	return in.item()
}

func newAckBatch(s *Handler, w http.ResponseWriter, r *http.Request) (string, []combtype.AckItem, error) {
	return s.ackBatchRequest(w, r)
}

// A batch ack's body is read into a pooled buffer that the next request
// reuses: the items of one request keep their values after the next has
// been read into the same buffer.
func TestAckBatchItemsOutliveTheirPooledBody(t *testing.T) {
	s := &Handler{cfg: Config{MaxBodyBytes: DefaultMaxBodyBytes}}
	body := func(txn, part, lease string) []byte {
		return []byte(`{"consumerGroup":"g","acknowledgments":[` +
			`{"transactionId":"` + txn + `1","partitionId":"` + part + `","leaseId":"` + lease + `","status":"completed"},` +
			`{"transactionId":"` + txn + `2","partitionId":"` + part + `","leaseId":"` + lease + `","status":"completed"}]}`)
	}
	read := func(b []byte) []combtype.AckItem {
		t.Helper()
		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(b))
		group, items, err := s.ackBatchRequest(httptest.NewRecorder(), r)
		if err != nil || group != "g" || len(items) != 2 {
			t.Fatalf("ack batch = %q, %+v, %v", group, items, err)
		}
		return items
	}
	first := read(body("aaaaaaaa", "pppppppp", "llllllll"))
	want := fmt.Sprintf("%+v", first)
	for range 20 { // sync.Pool may drop a buffer: reuse it many times
		read(body("bbbbbbbb", "qqqqqqqq", "mmmmmmmm"))
	}
	if got := fmt.Sprintf("%+v", first); got != want {
		t.Fatalf("items changed after later requests:\n got %s\nwant %s", got, want)
	}
	if first[1].TxnID != "aaaaaaaa2" || first[1].PartitionID != "pppppppp" || first[1].LeaseID != "llllllll" ||
		first[1].Status != "completed" {
		t.Fatalf("items = %+v", first)
	}
}

func newItemsIn(raw []byte) ([]combtype.PushItem, error) {
	items, err := pushItemsIn(raw)
	if errors.Is(err, errNotItems) {
		return nil, &badRequest{"items array is required"}
	}
	if err != nil {
		return nil, err
	}
	return pushItems(items, "sub")
}

// serveBody runs decode on a request carrying body, under a body limit.
func serveBody[T any](body []byte, limit int64, decode func(*Handler, http.ResponseWriter, *http.Request) (T, error)) (T, error) {
	s := &Handler{cfg: Config{MaxBodyBytes: limit}}
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	return decode(s, httptest.NewRecorder(), r)
}

// sameAnswer says how two outcomes differ for a client, "" if they do not:
// the same status, and the same message unless both are a bad body (a
// syntax error, whose text is encoding/json's on one side).
func sameAnswer(oldErr, newErr error) string {
	if oldErr == nil && newErr == nil {
		return ""
	}
	if (oldErr == nil) != (newErr == nil) {
		return fmt.Sprintf("old answer %v, new answer %v", oldErr, newErr)
	}
	oldStatus, oldMsg := errorStatus(oldErr)
	newStatus, newMsg := errorStatus(newErr)
	oldBad, newBad := errors.Is(oldErr, errBadBody), errors.Is(newErr, errBadBody)
	if oldStatus != newStatus || oldBad != newBad || !oldBad && oldMsg != newMsg {
		return fmt.Sprintf("old answer %d %q, new answer %d %q", oldStatus, oldMsg, newStatus, newMsg)
	}
	return ""
}

// WireDecodeDiff decodes body as route ("push", "ack" or "ack/batch")
// reads it, through the old path and through wireDecoder, with the body
// limit at limit, and says how they differ ("" if they do not). For push
// it also reads the body as an already-decoded items array when it is
// valid JSON, as the transaction and stream routes do.
func WireDecodeDiff(route string, body []byte, limit int64) string {
	switch route {
	case "push":
		old, oldErr := serveBody(body, limit, oldPush)
		got, err := serveBody(body, limit, newPush)
		if d := sameAnswer(oldErr, err); d != "" {
			return d
		}
		if !reflect.DeepEqual(old, got) {
			return fmt.Sprintf("old items %+v, new items %+v", old, got)
		}
		if raw := bytes.TrimSpace(body); json.Valid(raw) {
			old, oldErr := oldItemsIn(raw)
			got, err := newItemsIn(raw)
			if d := sameAnswer(oldErr, err); d != "" {
				return "as an items array: " + d
			}
			if !reflect.DeepEqual(old, got) {
				return fmt.Sprintf("as an items array: old items %+v, new items %+v", old, got)
			}
		}
	case "ack":
		old, oldErr := serveBody(body, limit, oldAck)
		got, err := serveBody(body, limit, newAck)
		if d := sameAnswer(oldErr, err); d != "" {
			return d
		}
		if !reflect.DeepEqual(old, got) {
			return fmt.Sprintf("old item %+v, new item %+v", old, got)
		}
	case "ack/batch":
		type batch struct {
			group string
			items []combtype.AckItem
		}
		pair := func(f func(*Handler, http.ResponseWriter, *http.Request) (string, []combtype.AckItem, error)) func(*Handler, http.ResponseWriter, *http.Request) (batch, error) {
			return func(s *Handler, w http.ResponseWriter, r *http.Request) (batch, error) {
				g, items, err := f(s, w, r)
				return batch{g, items}, err
			}
		}
		old, oldErr := serveBody(body, limit, pair(oldAckBatch))
		got, err := serveBody(body, limit, pair(newAckBatch))
		if d := sameAnswer(oldErr, err); d != "" {
			return d
		}
		if !reflect.DeepEqual(old, got) {
			return fmt.Sprintf("old batch %+v, new batch %+v", old, got)
		}
	default:
		panic("WireDecodeDiff: unknown route " + route)
	}
	return ""
}

// answer is how a client reads the outcome of the new decoder.
func answer(err error) string {
	if err == nil {
		return "ok"
	}
	status, msg := errorStatus(err)
	if errors.Is(err, errBadBody) {
		msg = "Invalid JSON body"
	}
	return fmt.Sprintf("%d %s", status, msg)
}

func TestWireDecoderAnswersAsEncodingJSONDid(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, c := range []struct {
		route, body string
		limit       int64 // 0: the body's length
		want        string
	}{
		{"push", `{"items":[{"queue":"q","payload":{"a":[1,-0,1e5,"x"]}}]}`, 0, "ok"},
		{"push", " \t\r\n{ \"items\" : [ { \"queue\" : \"q\" , \"payload\" : [ ] } , null ] } \n", 0, "400 Queue must be a string"},
		{"push", `{"ITEMS":[{"QuEuE":"q","tranſactionId":"t"}]}`, 0, "ok"},
		{"push", `{"\u0069tems":[{"q\u0075eue":"\ud83d\ude00\ud800"}]}`, 0, "ok"},
		{"push", `{"items":[{"queue":"a","queue":null}]}`, 0, "400 Queue must be a string"},
		{"push", `{"items":[{"queue":1},5]}`, 0, "400 items array is required"},
		{"push", `{"items":[{"queue":1}]}`, 0, "400 Queue must be a string"},
		{"push", `{"items":[]} , `, 0, "400 Invalid JSON body"},
		{"push", `{"items":5,"items":[]}`, 0, "ok"},
		{"push", `null`, 0, "400 items array is required"},
		{"push", `[]`, 0, "400 Invalid JSON body"},
		{"push", "  ", 0, "400 Request body is required"},
		{"push", `{"items":[{"queue":"q","payload":"\x01"}]}`, 0, "400 Invalid JSON body"},
		{"push", `{"items":[{"queue":"q","payload":01}]}`, 0, "400 Invalid JSON body"},
		{"push", `{"items":[{"queue":"q","payload":` + deep(9997) + `}]}`, 0, "ok"},
		{"push", `{"items":[{"queue":"q","payload":` + deep(9998) + `}]}`, 0, "400 Invalid JSON body"},
		// Nothing but whitespace may follow the value, a stray bracket neither.
		{"push", `{"items":[]}}`, 0, "400 Invalid JSON body"},
		{"push", `{"items":[]}]x`, 0, "400 Invalid JSON body"},
		{"ack", `{"transactionId":"t","partitionId":"p"}]`, 0, "400 Invalid JSON body"},
		// Past the limit: too large, wherever the value ended.
		{"push", `{"items":[{"queue":"q"}]}`, 10, "413 Request body larger than 10 bytes"},
		{"push", `{"items":[{"queue":"q"}]}      `, 26, "413 Request body larger than 26 bytes"},
		{"push", `{"items":[{"queue":"q"}]}  x  `, 28, "400 Invalid JSON body"},
		{"push", `{"items":[{"queue":"q"x}]}`, 23, "400 Invalid JSON body"},
		{"push", `null  `, 4, "413 Request body larger than 4 bytes"},
		{"push", `null  `, 5, "413 Request body larger than 5 bytes"},
		{"ack", `{"transactionId":"t","partitionId":"p","status":"failed","error":"e\n"}`, 0, "ok"},
		{"ack", `{"transactionId":"t","partitionId":"p","leaseId":7}`, 0, "400 leaseId, status, error and consumerGroup must be strings"},
		{"ack", `null`, 0, "400 transactionId is required"},
		{"ack/batch", `{"acknowledgments":[{"transactionId":"t","partitionId":"p"}],"consumerGroup":null}`, 0, "ok"},
		{"ack/batch", `{"ac\u212Anowledgments":[],"consumerGroup":"g"}`, 0, "ok"},
		{"ack/batch", `{"acknowledgments":[],"consumerGroup":1}`, 0, "400 consumerGroup must be a string"},
		{"ack/batch", `{"acknowledgments":[{}, []],"consumerGroup":1}`, 0, "400 acknowledgments array is required"},
	} {
		limit := c.limit
		if limit == 0 {
			limit = int64(len(c.body))
		}
		if d := WireDecodeDiff(c.route, []byte(c.body), limit); d != "" {
			t.Errorf("%s %.80s (limit %d): %s", c.route, c.body, limit, d)
		}
		var err error
		switch c.route {
		case "push":
			_, err = serveBody([]byte(c.body), limit, newPush)
		case "ack":
			_, err = serveBody([]byte(c.body), limit, newAck)
		case "ack/batch":
			_, err = serveBody([]byte(c.body), limit, func(s *Handler, w http.ResponseWriter, r *http.Request) (int, error) {
				_, _, err := newAckBatch(s, w, r)
				return 0, err
			})
		}
		if got := answer(err); got != c.want {
			t.Errorf("%s %.80s (limit %d): got %s, want %s", c.route, c.body, limit, got, c.want)
		}
	}
}

// A payload is a slice of the body, not a copy, but one that an append
// cannot grow into the bytes after it.
func TestPushPayloadIsTheBodysBytes(t *testing.T) {
	body := []byte(`{"items":[{"queue":"q","payload":{"a": [1, 2]},"transactionId":"t"}]}`)
	items, err := decodePush(body, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := items[0].Payload
	if got, want := string(p), `{"a": [1, 2]}`; got != want {
		t.Fatalf("payload %s, want %s", got, want)
	}
	if &p[0] != &body[bytes.Index(body, []byte(`{"a"`))] {
		t.Error("payload was copied out of the body")
	}
	if cap(p) != len(p) {
		t.Errorf("payload capacity %d runs past its %d bytes", cap(p), len(p))
	}
}

// benchBodies are a 100-item push, each payload about 213 bytes, and a
// 100-item batch ack, as the SDKs send them.
func benchBodies() (push, ackBatch []byte) {
	var p, a bytes.Buffer
	p.WriteString(`{"items":[`)
	a.WriteString(`{"acknowledgments":[`)
	for i := range 100 {
		if i > 0 {
			p.WriteByte(',')
			a.WriteByte(',')
		}
		fmt.Fprintf(&p, `{"queue":"orders","partition":"Default","payload":{"orderId":"ord-%06d","customer":{"id":%d,"name":"Customer %d","tier":"gold"},"items":[{"sku":"SKU-1","qty":2,"price":19.99},{"sku":"SKU-2","qty":1,"price":5.5}],"note":"leave at door"},"transactionId":"0198d4f2-7c1e-7a3b-9c41-%012d"}`, i, i, i, i)
		fmt.Fprintf(&a, `{"transactionId":"0198d4f2-7c1e-7a3b-9c41-%012d","partitionId":"0198d4f2-0000-7000-8000-000000000001","status":"completed","error":null,"leaseId":"0198d4f2-1111-7000-8000-000000000002"}`, i)
	}
	p.WriteString(`]}`)
	a.WriteString(`],"consumerGroup":"workers"}`)
	return p.Bytes(), a.Bytes()
}

// BenchmarkWireDecode decodes the bodies of benchBodies from a request
// to broker items, through the old path and through wireDecoder.
func BenchmarkWireDecode(b *testing.B) {
	push, ack := benchBodies()
	run := func(b *testing.B, body []byte, decode func(*Handler, http.ResponseWriter, *http.Request) error) {
		s := &Handler{cfg: Config{MaxBodyBytes: DefaultMaxBodyBytes}}
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		rd := bytes.NewReader(body)
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			rd.Reset(body)
			r.Body, r.ContentLength = io.NopCloser(rd), int64(len(body))
			if err := decode(s, w, r); err != nil {
				b.Fatal(err)
			}
		}
	}
	ignore := func(f func(*Handler, http.ResponseWriter, *http.Request) ([]combtype.PushItem, error)) func(*Handler, http.ResponseWriter, *http.Request) error {
		return func(s *Handler, w http.ResponseWriter, r *http.Request) error { _, err := f(s, w, r); return err }
	}
	ignoreAck := func(f func(*Handler, http.ResponseWriter, *http.Request) (string, []combtype.AckItem, error)) func(*Handler, http.ResponseWriter, *http.Request) error {
		return func(s *Handler, w http.ResponseWriter, r *http.Request) error { _, _, err := f(s, w, r); return err }
	}
	b.Run("push/encoding-json", func(b *testing.B) { run(b, push, ignore(oldPush)) })
	b.Run("push/wire-decoder", func(b *testing.B) { run(b, push, ignore(newPush)) })
	b.Run("ack-batch/encoding-json", func(b *testing.B) { run(b, ack, ignoreAck(oldAckBatch)) })
	b.Run("ack-batch/wire-decoder", func(b *testing.B) { run(b, ack, ignoreAck(newAckBatch)) })
}
