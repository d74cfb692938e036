package httpd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
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

// A snapshot's labels are bounded as Pub/Sub bounds them: 64 labels, keys
// of 1 to 63 characters, values of at most 63. Past them, create and
// update are a 400 naming the bound, and nothing changes.
func TestSnapshotLabelsAreBounded(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	s.Push(map[string]any{"queue": "q", "payload": 1})
	many := map[string]string{}
	for i := range 65 {
		many[fmt.Sprintf("k%02d", i)] = "v"
	}
	long := strings.Repeat("é", 64)
	for _, c := range []struct {
		labels map[string]string
		want   string
	}{
		{many, "labels holds 65 labels; at most 64 are accepted"},
		{map[string]string{long: "v"}, "a labels key is 64 characters long; at most 63 are accepted"},
		{map[string]string{"k": long}, `labels["k"] is 64 characters long; at most 63 are accepted`},
		{map[string]string{"": "v"}, "a labels key is empty"},
	} {
		r := s.Do("POST", "/api/v1/snapshots", map[string]any{"name": "s", "queue": "q", "labels": c.labels})
		if r.Status != http.StatusBadRequest || r.Map(t)["error"] != c.want {
			t.Errorf("create: %d %s; want 400 %q", r.Status, r.Body, c.want)
		}
	}
	if r := s.Do("GET", "/api/v1/snapshots/s", nil); r.Status != http.StatusNotFound {
		t.Fatalf("a refused snapshot exists: %d %s", r.Status, r.Body)
	}
	delete(many, "k64")
	ok := map[string]string{strings.Repeat("é", 63): strings.Repeat("é", 63)}
	for _, labels := range []map[string]string{many, ok} {
		r := s.Do("POST", "/api/v1/snapshots", map[string]any{"name": "s", "queue": "q", "labels": labels})
		if r.Status != http.StatusCreated {
			t.Fatalf("create within the bounds: %d %s", r.Status, r.Body)
		}
		s.Do("DELETE", "/api/v1/snapshots/s", nil)
	}
	s.Do("POST", "/api/v1/snapshots", map[string]any{"name": "s", "queue": "q", "labels": map[string]string{"a": "b"}})
	r := s.Do("PUT", "/api/v1/snapshots/s", map[string]any{"labels": map[string]string{"k": long}})
	if r.Status != http.StatusBadRequest {
		t.Fatalf("update past the bound: %d %s", r.Status, r.Body)
	}
	var got struct {
		Labels map[string]string `json:"labels"`
	}
	s.Do("GET", "/api/v1/snapshots/s", nil).JSON(t, &got)
	if len(got.Labels) != 1 || got.Labels["a"] != "b" {
		t.Fatalf("labels after a refused update: %v", got.Labels)
	}
}
