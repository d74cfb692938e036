package httpd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/comb-broker/comb/combtype"
	"github.com/comb-broker/comb/internal/combtest"
)

// The snapshot listing answers at most a page of 1000, by name, with the
// total and a Link to the next page: a client creating snapshots without
// end made it grow with them (30,000: a reply of 10 MB).
func TestSnapshotListingAnswersBoundedPages(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	s.Push(map[string]any{"queue": "q", "payload": 1})
	const n = 1003
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			_, err := s.Broker.SnapshotCreate(context.Background(), combtype.CreateSnapshotRequest{Name: fmt.Sprintf("s%04d", i), Queue: "q"})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	type page struct {
		Snapshots []struct {
			Name string `json:"name"`
		} `json:"snapshots"`
	}
	get := func(path string) (page, http.Header) {
		t.Helper()
		resp, err := http.Get(s.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var p page
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
			t.Fatal(err)
		}
		return p, resp.Header
	}
	p, h := get("/api/v1/snapshots")
	if len(p.Snapshots) != 1000 || p.Snapshots[0].Name != "s0000" || p.Snapshots[999].Name != "s0999" ||
		h.Get("X-Total-Count") != "1003" || h.Get("Link") != `</api/v1/snapshots?limit=1000&offset=1000>; rel="next"` {
		t.Fatalf("first page: %d rows, total %q, link %q", len(p.Snapshots), h.Get("X-Total-Count"), h.Get("Link"))
	}
	p, h = get("/api/v1/snapshots?limit=1000&offset=1000")
	if len(p.Snapshots) != 3 || p.Snapshots[2].Name != "s1002" || h.Get("Link") != "" {
		t.Fatalf("last page: %+v, link %q", p.Snapshots, h.Get("Link"))
	}
	p, h = get("/api/v1/snapshots?queue=q&limit=2&offset=5")
	if len(p.Snapshots) != 2 || p.Snapshots[0].Name != "s0005" || h.Get("X-Total-Count") != "1003" {
		t.Fatalf("a page of 2: %+v, total %q", p.Snapshots, h.Get("X-Total-Count"))
	}
	if r := s.Do("GET", "/api/v1/snapshots?limit=1001", nil); r.Status != http.StatusBadRequest {
		t.Fatalf("limit 1001: %d %s", r.Status, r.Body)
	}
	if all, err := s.Broker.SnapshotList(context.Background(), combtype.SnapshotFilter{}); err != nil || len(all) != n {
		t.Fatalf("SnapshotList: %d, %v; want every snapshot", len(all), err)
	}
}
