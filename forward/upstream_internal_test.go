package forward

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// An upstream that answers more than a forwarder reads is an upstream
// error once the bound is passed, declared or not, not a reply read whole
// (a 300 MB one took comb to 628-739 MB, at every retry).
func TestAnUpstreamReplyPastTheBoundIsAnErrorNotReadWhole(t *testing.T) {
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	for _, declared := range []bool{false, true} {
		t.Run("declared="+strconv.FormatBool(declared), func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if declared {
					w.Header().Set("Content-Length", strconv.Itoa(300<<20))
				}
				for range 300 {
					if _, err := w.Write(chunk); err != nil {
						return
					}
				}
			}))
			defer ts.Close()
			u := &upstream{client: ts.Client(), base: ts.URL}
			status, body, err := u.do(context.Background(), "GET", "/api/v1/pop/queue/q", nil)
			var ue *UpstreamError
			if !errors.As(err, &ue) || len(body) != 0 {
				t.Fatalf("a 300 MB reply: status %d, %d bytes, %v; want an UpstreamError and nothing read", status, len(body), err)
			}
		})
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(chunk) }))
	defer ts.Close()
	u := &upstream{client: ts.Client(), base: ts.URL}
	if status, body, err := u.do(context.Background(), "GET", "/", nil); err != nil || status != http.StatusOK || len(body) != len(chunk) {
		t.Errorf("a 1 MB reply: %d, %d bytes, %v", status, len(body), err)
	}
}

// The body of a forwarded push, sent in parts with its large payloads
// read where they lie, is the JSON the encoder made of the whole, with
// its length declared, and is sent whole again on a retry of the
// request.
func TestAPushBodySentInPartsIsThePushsJSON(t *testing.T) {
	big := []byte(`{"s":"` + strings.Repeat("y<&>", 3<<10) + `"}`)
	items := []wireItem{
		{Queue: "q", Partition: "Default", Payload: json.RawMessage(`1`), TransactionID: "dev:a"},
		{Queue: "q/é\"\\", Partition: "p\u2028", Payload: big, TransactionID: "dev:b", TraceID: "0b7e5c1e-0000-4000-8000-000000000001"},
		{Queue: "q", Partition: "Default", Payload: json.RawMessage(" [1, {\"a\": null}]\n"), TransactionID: "dev:c"},
		{Queue: "q", Partition: "Default", Payload: big, TransactionID: "dev:d"},
	}
	var got []byte
	var declared int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		declared = r.ContentLength
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`[{"status":"queued"},{"status":"queued"},{"status":"duplicate"},{"status":"queued"}]`))
	}))
	defer ts.Close()
	u := &upstream{base: ts.URL, client: ts.Client()}
	st, err := u.push(context.Background(), items)
	if err != nil || len(st) != 4 {
		t.Fatalf("push = %v, %v", st, err)
	}
	want, err := json.Marshal(map[string]any{"items": items})
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(got, &a); err != nil {
		t.Fatalf("the body sent is not JSON: %v\n%.300s", err, got)
	}
	if err := json.Unmarshal(want, &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("the body sent differs from the push's JSON:\n%.500s\nwant\n%.500s", got, want)
	}
	if declared != int64(len(got)) {
		t.Fatalf("declared %d bytes, sent %d", declared, len(got))
	}
	parts, ok := pushBody(items)
	if !ok || len(parts) != 5 {
		t.Fatalf("pushBody made %d parts (ok %v), want the two large payloads apart: 5", len(parts), ok)
	}
	if _, ok := pushBody([]wireItem{{Queue: "q", Payload: json.RawMessage(`{"a":`)}}); ok {
		t.Fatal("pushBody took a payload that is not JSON")
	}
}
