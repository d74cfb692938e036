package httpd_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"testing"

	"github.com/comb-broker/comb/internal/combtest"
)

// snapshotReply is a snapshot object as the snapshot routes answer it.
type snapshotReply struct {
	Name       string `json:"name"`
	Partitions []struct {
		Partition   string `json:"partition"`
		PartitionID string `json:"partitionId"`
		Committed   int64  `json:"committed"`
	} `json:"partitions"`
	Pagination *struct {
		Limit  int     `json:"limit"`
		Offset int     `json:"offset"`
		Next   *string `json:"next"`
	} `json:"pagination"`
}

// rawCall sends method path with a JSON body and returns the status, the
// body and the headers, which combtest's Do leaves out.
func rawCall(t *testing.T, s *combtest.Server, method, path string, body any) (int, []byte, http.Header) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		enc, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.HTTP.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, data, resp.Header
}

var nextLinkHeader = regexp.MustCompile(`^<([^>]+)>; rel="next"$`)

// linkNext is the path and query of a Link rel="next", "" without one.
func linkNext(t *testing.T, h http.Header) string {
	t.Helper()
	v := h.Get("Link")
	if v == "" {
		return ""
	}
	m := nextLinkHeader.FindStringSubmatch(v)
	if m == nil {
		t.Fatalf("Link %q is not a rel=next link", v)
	}
	return m[1]
}

// A snapshot answers its partitions a page at a time, as the queue
// details do: a snapshot of a million partitions was one reply of 93 MB,
// read whole into the server's memory (473 MB). Walked through the Link
// headers, the pages hold every partition once, in creation order, with
// what was captured on each.
func TestSnapshotPartitionsComeInPages(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	const n = 2500
	// Names are a permutation of creation order, so the pages show
	// which order they follow.
	name := func(i int) string { return fmt.Sprintf("p%04d", i*7919%n) }
	want := map[string]int64{}
	var items []map[string]any
	for i := range n {
		k := 1 + i%3
		for j := range k {
			items = append(items, map[string]any{"queue": "q", "partition": name(i), "payload": j})
		}
		want[name(i)] = int64(k - 1)
		if len(items) >= 2000 || i == n-1 {
			s.Push(items...)
			items = nil
		}
	}
	if r := s.Do("POST", "/api/v1/consumer-groups/g/queues/q/seek", map[string]any{"toEnd": true}); r.Status != http.StatusOK {
		t.Fatalf("seek: %d %s", r.Status, r.Body)
	}
	// The queue details walk the partitions in creation order.
	var created []string
	for path := "/api/v1/resources/queues/q?limit=1000"; path != ""; {
		status, body, h := rawCall(t, s, "GET", path, nil)
		if status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, status, body)
		}
		var qd struct {
			Partitions []struct {
				Name string `json:"name"`
			} `json:"partitions"`
		}
		if err := json.Unmarshal(body, &qd); err != nil {
			t.Fatal(err)
		}
		for _, p := range qd.Partitions {
			created = append(created, p.Name)
		}
		path = linkNext(t, h)
	}
	if len(created) != n {
		t.Fatalf("queue details listed %d partitions, want %d", len(created), n)
	}

	checkFirst := func(what string, status int, body []byte, h http.Header, wantStatus int, wrapped bool) {
		t.Helper()
		if status != wantStatus {
			t.Fatalf("%s: %d %s", what, status, body)
		}
		var sn snapshotReply
		if wrapped {
			var out struct {
				Snapshot snapshotReply `json:"snapshot"`
			}
			if err := json.Unmarshal(body, &out); err != nil {
				t.Fatal(err)
			}
			sn = out.Snapshot
		} else if err := json.Unmarshal(body, &sn); err != nil {
			t.Fatal(err)
		}
		if len(sn.Partitions) != 1000 || sn.Pagination == nil || sn.Pagination.Limit != 1000 || sn.Pagination.Offset != 0 ||
			sn.Pagination.Next == nil || *sn.Pagination.Next != sn.Partitions[999].PartitionID {
			t.Fatalf("%s: %d partitions, pagination %+v; want the first 1000 and where the next start", what, len(sn.Partitions), sn.Pagination)
		}
		for i, p := range sn.Partitions {
			if p.Partition != created[i] || p.Committed != want[p.Partition] {
				t.Fatalf("%s: partition %d is %s at %d; want %s at %d", what, i, p.Partition, p.Committed, created[i], want[created[i]])
			}
		}
		wantLink := "/api/v1/snapshots/s?" + url.Values{"after": {sn.Partitions[999].PartitionID}, "limit": {"1000"}}.Encode()
		if got := linkNext(t, h); got != wantLink {
			t.Fatalf("%s: Link to %q, want %q", what, got, wantLink)
		}
	}
	status, body, h := rawCall(t, s, "POST", "/api/v1/consumer-groups/g/queues/q/snapshots", map[string]any{"name": "s"})
	checkFirst("create", status, body, h, http.StatusCreated, true)
	status, body, h = rawCall(t, s, "PUT", "/api/v1/snapshots/s", map[string]any{"labels": map[string]string{"a": "b"}})
	checkFirst("update", status, body, h, http.StatusOK, false)
	status, body, h = rawCall(t, s, "GET", "/api/v1/snapshots/s", nil)
	checkFirst("get", status, body, h, http.StatusOK, false)
	status, body, h = rawCall(t, s, "POST", "/api/v1/snapshots", map[string]any{"name": "flat", "consumerGroup": "g", "queue": "q"})
	if status != http.StatusCreated || linkNext(t, h) == "" || !bytes.Contains(body, []byte(`"pagination":{"limit":1000,"offset":0,"next":"`)) {
		t.Fatalf("flat create: %d, Link %q", status, h.Get("Link"))
	}

	// Pushed after the capture: nothing of it shows in the snapshot.
	s.Push(map[string]any{"queue": "q", "partition": "late", "payload": 1})
	var walked []string
	pages := 0
	for path := "/api/v1/snapshots/s?limit=700"; path != ""; pages++ {
		status, body, h := rawCall(t, s, "GET", path, nil)
		if status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, status, body)
		}
		var sn snapshotReply
		if err := json.Unmarshal(body, &sn); err != nil {
			t.Fatal(err)
		}
		next := linkNext(t, h)
		last := len(walked)+len(sn.Partitions) == n
		switch {
		case sn.Pagination == nil || sn.Pagination.Limit != 700:
			t.Fatalf("GET %s: pagination %+v, want limit 700", path, sn.Pagination)
		case last && (next != "" || sn.Pagination.Next != nil || len(sn.Partitions) != n%700):
			t.Fatalf("last page %s: %d partitions, Link %q, next %v", path, len(sn.Partitions), next, sn.Pagination.Next)
		case !last && (next == "" || sn.Pagination.Next == nil || len(sn.Partitions) != 700 ||
			*sn.Pagination.Next != sn.Partitions[len(sn.Partitions)-1].PartitionID):
			t.Fatalf("page %s: %d partitions, Link %q, next %v", path, len(sn.Partitions), next, sn.Pagination.Next)
		}
		for _, p := range sn.Partitions {
			if p.Committed != want[p.Partition] {
				t.Fatalf("partition %s captured at %d, want %d", p.Partition, p.Committed, want[p.Partition])
			}
			walked = append(walked, p.Partition)
		}
		path = next
	}
	if pages != 4 || !slices.Equal(walked, created) {
		t.Fatalf("%d pages walked %d partitions; want 4 pages of every partition once, in creation order", pages, len(walked))
	}
}

// A snapshot of one page answers as it did before its partitions were
// paged: no pagination, no Link. Its partitions come in creation order
// (they came by name), the order the pages of a larger one follow.
func TestSnapshotOfOnePageKeepsItsShape(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	s.Push(map[string]any{"queue": "q", "partition": "us", "payload": 1},
		map[string]any{"queue": "q", "partition": "eu", "payload": 1},
		map[string]any{"queue": "q", "partition": "ap", "payload": 1})
	keys := []string{"consumerGroup", "createdAt", "expireTime", "labels", "name", "partitions", "queue"}
	check := func(what string, status int, body []byte, h http.Header, wrapped bool) snapshotReply {
		t.Helper()
		if status >= 300 {
			t.Fatalf("%s: %d %s", what, status, body)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(body, &obj); err != nil {
			t.Fatal(err)
		}
		if wrapped {
			if len(obj) != 2 || string(obj["success"]) != "true" {
				t.Fatalf("%s: %s", what, body)
			}
			body = obj["snapshot"]
			obj = nil
			if err := json.Unmarshal(body, &obj); err != nil {
				t.Fatal(err)
			}
		}
		got := make([]string, 0, len(obj))
		for k := range obj {
			got = append(got, k)
		}
		slices.Sort(got)
		if !slices.Equal(got, keys) || h.Get("Link") != "" {
			t.Fatalf("%s: keys %v, Link %q; want %v and no Link", what, got, h.Get("Link"), keys)
		}
		var sn snapshotReply
		if err := json.Unmarshal(body, &sn); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, p := range sn.Partitions {
			names = append(names, p.Partition)
		}
		if !slices.Equal(names, []string{"us", "eu", "ap"}) {
			t.Fatalf("%s: partitions %v, want us, eu, ap as created", what, names)
		}
		return sn
	}
	status, body, h := rawCall(t, s, "POST", "/api/v1/consumer-groups/g/queues/q/snapshots", map[string]any{"name": "s"})
	check("create", status, body, h, true)
	status, body, h = rawCall(t, s, "POST", "/api/v1/snapshots", map[string]any{"name": "flat", "queue": "q"})
	check("flat create", status, body, h, true)
	status, body, h = rawCall(t, s, "PUT", "/api/v1/snapshots/s", map[string]any{"labels": map[string]string{"a": "b"}})
	check("update", status, body, h, false)
	status, body, h = rawCall(t, s, "GET", "/api/v1/snapshots/s", nil)
	sn := check("get", status, body, h, false)

	// Asked for a page, it says which, as the queue details do.
	status, body, h = rawCall(t, s, "GET", "/api/v1/snapshots/s?limit=2", nil)
	var page snapshotReply
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatal(err)
	}
	id := sn.Partitions[1].PartitionID
	if status != http.StatusOK || len(page.Partitions) != 2 || page.Pagination == nil || page.Pagination.Next == nil ||
		*page.Pagination.Next != id || linkNext(t, h) != "/api/v1/snapshots/s?after="+id+"&limit=2" {
		t.Fatalf("limit 2: %d %s, Link %q", status, body, h.Get("Link"))
	}
	status, body, h = rawCall(t, s, "GET", "/api/v1/snapshots/s?limit=2&after="+id, nil)
	page = snapshotReply{}
	if err := json.Unmarshal(body, &page); err != nil {
		t.Fatal(err)
	}
	if status != http.StatusOK || len(page.Partitions) != 1 || page.Partitions[0].Partition != "ap" || page.Pagination == nil ||
		page.Pagination.Next != nil || h.Get("Link") != "" {
		t.Fatalf("the last page: %d %s, Link %q", status, body, h.Get("Link"))
	}
}

// A page parameter the snapshot routes cannot honour is a 400 with a JSON
// error, as on the other paged listings.
func TestSnapshotPageRefusals(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	s.Push(map[string]any{"queue": "q", "partition": "a", "payload": 1})
	status, body, _ := rawCall(t, s, "POST", "/api/v1/snapshots", map[string]any{"name": "s", "queue": "q"})
	if status != http.StatusCreated {
		t.Fatalf("create: %d %s", status, body)
	}
	var created struct {
		Snapshot snapshotReply `json:"snapshot"`
	}
	if err := json.Unmarshal(body, &created); err != nil {
		t.Fatal(err)
	}
	id := created.Snapshot.Partitions[0].PartitionID
	upper := bytes.ToUpper([]byte(id))
	for _, q := range []string{"limit=0", "limit=1001", "limit=-1", "limit=x", "offset=1", "offset=0",
		"after=garbage", "after=" + string(upper), "after=42", "limit=10&after=" + id + "x"} {
		r := s.Do("GET", "/api/v1/snapshots/s?"+q, nil)
		if r.Status != http.StatusBadRequest {
			t.Errorf("%s: %d %s; want 400", q, r.Status, r.Body)
			continue
		}
		if msg, _ := r.Map(t)["error"].(string); msg == "" {
			t.Errorf("%s: 400 without a JSON error: %s", q, r.Body)
		}
	}
	// A position past the last partition is an empty last page.
	status, body, h := rawCall(t, s, "GET", "/api/v1/snapshots/s?after="+id, nil)
	if status != http.StatusOK || h.Get("Link") != "" || !bytes.Contains(body, []byte(`"pagination":{"limit":1000,"offset":0,"next":null}`)) {
		t.Fatalf("after the last partition: %d %s, Link %q", status, body, h.Get("Link"))
	}
	if r := s.Do("GET", "/api/v1/snapshots/nope?limit=5", nil); r.Status != http.StatusNotFound {
		t.Fatalf("unknown snapshot: %d %s", r.Status, r.Body)
	}
}
