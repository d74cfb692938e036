package httpd

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
)

// Traces (docs/wire.md, Routes). The read shapes are the ones Queen's dashboard
// parses: snake_case rows inside {"traces": [...]}, names inside
// {"trace_names": [...]}, with count, total, limit and offset.
//
// httprouter cannot hold /traces/names and /traces/by-name/:name beside
// /traces/:partitionId/:transactionId, so the one- and two-segment forms
// are each registered once and dispatched on their first segment.

type traceIn struct {
	TransactionID json.RawMessage `json:"transactionId"`
	PartitionID   json.RawMessage `json:"partitionId"`
	ConsumerGroup json.RawMessage `json:"consumerGroup"`
	TraceNames    json.RawMessage `json:"traceNames"`
	EventType     json.RawMessage `json:"eventType"`
	Data          json.RawMessage `json:"data"`
}

// traceNames reads traceNames: null, one string, or an array of strings.
func traceNames(raw json.RawMessage) ([]string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, true
	}
	if s, _, ok := rawString(raw); ok {
		if s == "" {
			return nil, true
		}
		return []string{s}, true
	}
	var names []string
	if raw[0] != '[' || json.Unmarshal(raw, &names) != nil {
		return nil, false
	}
	kept := names[:0]
	for _, n := range names {
		if n != "" {
			kept = append(kept, n)
		}
	}
	return kept, true
}

func (s *Handler) recordTrace(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	var in traceIn
	if err := s.readJSON(w, r, &in); err != nil {
		s.fail(w, r, err)
		return
	}
	txn, _, ok1 := rawString(in.TransactionID)
	part, _, ok2 := rawString(in.PartitionID)
	if !ok1 || !ok2 || txn == "" || part == "" {
		s.fail(w, r, &badRequest{"transactionId and partitionId are required"})
		return
	}
	if len(bytes.TrimSpace(in.Data)) == 0 {
		s.fail(w, r, &badRequest{"data is required"})
		return
	}
	group, _, ok := rawString(in.ConsumerGroup)
	if !ok {
		s.fail(w, r, &badRequest{"consumerGroup must be a string"})
		return
	}
	event, _, ok := rawString(in.EventType)
	if !ok {
		s.fail(w, r, &badRequest{"eventType must be a string"})
		return
	}
	names, ok := traceNames(in.TraceNames)
	if !ok {
		s.fail(w, r, &badRequest{"traceNames must be a string or an array of strings"})
		return
	}
	id, err := s.tb(r).TraceRecord(r.Context(), combtype.TraceInput{PartitionID: part, TxnID: txn,
		Group: group, Names: names, EventType: event, Data: bytes.TrimSpace(in.Data)})
	if err != nil {
		// Queen answers 500 for an unknown message; a client's unknown id
		// is a 404 for comb, which also spares the SDKs three retries of a
		// request that cannot succeed (they retry 5xx and swallow trace
		// errors either way).
		s.fail(w, r, err, failed(http.StatusNotFound))
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"success": true, "traceId": id})
}

// traceOut is a trace as the dashboard reads it.
type traceOut struct {
	ID            string          `json:"id"`
	TransactionID string          `json:"transaction_id"`
	PartitionID   string          `json:"partition_id"`
	QueueName     *string         `json:"queue_name"`
	PartitionName *string         `json:"partition_name"`
	EventType     string          `json:"event_type"`
	Data          json.RawMessage `json:"data"`
	ConsumerGroup string          `json:"consumer_group"`
	WorkerID      *string         `json:"worker_id"`
	CreatedAt     string          `json:"created_at"`
	TraceNames    []string        `json:"trace_names"`
}

func tracesJSON(traces []combtype.Trace) []traceOut {
	out := make([]traceOut, len(traces))
	for i, t := range traces {
		out[i] = traceOut{ID: t.ID, TransactionID: t.TxnID, PartitionID: t.PartitionID, QueueName: nullString(t.Queue),
			PartitionName: nullString(t.Partition), EventType: t.EventType, Data: t.Data, ConsumerGroup: t.Group,
			WorkerID: nullString(t.WorkerID), CreatedAt: fmtMilli(t.CreatedAt), TraceNames: t.Names}
	}
	return out
}

// traceOne serves GET /api/v1/traces/names.
func (s *Handler) traceOne(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	if ps.ByName("partitionId") != "names" {
		s.fail(w, r, errNoRoute)
		return
	}
	q := r.URL.Query()
	limit, offset := min(max(queryInt(q, "limit", broker.DefaultTraceNameLimit), 0), broker.MaxTraceLimit), max(queryInt(q, "offset", 0), 0)
	names, total, err := s.tb(r).TraceNames(r.Context(), combtype.Page{Limit: limit, Offset: offset})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rows := make([]map[string]any, len(names))
	for i, n := range names {
		rows[i] = map[string]any{"trace_name": n.Name, "trace_count": n.Traces, "message_count": n.Messages,
			"last_seen": fmtMilli(n.LastSeen)}
	}
	writeJSON(w, http.StatusOK, map[string]any{"trace_names": rows, "count": len(rows), "total": total,
		"limit": limit, "offset": offset})
}

// traceTwo serves GET /api/v1/traces/by-name/:name and
// GET /api/v1/traces/:partitionId/:transactionId.
func (s *Handler) traceTwo(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	first, second := ps.ByName("partitionId"), ps.ByName("transactionId")
	if first == "by-name" {
		q := r.URL.Query()
		limit, offset := min(max(queryInt(q, "limit", broker.DefaultTraceLimit), 0), broker.MaxTraceLimit), max(queryInt(q, "offset", 0), 0)
		traces, total, err := s.tb(r).TraceListByName(r.Context(), second, combtype.Page{Limit: limit, Offset: offset})
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"traces": tracesJSON(traces), "count": len(traces), "total": total,
			"limit": limit, "offset": offset})
		return
	}
	traces, err := s.tb(r).TraceList(r.Context(), combtype.MessageRef{PartitionID: first, TxnID: second})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"traces": tracesJSON(traces), "count": len(traces)})
}
