package httpd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/google/uuid"
	"github.com/julienschmidt/httprouter"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
)

// The streaming routes of Queen's SDK runtimes (docs/streams.md). Past the
// body checks, a cycle always answers 200 and says success or failure in
// the body: the runtimes read it and never retry it.

// readObject reads a body that must be one JSON object and answers the
// 4xx itself when it is not; ok is false then.
func (s *Handler) readObject(w http.ResponseWriter, r *http.Request) (map[string]json.RawMessage, bool) {
	body, err := s.readWireBody(w, r)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.fail(w, r, err)
		} else {
			s.fail(w, r, &badRequest{"Invalid JSON: " + err.Error()})
		}
		return nil, false
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		s.fail(w, r, &badRequest{"Empty request body"})
		return nil, false
	}
	if !json.Valid(body) {
		var v any
		err := json.Unmarshal(body, &v)
		s.fail(w, r, &badRequest{"Invalid JSON: " + err.Error()})
		return nil, false
	}
	// The members' values are slices of the body: copied out by
	// json.Unmarshal, a cycle of 64 MiB was held twice.
	m := map[string]json.RawMessage{}
	d := &wireDecoder{buf: body}
	tooMany := &badRequest{fmt.Sprintf("request body holds more than %d members", maxStreamMembers)}
	err = errors.New("not an object")
	if body[0] == '{' {
		err = d.object(func(key []byte) error {
			v, err := d.rawValue()
			if _, seen := m[string(key)]; !seen && len(m) == maxStreamMembers {
				return tooMany
			}
			m[string(key)] = v // a later duplicate wins, as in json.Unmarshal
			return err
		})
	}
	switch {
	case err == tooMany:
		s.fail(w, r, err)
		return nil, false
	case err != nil:
		s.fail(w, r, &badRequest{"request body must be a JSON object"})
		return nil, false
	}
	return m, true
}

// maxStreamMembers bounds the distinct members of a streaming route's
// body, a dozen at most from the SDKs: a cycle of 64 MiB may otherwise
// hold millions, each kept in the map before a field is looked at (four
// million took the server to 523 MB).
const maxStreamMembers = 1024

// requiredString reads a field that must be a non-empty string.
func requiredString(m map[string]json.RawMessage, key string) (string, bool) {
	v, present, ok := rawString(m[key])
	return v, present && ok && v != ""
}

// strictBool reads an optional JSON boolean: only true, false or null.
func strictBool(raw json.RawMessage) (v, present, ok bool) {
	switch string(bytes.TrimSpace(raw)) {
	case "", "null":
		return false, false, true
	case "true":
		return true, true, true
	case "false":
		return false, true, true
	}
	return false, true, false
}

func (s *Handler) streamQueries(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	in, ok := s.readObject(w, r)
	if !ok {
		return
	}
	req := combtype.StreamRegisterRequest{}
	for _, f := range []struct {
		key string
		dst *string
	}{{"name", &req.Name}, {"source_queue", &req.SourceQueue}, {"config_hash", &req.ConfigHash}} {
		if *f.dst, ok = requiredString(in, f.key); !ok {
			s.fail(w, r, &badRequest{f.key + " is required"})
			return
		}
	}
	if req.SinkQueue, _, ok = rawString(in["sink_queue"]); !ok {
		s.fail(w, r, &badRequest{"sink_queue must be a string"})
		return
	}
	if req.Reset, _, ok = strictBool(in["reset"]); !ok {
		s.fail(w, r, &badRequest{"reset must be a boolean"})
		return
	}
	reg, err := s.tb(r).StreamRegister(r.Context(), req)
	if err != nil {
		s.fail(w, r, err, failed(http.StatusInternalServerError))
		return
	}
	if reg.Conflict {
		writeJSON(w, http.StatusConflict, map[string]any{"success": false, "query_id": reg.Query.ID, "name": reg.Query.Name,
			"error": fmt.Sprintf("config_hash mismatch: operator chain changed for queryId '%s'. "+
				"Register with reset: true to delete its state and start over, or use a new queryId.", req.Name)})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "query_id": reg.Query.ID, "name": reg.Query.Name,
		"config_hash": reg.Query.ConfigHash, "fresh": reg.Fresh, "reset": reg.Reset})
}

// shardOf reads the (query, partition) shard that state reads and cycles
// name, answering 400 when either is missing.
func (s *Handler) shardOf(w http.ResponseWriter, r *http.Request, in map[string]json.RawMessage) (queryID, partitionID string, ok bool) {
	if queryID, ok = requiredString(in, "query_id"); !ok {
		s.fail(w, r, &badRequest{"query_id is required"})
		return "", "", false
	}
	if partitionID, ok = requiredString(in, "partition_id"); !ok {
		s.fail(w, r, &badRequest{"partition_id is required"})
		return "", "", false
	}
	return queryID, partitionID, true
}

// canonicalShard is a shard's ids as UUIDs in their canonical form (lower
// case), or what is wrong with them. A shard is the pair of ids as
// stored: a cycle stored state under partition_id "not-a-uuid" that no
// state/get could read (it refuses such ids), and under an upper-case id
// that a get of the same id in lower case did not find; Queen keeps both
// as PostgreSQL uuids, which fail the first and fold the second. The
// cycle reads them the same way (streamCycle).
func canonicalShard(queryID, partitionID string) (string, string, string) {
	q, err := uuid.Parse(queryID)
	if err != nil {
		return "", "", "query_id must be a UUID"
	}
	p, err := uuid.Parse(partitionID)
	if err != nil {
		return "", "", "partition_id must be a UUID"
	}
	return q.String(), p.String(), ""
}

func (s *Handler) streamStateGet(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	in, ok := s.readObject(w, r)
	if !ok {
		return
	}
	queryID, partitionID, ok := s.shardOf(w, r, in)
	if !ok {
		return
	}
	queryID, partitionID, msg := canonicalShard(queryID, partitionID)
	if msg != "" {
		s.fail(w, r, &badRequest{msg})
		return
	}
	var f combtype.StateFilter
	if raw := bytes.TrimSpace(in["keys"]); len(raw) > 0 && raw[0] == '[' {
		if json.Unmarshal(raw, &f.Keys) != nil {
			s.fail(w, r, &badRequest{"keys must be an array of strings"})
			return
		}
	}
	if f.Prefix, _, ok = rawString(in["key_prefix"]); !ok {
		s.fail(w, r, &badRequest{"key_prefix must be a string"})
		return
	}
	// Only a JSON number filters; anything else is ignored, as Queen does.
	if raw := bytes.TrimSpace(in["ripe_at_or_before"]); len(raw) > 0 && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		if v, err := strconv.ParseFloat(string(raw), 64); err == nil {
			f.RipeAtOrBefore = &v
		}
	}
	// The rows are written as they are read: a shard of 66 MB took the
	// server to 324 MB when its rows, their reply and the reply's copies
	// were held at once. The reply is what writeJSON made of them, byte
	// for byte (stateRowsWriter).
	cw := &countingWriter{w: w}
	out := stateRowsWriter{w: bufio.NewWriterSize(cw, 64<<10)}
	w.Header().Set("Content-Type", "application/json")
	out.begin()
	err := s.tb(r).StreamStateEach(r.Context(), combtype.StateShard{QueryID: queryID, PartitionID: partitionID}, f, out.row)
	if err == nil {
		err = out.end()
	}
	if err != nil {
		if cw.n == 0 {
			// Nothing reached the client: answer the failure as such.
			w.Header().Del("Content-Type")
			s.fail(w, r, err, failed(http.StatusInternalServerError))
			return
		}
		// A reply cut short must not read as a whole one. A client that
		// left while it was written is not the server's failure.
		if cw.err != nil {
			s.log.Debug("state reply cut short: the client is gone", "err", err)
		} else {
			s.log.Error("state read failed mid-reply", "err", err)
		}
		panic(http.ErrAbortHandler)
	}
}

// stateRowsWriter writes a state/get reply's rows as json.Marshal wrote
// them from a slice of structs (staterows_test.go keeps that encoding):
// keys and updated_at escaped as it escapes strings, values compacted and
// HTML-escaped as it writes a json.RawMessage.
type stateRowsWriter struct {
	w   *bufio.Writer
	buf []byte // what is not yet handed to w, reused
	n   int    // rows written
}

// begin starts the reply; json.Marshal wrote a map's keys sorted.
func (o *stateRowsWriter) begin() { o.buf = append(o.buf, `{"rows":[`...) }

// end ends the reply and writes out what is buffered.
func (o *stateRowsWriter) end() error {
	o.buf = append(o.buf, `],"success":true}`...)
	if err := o.flush(); err != nil {
		return err
	}
	return o.w.Flush()
}

func (o *stateRowsWriter) row(row combtype.StateRow) error {
	if o.n > 0 {
		o.buf = append(o.buf, ',')
	}
	o.n++
	o.buf = append(o.buf, `{"key":`...)
	o.buf = appendString(o.buf, row.Key)
	o.buf = append(o.buf, `,"value":`...)
	if !json.Valid(row.Value) {
		return fmt.Errorf("encode state value of %q: not valid JSON", row.Key)
	}
	if err := o.flush(); err != nil {
		return err
	}
	if err := writeCompactEscaped(o.w, row.Value); err != nil {
		return err
	}
	o.buf = append(o.buf, `,"updated_at":`...)
	o.buf = appendString(o.buf, fmtMilli(row.UpdatedAt))
	o.buf = append(o.buf, '}')
	return o.flush()
}

// writeCompactEscaped writes the valid JSON v to w as json.Compact and
// then json.HTMLEscape would have it, without a copy: compacted and
// escaped into buffers of their own, a state value of 50 MB took the
// server to 300 MB for one state/get.
func writeCompactEscaped(w *bufio.Writer, v []byte) error {
	const hex = "0123456789abcdef"
	start := 0
	put := func(end int, rep ...byte) error {
		if _, err := w.Write(v[start:end]); err != nil {
			return err
		}
		_, err := w.Write(rep)
		return err
	}
	inString, escaped := false, false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			if err := put(i); err != nil {
				return err
			}
			start = i + 1
		case c == '<' || c == '>' || c == '&':
			if err := put(i, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF]); err != nil {
				return err
			}
			start = i + 1
		case c == 0xE2 && i+2 < len(v) && v[i+1] == 0x80 && v[i+2]&^1 == 0xA8:
			// U+2028 and U+2029, which JavaScript took for line ends.
			if err := put(i, '\\', 'u', '2', '0', '2', hex[v[i+2]&0xF]); err != nil {
				return err
			}
			start = i + 3
			i += 2
		}
	}
	_, err := w.Write(v[start:])
	return err
}

// flush hands what is buffered to w.
func (o *stateRowsWriter) flush() error {
	_, err := o.w.Write(o.buf)
	o.buf = o.buf[:0]
	return err
}

// countingWriter counts the bytes that reached w.
type countingWriter struct {
	w   io.Writer
	n   int64
	err error // the first write that failed: the client is gone
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
}

type cycleAckOut struct {
	Success       bool  `json:"success"`
	Count         int64 `json:"count"`
	LeaseReleased bool  `json:"lease_released"`
	DLQ           bool  `json:"dlq"`
}

func (s *Handler) streamCycle(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	in, ok := s.readObject(w, r)
	if !ok {
		return
	}
	queryID, partitionID, ok := s.shardOf(w, r, in)
	if !ok {
		return
	}
	refuse := func(msg string) {
		writeJSON(w, http.StatusOK, map[string]any{"success": false, "query_id": queryID, "partition_id": partitionID,
			"error": msg, "state_ops_applied": 0, "push_results": []pushOut{}, "ack_result": nil})
	}
	if q, err := uuid.Parse(queryID); err == nil {
		queryID = q.String() // else no query has it: "Query not found"
	}
	p, err := uuid.Parse(partitionID)
	if err != nil {
		refuse("partition_id must be a UUID") // nothing stored, as Queen fails the cycle
		return
	}
	partitionID = p.String()
	req, msg := cycleRequest(in, producerSub(r.Context()))
	if msg != "" {
		refuse(msg)
		return
	}
	req.QueryID, req.PartitionID = queryID, partitionID
	res, err := s.tb(r).StreamCycle(r.Context(), req)
	if err != nil {
		s.fail(w, r, err, failed(http.StatusInternalServerError))
		return
	}
	if res.Err != nil {
		refuse(itemErrorText(res.Err))
		return
	}
	if res.Skipped != "" {
		// An idle flush that another cycle has made moot: nothing applied,
		// and not a failure, since its next tick reads the state again.
		writeJSON(w, http.StatusOK, map[string]any{"success": true, "query_id": queryID, "partition_id": partitionID,
			"queueName": nullString(res.SourceQueue), "state_ops_applied": 0, "push_results": []pushOut{},
			"ack_result": nil, "skipped": res.Skipped})
		return
	}
	var ack *cycleAckOut
	if res.Ack != nil {
		ack = &cycleAckOut{Success: true, Count: res.Ack.Count, LeaseReleased: res.Ack.LeaseReleased, DLQ: res.Ack.DLQ}
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "query_id": queryID, "partition_id": partitionID,
		"queueName": nullString(res.SourceQueue), "state_ops_applied": res.StateOpsApplied,
		"push_results": pushResultsJSON(res.Pushes), "ack_result": ack})
}

// stateOpIn is a cycle's state op as sent.
type stateOpIn struct {
	Type, Key, Value json.RawMessage
}

// field is where the value of key goes, as encoding/json matched the
// fields "type", "key" and "value".
func (op *stateOpIn) field(key []byte) *json.RawMessage {
	switch {
	case fieldIs(key, "type"):
		return &op.Type
	case fieldIs(key, "key"):
		return &op.Key
	case fieldIs(key, "value"):
		return &op.Value
	}
	return nil
}

// cycleRequest decodes everything of a cycle but its ids. A non-empty msg
// is the failure to answer; nothing is written then.
func cycleRequest(in map[string]json.RawMessage, sub string) (req combtype.CycleRequest, msg string) {
	group, _, ok := rawString(in["consumer_group"])
	if !ok {
		return req, "consumer_group must be a string"
	}
	req.Group = group

	var ops []stateOpIn
	if raw := bytes.TrimSpace(in["state_ops"]); len(raw) > 0 && string(raw) != "null" {
		if raw[0] != '[' {
			return req, "state_ops must be an array of objects"
		}
		// One op at a time, so that a cycle past the bound is refused
		// before the rest of it is decoded, and each op's fields as slices
		// of the body: copied out, a cycle of 62 MB was held twice.
		d := &wireDecoder{buf: raw}
		tooMany, notObject := errors.New("too many"), errors.New("not an object")
		err := d.array(func() error {
			if len(ops) == broker.MaxCycleStateOps {
				return tooMany
			}
			var op stateOpIn
			isObject, err := d.rawFields(op.field)
			if err == nil && !isObject {
				err = notObject
			}
			ops = append(ops, op)
			return err
		})
		switch {
		case err == tooMany:
			return req, broker.TooManyStateOps(len(ops) + 1).Error()
		case err != nil:
			return req, "state_ops must be an array of objects"
		}
	}
	req.StateOps = make([]combtype.StateOp, len(ops))
	for i, op := range ops {
		typ, _, _ := rawString(op.Type)
		if typ != combtype.StateUpsert && typ != combtype.StateDelete {
			return req, "Unknown state_op type: " + string(bytes.Trim(op.Type, `"`))
		}
		key, present, ok := rawString(op.Key)
		if !present || !ok {
			return req, fmt.Sprintf("state_ops[%d].key is required", i)
		}
		req.StateOps[i] = combtype.StateOp{Type: typ, Key: key}
		if typ == combtype.StateUpsert {
			// Absent is {} (the SDKs drop undefined values); null stays null.
			req.StateOps[i].Value = []byte("{}")
			if len(op.Value) > 0 {
				req.StateOps[i].Value = op.Value
			}
		}
	}

	var items []pushItemIn
	if raw := bytes.TrimSpace(in["push_items"]); len(raw) > 0 && string(raw) != "null" {
		var err error
		if items, err = pushItemsIn(raw); errors.Is(err, errNotItems) {
			return req, "push_items must be an array of objects"
		} else if err != nil {
			return req, err.Error()
		}
	}
	for i := range items {
		if len(items[i].Payload) == 0 {
			items[i].Payload = json.RawMessage("{}")
		}
	}
	push, err := pushItems(items, sub)
	if err != nil {
		return req, err.Error()
	}
	req.Push = push

	if raw := bytes.TrimSpace(in["ack"]); len(raw) > 0 && string(raw) != "null" {
		var a struct {
			TxnID   json.RawMessage `json:"transactionId"`
			LeaseID json.RawMessage `json:"leaseId"`
			Status  json.RawMessage `json:"status"`
			Count   json.RawMessage `json:"count"`
			Error   json.RawMessage `json:"error"`
		}
		if raw[0] != '{' || json.Unmarshal(raw, &a) != nil {
			return req, "ack must be an object"
		}
		ack := &combtype.CycleAck{}
		var fields = []struct {
			name string
			raw  json.RawMessage
			dst  *string
		}{{"transactionId", a.TxnID, &ack.TxnID}, {"leaseId", a.LeaseID, &ack.LeaseID},
			{"status", a.Status, &ack.Status}, {"error", a.Error, &ack.Error}}
		for _, f := range fields {
			if *f.dst, _, ok = rawString(f.raw); !ok {
				return req, "ack." + f.name + " must be a string"
			}
		}
		if ack.TxnID == "" {
			return req, "ack.transactionId is required"
		}
		switch ack.Status {
		case "", combtype.AckCompleted, combtype.AckSuccess, combtype.AckFailed, combtype.AckDLQ:
		default:
			return req, "Unknown ack.status: " + ack.Status
		}
		count, present, ok := rawInt(a.Count)
		if !ok || count < 0 {
			return req, "ack.count must be a non-negative integer"
		}
		if !present {
			count = 1
		}
		ack.Count = count
		req.Ack = ack
	}

	release, present, ok := strictBool(in["release_lease"])
	if !ok {
		return req, "release_lease must be a boolean"
	}
	req.ReleaseLease = release || !present
	return req, ""
}
