package httpd_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/comb-broker/comb/internal/combtest"
	"github.com/comb-broker/comb/store"
)

func TestTracesRecordAndRead(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	out := s.Push(map[string]any{"queue": "orders", "payload": 1, "transactionId": "m1"},
		map[string]any{"queue": "orders", "payload": 2, "transactionId": "m2"})
	pid := out[0]["partition_id"].(string)

	post := func(body any) *combtest.Response {
		t.Helper()
		return s.Do("POST", "/api/v1/traces", body)
	}
	r := post(map[string]any{"transactionId": "m1", "partitionId": pid, "consumerGroup": nil,
		"traceNames": []string{"tenant-acme", "order-1"}, "eventType": "info", "data": map[string]any{"text": "received"}})
	if m := r.Map(t); r.Status != http.StatusCreated || m["success"] != true || m["traceId"] == "" {
		t.Fatalf("record: %d %s", r.Status, r.Body)
	}
	if r := post(map[string]any{"transactionId": "m1", "partitionId": pid, "consumerGroup": "billing",
		"traceNames": "order-1", "eventType": "step", "data": map[string]any{"n": 2}}); r.Status != http.StatusCreated {
		t.Fatalf("record with one name: %d %s", r.Status, r.Body)
	}
	if r := post(map[string]any{"transactionId": "m2", "partitionId": pid, "traceNames": []string{"order-1"},
		"data": map[string]any{}}); r.Status != http.StatusCreated {
		t.Fatalf("record on m2: %d %s", r.Status, r.Body)
	}

	for _, bad := range []struct {
		body any
		msg  string
	}{
		{map[string]any{"partitionId": pid, "data": 1}, "transactionId and partitionId are required"},
		{map[string]any{"transactionId": "m1", "data": 1}, "transactionId and partitionId are required"},
		{map[string]any{"transactionId": 5, "partitionId": pid, "data": 1}, "transactionId and partitionId are required"},
		{map[string]any{"transactionId": "m1", "partitionId": pid}, "data is required"},
		{map[string]any{"transactionId": "m1", "partitionId": pid, "data": 1, "traceNames": []int{1}}, "traceNames must be a string or an array of strings"},
	} {
		r := post(bad.body)
		if r.Status != http.StatusBadRequest || r.Map(t)["error"] != bad.msg {
			t.Fatalf("POST %v: %d %s, want 400 %q", bad.body, r.Status, r.Body, bad.msg)
		}
	}
	if r := post("{"); r.Status != http.StatusBadRequest {
		t.Fatalf("malformed JSON: %d %s", r.Status, r.Body)
	}
	// Queen's answer for an unknown message.
	r = post(map[string]any{"transactionId": "nope", "partitionId": pid, "data": 1})
	if m := r.Map(t); r.Status != http.StatusNotFound || m["success"] != false || m["error"] != "Message not found" {
		t.Fatalf("unknown message: %d %s", r.Status, r.Body)
	}

	type trace struct {
		ID            string          `json:"id"`
		TransactionID string          `json:"transaction_id"`
		PartitionID   string          `json:"partition_id"`
		QueueName     string          `json:"queue_name"`
		PartitionName string          `json:"partition_name"`
		EventType     string          `json:"event_type"`
		Data          json.RawMessage `json:"data"`
		ConsumerGroup string          `json:"consumer_group"`
		CreatedAt     string          `json:"created_at"`
		TraceNames    []string        `json:"trace_names"`
	}
	var msg struct {
		Traces []trace `json:"traces"`
		Count  int     `json:"count"`
	}
	r = s.Do("GET", "/api/v1/traces/"+pid+"/m1", nil)
	r.JSON(t, &msg)
	if r.Status != http.StatusOK || msg.Count != 2 || len(msg.Traces) != 2 {
		t.Fatalf("message traces: %d %s", r.Status, r.Body)
	}
	first := msg.Traces[0]
	if first.EventType != "info" || string(first.Data) != `{"text":"received"}` || first.ConsumerGroup != "__QUEUE_MODE__" ||
		first.QueueName != "orders" || first.PartitionName != "Default" || first.TransactionID != "m1" ||
		len(first.TraceNames) != 2 || first.TraceNames[0] != "order-1" || first.TraceNames[1] != "tenant-acme" ||
		len(first.CreatedAt) != len("2006-01-02T15:04:05.000Z") {
		t.Fatalf("first trace %+v", first)
	}
	if msg.Traces[1].ConsumerGroup != "billing" || msg.Traces[1].EventType != "step" {
		t.Fatalf("second trace %+v", msg.Traces[1])
	}
	if r := s.Do("GET", "/api/v1/traces/"+pid+"/unknown", nil); r.Status != http.StatusOK || string(r.Body) != `{"count":0,"traces":[]}` {
		t.Fatalf("traces of an untraced message: %d %s", r.Status, r.Body)
	}

	var byName struct {
		Traces []trace `json:"traces"`
		Count  int     `json:"count"`
		Total  int     `json:"total"`
		Limit  int     `json:"limit"`
		Offset int     `json:"offset"`
	}
	r = s.Do("GET", "/api/v1/traces/by-name/order-1?limit=2&offset=1", nil)
	r.JSON(t, &byName)
	if r.Status != http.StatusOK || byName.Total != 3 || byName.Count != 2 || byName.Limit != 2 || byName.Offset != 1 ||
		byName.Traces[0].ConsumerGroup != "billing" || byName.Traces[1].TransactionID != "m2" {
		t.Fatalf("by name: %d %s", r.Status, r.Body)
	}

	var names struct {
		TraceNames []struct {
			TraceName    string `json:"trace_name"`
			TraceCount   int    `json:"trace_count"`
			MessageCount int    `json:"message_count"`
			LastSeen     string `json:"last_seen"`
		} `json:"trace_names"`
		Total int `json:"total"`
	}
	r = s.Do("GET", "/api/v1/traces/names", nil)
	r.JSON(t, &names)
	if r.Status != http.StatusOK || names.Total != 2 || len(names.TraceNames) != 2 {
		t.Fatalf("names: %d %s", r.Status, r.Body)
	}
	counts := map[string][2]int{}
	for _, n := range names.TraceNames {
		counts[n.TraceName] = [2]int{n.TraceCount, n.MessageCount}
	}
	if counts["order-1"] != [2]int{3, 2} || counts["tenant-acme"] != [2]int{1, 1} {
		t.Fatalf("name counts %v", counts)
	}
	if r := s.Do("GET", "/api/v1/traces/elsewhere", nil); r.Status != http.StatusNotFound {
		t.Fatalf("unknown one-segment trace route: %d %s", r.Status, r.Body)
	}
}

// Trace listings are bounded in bytes as well as in count: traces of 1 MB
// of data each, sixty of them, were all in one reply of 63 MB (and ten
// thousand such traces still would be). A page by
// name holds what store.MaxListBytes holds (one trace at least) and pages
// on with offset; a message's list holds its oldest that fit.
func TestTraceListingsAreBoundedInBytes(t *testing.T) {
	s := combtest.MustServer(t, combtest.Options{})
	out := s.Push(map[string]any{"queue": "orders", "payload": 1, "transactionId": "m1"})
	pid := out[0]["partition_id"].(string)
	const n = 12
	const size = 1_000_000 // under the 1 MiB a trace's body may hold
	pad := strings.Repeat("d", size)
	for i := range n {
		if r := s.Do("POST", "/api/v1/traces", map[string]any{"transactionId": "m1", "partitionId": pid,
			"traceNames": []string{"big"}, "data": map[string]any{"i": i, "pad": pad}}); r.Status != http.StatusCreated {
			t.Fatalf("record %d: %d %.200s", i, r.Status, r.Body)
		}
	}
	type page struct {
		Traces []struct {
			Data struct{ I int } `json:"data"`
		} `json:"traces"`
		Count int `json:"count"`
		Total int `json:"total"`
	}
	perPage := store.MaxListBytes/size + 1 // the trace that passes the bound is left for the next page
	seen := 0
	for offset := 0; offset < n; {
		r := s.Do("GET", fmt.Sprintf("/api/v1/traces/by-name/big?limit=100&offset=%d", offset), nil)
		var p page
		r.JSON(t, &p)
		if r.Status != http.StatusOK || p.Total != n || p.Count != len(p.Traces) || len(p.Traces) == 0 ||
			len(p.Traces) > perPage || len(r.Body) > store.MaxListBytes+2<<20 {
			t.Fatalf("page at %d: %d, %d of %d traces, %d bytes", offset, r.Status, len(p.Traces), p.Total, len(r.Body))
		}
		for i, tr := range p.Traces {
			if tr.Data.I != offset+i {
				t.Fatalf("page at %d: trace %d is %d, want oldest first", offset, i, tr.Data.I)
			}
		}
		offset += len(p.Traces)
		seen = offset
	}
	if seen != n {
		t.Fatalf("paged through %d of %d traces", seen, n)
	}
	r := s.Do("GET", "/api/v1/traces/"+pid+"/m1", nil)
	var p page
	r.JSON(t, &p)
	if r.Status != http.StatusOK || len(p.Traces) == 0 || len(p.Traces) > perPage || p.Traces[0].Data.I != 0 {
		t.Fatalf("a message's traces: %d, %d traces, %d bytes", r.Status, len(p.Traces), len(r.Body))
	}
}
