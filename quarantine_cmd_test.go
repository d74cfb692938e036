package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/combtest"
)

// serveFile serves the existing database file path over real HTTP on
// 127.0.0.1 until the test ends. Unlike combtest.MustServer it does not
// require the file to pass comb check at cleanup: these tests damage it.
func serveFile(t *testing.T, path string) *combtest.Server {
	t.Helper()
	b, err := broker.Open(context.Background(), broker.Options{Path: path, RetentionInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(httpd.New(b, httpd.Config{}))
	t.Cleanup(func() {
		b.Drain()
		ts.Close()
		if err := b.Close(); err != nil {
			t.Errorf("close broker: %v", err)
		}
	})
	return &combtest.Server{Client: &combtest.Client{TB: t, URL: ts.URL, HTTP: ts.Client()}, Broker: b, HTTP: ts}
}

// TestADamagedSegmentIsListedByTheRouteTheCommandAndCheck damages the
// middle segment of a real file, lets two groups pop past it over HTTP,
// and finds it in GET /api/v1/quarantine, in comb quarantine and in comb
// check, each naming the offsets the groups did not receive.
func TestADamagedSegmentIsListedByTheRouteTheCommandAndCheck(t *testing.T) {
	path := makeDB(t) // billing has completed offsets 0-4
	tamper(t, path, `UPDATE segments SET data = zeroblob(length(data)) WHERE base_offset = 5`)
	srv := serveFile(t, path)

	var quiet struct {
		Segments []map[string]any `json:"segments"`
		Total    int64            `json:"total"`
	}
	srv.Do("GET", "/api/v1/quarantine", nil).JSON(t, &quiet)
	if quiet.Total != 0 || len(quiet.Segments) != 0 {
		t.Fatalf("quarantine before any group met the damage = %+v", quiet)
	}

	var got []string
	for _, group := range []string{"billing", "audit", "audit"} {
		p := srv.Pop("/api/v1/pop/queue/orders?batch=10&autoAck=true&consumerGroup=" + group)
		if p.Status != http.StatusOK {
			t.Fatalf("pop %s = %d", group, p.Status)
		}
		for _, m := range p.Messages {
			got = append(got, group+":"+m.TransactionID)
		}
	}
	want := "billing:m10 billing:m11 billing:m12 billing:m13 billing:m14 audit:m0 audit:m1 audit:m2 audit:m3 audit:m4 " +
		"audit:m10 audit:m11 audit:m12 audit:m13 audit:m14"
	if strings.Join(got, " ") != want {
		t.Fatalf("delivered %v\nwant %s", got, want)
	}

	var list struct {
		Segments []struct {
			ID            int64    `json:"id"`
			QueueName     string   `json:"queue"`
			PartitionName string   `json:"partition"`
			PartitionID   string   `json:"partitionId"`
			First         int64    `json:"firstOffset"`
			Last          int64    `json:"lastOffset"`
			Frames        int64    `json:"frames"`
			Reason        string   `json:"reason"`
			Bytes         int64    `json:"bytes"`
			QuarantinedAt string   `json:"quarantinedAt"`
			PassedBy      []string `json:"passedBy"`
		} `json:"segments"`
		Total int64 `json:"total"`
		Limit int   `json:"limit"`
	}
	res := srv.Do("GET", "/api/v1/quarantine?queue=orders&partition=p1", nil)
	if res.Status != http.StatusOK {
		t.Fatalf("GET /api/v1/quarantine = %d %s", res.Status, res.Body)
	}
	res.JSON(t, &list)
	if list.Total != 1 || len(list.Segments) != 1 || list.Limit != broker.DefaultQuarantineLimit {
		t.Fatalf("quarantine = %s", res.Body)
	}
	s := list.Segments[0]
	if s.QueueName != "orders" || s.PartitionName != "p1" || s.PartitionID == "" || s.First != 5 || s.Last != 9 ||
		s.Frames != 5 || s.Bytes == 0 || s.QuarantinedAt == "" || !strings.Contains(s.Reason, "corrupt") ||
		strings.Join(s.PassedBy, ",") != "audit,billing" {
		t.Fatalf("quarantined segment = %s", res.Body)
	}
	for _, q := range []string{"queue=other", "partition=p2"} {
		var none struct {
			Segments []any `json:"segments"`
			Total    int64 `json:"total"`
		}
		srv.Do("GET", "/api/v1/quarantine?"+q, nil).JSON(t, &none)
		if none.Total != 0 || len(none.Segments) != 0 {
			t.Fatalf("quarantine?%s = %+v", q, none)
		}
	}
	var page struct {
		Segments []any `json:"segments"`
		Total    int64 `json:"total"`
	}
	srv.Do("GET", "/api/v1/quarantine?offset=1", nil).JSON(t, &page)
	if page.Total != 1 || len(page.Segments) != 0 {
		t.Fatalf("quarantine past the last page = %+v", page)
	}
	for _, bad := range []string{"limit=ten", "offset=-1", "limit=1.5"} {
		if r := srv.Do("GET", "/api/v1/quarantine?"+bad, nil); r.Status != http.StatusBadRequest ||
			!strings.Contains(string(r.Body), "non-negative integer") {
			t.Fatalf("quarantine?%s = %d %s", bad, r.Status, r.Body)
		}
	}

	out, err := runComb(t, srv, nil, "quarantine")
	if err != nil {
		t.Fatalf("comb quarantine: %v", err)
	}
	for _, w := range []string{"orders", "p1", "5-9", "audit,billing", "corrupt", "1 shown, 1 in all"} {
		if !strings.Contains(out, w) {
			t.Fatalf("comb quarantine lacks %q:\n%s", w, out)
		}
	}
	if out, err := runComb(t, srv, nil, "quarantine", "--queue", "other"); err != nil || !strings.Contains(out, "0 shown, 0 in all") {
		t.Fatalf("comb quarantine --queue other: %v\n%s", err, out)
	}

	out, err = runCheck(t, path)
	if err == nil {
		t.Fatalf("check passed a file with a quarantined segment:\n%s", out)
	}
	for _, w := range []string{
		"checksum: queue orders partition p1 offsets 5-9: segment corrupt",
		"quarantine: queue orders partition p1 offsets 5-9: segment 1 of 5 messages set aside at ",
		"did not receive offsets 5-9 unless they read them before: audit, billing",
		"2 findings",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("comb check lacks %q:\n%s", w, out)
		}
	}
}
