package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/combtest"
)

// serveFile serves the existing database file path over real HTTP on
// 127.0.0.1 until the test ends. Unlike combtest.MustServer it does not
// require the file to pass comb check at cleanup: these tests damage it.
// The returned stop closes it earlier; it may be called more than once.
func serveFile(t *testing.T, path string) (*combtest.Server, func()) {
	t.Helper()
	b, err := broker.Open(context.Background(), broker.Options{Path: path, RetentionInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(httpd.NewHandler(b, httpd.Config{}))
	var once sync.Once
	stop := func() {
		once.Do(func() {
			b.Drain()
			ts.Close()
			if err := b.Close(); err != nil {
				t.Errorf("close broker: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return &combtest.Server{Client: &combtest.Client{TB: t, URL: ts.URL, HTTP: ts.Client()}, Broker: b, HTTP: ts}, stop
}

// TestADamagedSegmentIsListedByTheRouteTheCommandAndCheck damages the
// middle segment of a real file, lets two groups pop past it over HTTP,
// and finds it in GET /api/v1/quarantine, in comb quarantine and in comb
// check, each naming the offsets the groups did not receive.
func TestADamagedSegmentIsListedByTheRouteTheCommandAndCheck(t *testing.T) {
	path := makeDB(t) // billing has completed offsets 0-4
	tamper(t, path, `UPDATE segments SET data = zeroblob(length(data)) WHERE base_offset = 5`)
	srv, _ := serveFile(t, path)

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
	if list.Total != 1 || len(list.Segments) != 1 || list.Limit != combtype.DefaultQuarantineLimit {
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

// popPast pops queue orders for each group with autoAck and returns what
// was delivered as "group:transactionId".
func popPast(t *testing.T, srv *combtest.Server, groups ...string) []string {
	t.Helper()
	var got []string
	for _, group := range groups {
		p := srv.Pop("/api/v1/pop/queue/orders?batch=10&autoAck=true&consumerGroup=" + group)
		if p.Status != http.StatusOK && p.Status != http.StatusNoContent {
			t.Fatalf("pop %s = %d", group, p.Status)
		}
		for _, m := range p.Messages {
			got = append(got, group+":"+m.TransactionID)
		}
	}
	return got
}

func totals(t *testing.T, srv *combtest.Server) (quarantined, dead int64) {
	t.Helper()
	var q, d struct {
		Total int64 `json:"total"`
	}
	srv.Do("GET", "/api/v1/quarantine", nil).JSON(t, &q)
	srv.Do("GET", "/api/v1/dlq?queue=orders", nil).JSON(t, &d)
	return q.Total, d.Total
}

// TestARestoredSegmentIsDeadLetteredOnlyOnceItReads: restoring a copy that
// still fails its checksum is a 409 that changes nothing; once the stored
// copy is repaired, its messages are dead-lettered for each group past it,
// and a re-drive appends them once under new transactionIds, though the
// original dedup keys are still recorded.
func TestARestoredSegmentIsDeadLetteredOnlyOnceItReads(t *testing.T) {
	path := makeDB(t)
	tamper(t, path, `UPDATE segments SET checksum = checksum + 1 WHERE base_offset = 5`)
	srv, stop := serveFile(t, path)
	popPast(t, srv, "billing", "audit", "audit")
	if q, d := totals(t, srv); q != 1 || d != 0 {
		t.Fatalf("after popping past the damage: %d quarantined, %d dead letters", q, d)
	}
	for _, tc := range []struct {
		path string
		code int
		text string
	}{
		{"/api/v1/quarantine/1/restore", http.StatusConflict, "still cannot be read"},
		{"/api/v1/quarantine/99/restore", http.StatusNotFound, "Quarantined segment not found"},
		{"/api/v1/quarantine/x/restore", http.StatusBadRequest, "positive integer"},
		{"/api/v1/quarantine/0/restore", http.StatusBadRequest, "positive integer"},
	} {
		if r := srv.Do("POST", tc.path, nil); r.Status != tc.code || !strings.Contains(string(r.Body), tc.text) {
			t.Fatalf("POST %s = %d %s, want %d %q", tc.path, r.Status, r.Body, tc.code, tc.text)
		}
	}
	if q, d := totals(t, srv); q != 1 || d != 0 {
		t.Fatalf("a refused restore changed something: %d quarantined, %d dead letters", q, d)
	}
	stop()

	// The operator repairs the stored copy by hand.
	tamper(t, path, `UPDATE quarantined_segments SET checksum = checksum - 1 WHERE id = 1`)
	srv, _ = serveFile(t, path)
	if _, err := runComb(t, srv, nil, "quarantine", "restore", "x"); err == nil || !strings.Contains(err.Error(), "positive integer") {
		t.Fatalf("comb quarantine restore x: %v", err)
	}
	if _, err := runComb(t, srv, nil, "quarantine", "restore", "7"); err == nil || !strings.Contains(err.Error(), "Quarantined segment not found") {
		t.Fatalf("comb quarantine restore 7: %v", err)
	}
	out, err := runComb(t, srv, nil, "quarantine", "restore", "1")
	if err != nil || !strings.Contains(out, "segment 1 of orders reads again: 5 messages dead-lettered for audit, billing (10 rows)") {
		t.Fatalf("comb quarantine restore 1 of the repaired copy: %v\n%s", err, out)
	}
	if q, d := totals(t, srv); q != 0 || d != 10 {
		t.Fatalf("after restore: %d quarantined, %d dead letters", q, d)
	}
	if r := srv.Do("POST", "/api/v1/quarantine/1/restore", nil); r.Status != http.StatusNotFound {
		t.Fatalf("a second restore = %d %s", r.Status, r.Body)
	}
	out, err = runComb(t, srv, nil, "dlq", "--queue", "orders", "--group", "audit")
	if err != nil || !strings.Contains(out, "restored from quarantined segment 1") || !strings.Contains(out, "5 shown, 5 in all") {
		t.Fatalf("comb dlq after restore: %v\n%s", err, out)
	}

	out, err = runComb(t, srv, nil, "dlq", "redrive", "--queue", "orders")
	if err != nil || !strings.Contains(out, "re-drove 5 messages to orders") {
		t.Fatalf("redrive after restore: %v\n%s", err, out)
	}
	got := popPast(t, srv, "billing", "audit")
	if len(got) != 10 || !strings.HasPrefix(got[0], "billing:m5:redrive:") || !strings.HasPrefix(got[9], "audit:m9:redrive:") {
		t.Fatalf("delivered after redrive: %v", got)
	}
}
