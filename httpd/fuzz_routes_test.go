package httpd_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/clock"
	"github.com/comb-broker/comb/internal/combtest"
)

// FuzzEveryRoute sends an arbitrary query string and body to every route
// the server registers, with path parameters that name existing things or
// fuzzed names. Whatever a client sends the answer is never a 5xx (a panic
// would be one) but a 503 for a feature that is off, a body is JSON, and a
// 4xx or 503 changes nothing in the database:
// SQLite's data_version, read on a connection of its own, must not move.
// The seeds run as part of go test; go test -fuzz FuzzEveryRoute ./httpd
// explores further.
func FuzzEveryRoute(f *testing.F) {
	clk := clock.NewManual(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	var path string
	b := combtest.MustOpenBroker(f, combtest.Options{Clock: clk, Broker: func(o *broker.Options) {
		o.RetentionInterval = -1 // no background writes between two reads of data_version
		path = o.Path
	}})
	srv := httpd.NewHandler(b, httpd.Config{MaxBodyBytes: 1 << 20})
	routes := srv.Routes()

	// Something for the parameters to name: a queue with a partition, a
	// group with a cursor and a lease, a snapshot.
	ctx := context.Background()
	res, err := b.Push(ctx, []combtype.PushItem{{Queue: "q", Partition: "p", Payload: []byte(`{"a":1}`), TxnID: "t"}})
	if err != nil {
		f.Fatal(err)
	}
	if _, err := b.Pop(ctx, combtype.PopRequest{Queue: "q", Group: "g"}); err != nil {
		f.Fatal(err)
	}
	if _, err := b.SnapshotCreate(ctx, combtype.CreateSnapshotRequest{Name: "s", Group: "g", Queue: "q"}); err != nil {
		f.Fatal(err)
	}
	names := map[string]string{":queue": "q", ":partition": "p", ":group": "g", ":name": "s",
		":partitionId": res[0].PartitionID, ":transactionId": "t", ":leaseId": "l", ":kind": "queues"}

	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path)+"?_pragma=query_only(1)")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	conn, err := db.Conn(ctx) // data_version is per connection
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { conn.Close() })
	version := func(t *testing.T) int64 {
		var v int64
		if err := conn.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v); err != nil {
			t.Fatalf("data_version: %v", err)
		}
		return v
	}

	for i := range routes {
		for _, seed := range []struct{ query, body string }{
			{"", ""}, {"", `{}`}, {"batch=5&autoAck=true", `null`}, {"consumerGroup=g&limit=-1", `[]`},
			{"from=notatime&to=2026-13-01", `{"toEnd":true}`}, {"partition=p&offset=-9", `{"offset":-2}`},
			{"limit=99999999999999999999", `{"timestamp":"2026-03-01T12:00:00Z"}`}, {"%zz&a=;", `{"snapshot":"s"}`},
			{"subscriptionMode=timestamp&subscriptionFrom=x", `{"items":[{"queue":"q","payload":1}]}`},
			{"leaseTime=1e400", `{"seconds":9223372036854775807}`}, {"", `{"queue":"q","options":{"leaseTime":-1}}`},
		} {
			f.Add(uint8(i), "", seed.query, []byte(seed.body))
		}
		f.Add(uint8(i), "q%2Fx", "", []byte(`{`))
		f.Add(uint8(i), strings.Repeat("x", 300), "", []byte(`"x"`))
	}

	f.Fuzz(func(t *testing.T, route uint8, name, query string, body []byte) {
		method, pattern, _ := strings.Cut(routes[int(route)%len(routes)], " ")
		var target strings.Builder
		for seg := range strings.SplitSeq(strings.TrimPrefix(pattern, "/"), "/") {
			target.WriteByte('/')
			if v, ok := names[seg]; ok {
				if name != "" {
					v = name
				}
				seg = url.PathEscape(v)
			}
			target.WriteString(seg)
		}
		// A pop may park for its timeout; a fuzzed one must answer at once.
		target.WriteString("?wait=false&timeout=1&" + strings.ReplaceAll(query, "#", "%23"))
		req, err := http.NewRequest(method, target.String(), bytes.NewReader(body))
		if err != nil {
			return // not a request any client could send
		}
		req.RequestURI = req.URL.RequestURI()
		req.Header.Set("Content-Type", "application/json")
		before := version(t)
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		// 503 is a designed answer (a feature not enabled on this server),
		// held to the same rule as a 4xx below; any other 5xx is a fault.
		if rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("%s %s %q: %d %s", method, target.String(), body, rec.Code, rec.Body.Bytes())
		}
		if rec.Body.Len() > 0 && strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") &&
			!json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s %s %q: body is not JSON: %s", method, target.String(), body, rec.Body.Bytes())
		}
		if rec.Code >= 400 {
			if after := version(t); after != before {
				t.Fatalf("%s %s %q answered %d %s but changed the database", method, target.String(), body,
					rec.Code, rec.Body.Bytes())
			}
		}
	})
}
