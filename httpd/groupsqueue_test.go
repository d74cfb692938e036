package httpd_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
)

// GET /consumer-groups?queue= lists the groups on that queue alone, with
// the figures the whole listing gives them, and pages as it does; an
// unknown queue lists nothing and an empty queue= is a 400.
func TestListConsumerGroupsOfOneQueue(t *testing.T) {
	r := newReplay(t)
	r.segment("orders", "eu", 0, 4)
	r.segment("orders", "us", 0, 3)
	r.segment("audit", "Default", 0, 2)
	for _, g := range []string{"invoicer", "idle"} {
		r.seek(g, "orders", map[string]any{"offset": 1}, http.StatusOK)
	}
	r.seek("invoicer", "audit", map[string]any{"toEnd": true}, http.StatusOK)

	list := func(path string) []map[string]any {
		t.Helper()
		resp := r.Do("GET", path, nil)
		if resp.Status != http.StatusOK {
			t.Fatalf("%s = %d %s", path, resp.Status, resp.Body)
		}
		var out []map[string]any
		if err := json.Unmarshal(resp.Body, &out); err != nil {
			t.Fatalf("%s: %v: %s", path, err, resp.Body)
		}
		return out
	}
	all := list("/api/v1/consumer-groups")
	if len(all) != 3 {
		t.Fatalf("whole listing = %v", all)
	}
	var want []map[string]any
	for _, g := range all {
		if g["queueName"] == "orders" {
			want = append(want, g)
		}
	}
	got := list("/api/v1/consumer-groups?queue=orders")
	if len(got) != 2 || !slices.EqualFunc(got, want, func(a, b map[string]any) bool {
		x, _ := json.Marshal(a)
		y, _ := json.Marshal(b)
		return string(x) == string(y)
	}) {
		t.Fatalf("queue=orders = %v, want %v", got, want)
	}
	resp, err := http.Get(r.URL + "/api/v1/consumer-groups?queue=orders&limit=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var one []map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&one); err != nil || resp.StatusCode != http.StatusOK || len(one) != 1 ||
		one[0]["name"] != "idle" || resp.Header.Get("Link") == "" || resp.Header.Get("X-Total-Count") != "2" {
		t.Fatalf("first page of one = %d %v %v %v", resp.StatusCode, one, resp.Header, err)
	}
	if got := list("/api/v1/consumer-groups?queue=nope"); len(got) != 0 {
		t.Fatalf("unknown queue = %v", got)
	}
	if resp := r.Do("GET", "/api/v1/consumer-groups?queue=", nil); resp.Status != http.StatusBadRequest {
		t.Fatalf("empty queue= = %d %s", resp.Status, resp.Body)
	}
}
