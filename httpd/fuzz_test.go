package httpd_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/combtest"
)

// FuzzWriteRoutes sends arbitrary bodies to the routes that write. Whatever
// a client sends, the answer is never a 5xx and always JSON when it has a
// body. The seeds run as part of go test; go test -fuzz FuzzWriteRoutes
// explores further.
func FuzzWriteRoutes(f *testing.F) {
	for _, seed := range []string{
		`{"items":[{"queue":"q","payload":{"a":1}}]}`,
		`{"items":[{"queue":"q","partition":"p","transactionId":"t","traceId":"0198f0f8-0000-7000-8000-000000000000"}]}`,
		`{"items":[{"queue":1}]}`, `{"items":null}`, `{"items":[null]}`, `[]`, `null`, `"x"`, `{`, ``,
		`{"acknowledgments":[{"transactionId":"t","partitionId":"p","status":"failed"}],"consumerGroup":"g"}`,
		`{"operations":[{"type":"push","items":[{"queue":"q"}]},{"type":"ack","transactionId":"t","partitionId":"p"}]}`,
		`{"queue":"q","options":{"leaseTime":1e400,"retryLimit":"3"}}`,
		`{"items":[{"queue":"q","payload":` + string(bytes.Repeat([]byte("["), 5000)) + `}]}`,
	} {
		for route := range 5 {
			f.Add(uint8(route), []byte(seed))
		}
	}
	b := combtest.MustOpenBroker(f, combtest.Options{})
	h := httpd.NewHandler(b, httpd.Config{MaxBodyBytes: 1 << 20})
	routes := []string{"/api/v1/push", "/api/v1/ack", "/api/v1/ack/batch", "/api/v1/transaction", "/api/v1/configure"}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		path := routes[int(route)%len(routes)]
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %q: %d %s", path, body, rec.Code, rec.Body.Bytes())
		}
		if rec.Body.Len() > 0 && !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s %q: body is not JSON: %s", path, body, rec.Body.Bytes())
		}
	})
}
