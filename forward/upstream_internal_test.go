package forward

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
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
