package httpd

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestPushRepliesNameTheirTypeAndLength: a push reply, short or past
// net/http's buffer, arrives as JSON with its length named and unchunked,
// whether writePushReply or net/http named the length.
func TestPushRepliesNameTheirTypeAndLength(t *testing.T) {
	for _, n := range []int{2, pushReplyBuffered - 1, pushReplyBuffered, 64 << 10} {
		body := []byte(`[` + strings.Repeat(" ", n-2) + `]`)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			writePushReply(w, body)
		}))
		resp, err := http.Post(srv.URL, "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusCreated || !bytes.Equal(got, body) {
			t.Fatalf("%d bytes: status %d, %d bytes back", n, resp.StatusCode, len(got))
		}
		if ct := resp.Header.Values("Content-Type"); len(ct) != 1 || ct[0] != "application/json" {
			t.Fatalf("%d bytes: Content-Type %q", n, ct)
		}
		if resp.ContentLength != int64(n) || len(resp.TransferEncoding) != 0 {
			t.Fatalf("%d bytes: Content-Length %d, Transfer-Encoding %q", n, resp.ContentLength, resp.TransferEncoding)
		}
	}
	// The shared value is never written into: a handler that adds a
	// Content-Type after it grows a copy.
	rec := httptest.NewRecorder()
	writePushReply(rec, []byte(`[]`))
	rec.Header().Add("Content-Type", "text/plain")
	if len(jsonContentType) != 1 || jsonContentType[0] != "application/json" {
		t.Fatalf("the shared Content-Type changed: %q", jsonContentType)
	}
}

// BenchmarkPushReply answers a push of one message's reply (~250 bytes)
// over loopback with the headers set as before (writeJSONBytes) and as
// now (writePushReply), in the same run; compare allocs/op, which count
// client and server alike, and ns/op.
func BenchmarkPushReply(b *testing.B) {
	body := []byte(`[{"index":0,"transaction_id":"0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b","transactionId":"0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b","status":"queued","message_id":"0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c","partition_id":"0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5d","trace_id":null,"queueName":"orders"}]`)
	for _, v := range []struct {
		name  string
		write func(http.ResponseWriter)
	}{
		{"old", func(w http.ResponseWriter) { writeJSONBytes(w, http.StatusCreated, body) }},
		{"new", func(w http.ResponseWriter) { writePushReply(w, body) }},
	} {
		b.Run(v.name, func(b *testing.B) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				v.write(w)
			}))
			defer srv.Close()
			client := srv.Client()
			b.ReportAllocs()
			for b.Loop() {
				resp, err := client.Post(srv.URL, "application/json", strings.NewReader(`{"items":[]}`))
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}
