package httpd

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
)

// queryTime reads an optional time parameter; ok is false when it is
// present but unparsable.
func queryTime(v string) (t *time.Time, ok bool) {
	if v == "" {
		return nil, true
	}
	parsed, ok := broker.ParseTime(v)
	if !ok {
		return nil, false
	}
	return &parsed, true
}

type dlqMessageOut struct {
	ID            string          `json:"id"`
	TransactionID string          `json:"transactionId"`
	PartitionID   string          `json:"partitionId"`
	Queue         string          `json:"queue"`
	Partition     string          `json:"partition"`
	ConsumerGroup string          `json:"consumerGroup"`
	ErrorMessage  *string         `json:"errorMessage"`
	RetryCount    int64           `json:"retryCount"`
	Data          json.RawMessage `json:"data"`
	TraceID       *string         `json:"traceId"`
	ProducerSub   *string         `json:"producerSub"`
	CreatedAt     string          `json:"createdAt"`
	FailedAt      string          `json:"failedAt"`
}

type paginationOut struct {
	Limit  int `json:"limit"`
	Offset int `json:"offset"`
}

func (s *Handler) listDLQ(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	q := r.URL.Query()
	from, okFrom := queryTime(q.Get("from"))
	to, okTo := queryTime(q.Get("to"))
	if !okFrom || !okTo {
		s.fail(w, r, &badRequest{"from and to must be RFC 3339 times or YYYY-MM-DD dates"})
		return
	}
	f := combtype.DLQFilter{
		Queue: q.Get("queue"), Group: q.Get("consumerGroup"), Partition: q.Get("partition"),
		From: from, To: to, Limit: queryInt(q, "limit", combtype.DefaultDLQLimit), Offset: queryInt(q, "offset", 0),
	}
	if f.Limit <= 0 {
		f.Limit = combtype.DefaultDLQLimit
	}
	f.Limit = min(f.Limit, combtype.MaxDLQLimit)
	f.Offset = max(f.Offset, 0)
	entries, total, err := s.tb(r).DLQList(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]dlqMessageOut, len(entries))
	for i, e := range entries {
		out[i] = dlqMessageOut{ID: e.ID, TransactionID: e.TxnID, PartitionID: e.PartitionID, Queue: e.Queue,
			Partition: e.Partition, ConsumerGroup: e.Group, ErrorMessage: nullString(e.ErrorMessage),
			RetryCount: e.RetryCount, Data: storedJSON(e.Payload), TraceID: nullString(e.TraceID),
			ProducerSub: nullString(e.ProducerSub), CreatedAt: fmtMilli(e.CreatedAt), FailedAt: fmtMilli(e.FailedAt)}
	}
	writeJSON(w, http.StatusOK, map[string]any{"messages": out, "total": total, "limit": f.Limit, "offset": f.Offset,
		"pagination": paginationOut{Limit: f.Limit, Offset: f.Offset}})
}

func (s *Handler) redriveDLQ(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	var in struct {
		Queue         json.RawMessage `json:"queue"`
		ConsumerGroup json.RawMessage `json:"consumerGroup"`
		Partition     json.RawMessage `json:"partition"`
		IDs           json.RawMessage `json:"ids"`
		Limit         json.RawMessage `json:"limit"`
	}
	if err := s.readJSON(w, r, &in); err != nil {
		s.fail(w, r, err)
		return
	}
	queue, _, ok := rawString(in.Queue)
	if !ok || queue == "" {
		s.fail(w, r, &badRequest{"queue is required"})
		return
	}
	group, _, okGroup := rawString(in.ConsumerGroup)
	partition, _, okPart := rawString(in.Partition)
	if !okGroup || !okPart {
		s.fail(w, r, &badRequest{"consumerGroup and partition must be strings"})
		return
	}
	var ids []string
	if len(in.IDs) > 0 && string(in.IDs) != "null" {
		if n := arrayLength(in.IDs, combtype.MaxRedriveIDs+1); n > combtype.MaxRedriveIDs {
			// Refused before it is decoded: a million ids took the server
			// to 205 MB.
			s.fail(w, r, broker.TooManyRedriveIDs(n))
			return
		}
		if in.IDs[0] != '[' || json.Unmarshal(in.IDs, &ids) != nil {
			s.fail(w, r, &badRequest{"ids must be an array of strings"})
			return
		}
		if ids == nil {
			ids = []string{} // an explicit empty selection re-drives nothing, not everything
		}
	}
	limit, _, ok := rawInt(in.Limit)
	if !ok || limit < 0 {
		s.fail(w, r, &badRequest{"limit must be a non-negative integer"})
		return
	}
	if limit > combtype.MaxRedriveLimit {
		limit = combtype.MaxRedriveLimit
	}
	res, err := s.tb(r).DLQRedrive(r.Context(), combtype.RedriveRequest{Queue: queue, Group: group,
		Partition: partition, IDs: ids, Limit: int(limit)})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "queue": res.Queue, "redriven": res.Redriven,
		"duplicates": res.Duplicates, "deleted": res.Deleted, "remaining": res.Remaining})
}

// arrayLength counts the elements of the JSON array raw, stopping at
// stop; it does not check raw, whose decoding does.
func arrayLength(raw []byte, stop int) int {
	n, depth, inString, escaped := 0, 0, false, false
	for _, c := range raw {
		switch {
		case inString:
			if escaped {
				escaped = false
			} else if c == '\\' {
				escaped = true
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
			if depth == 1 && n == 0 {
				n = 1
			}
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
		case c == ',' && depth == 1:
			if n++; n >= stop {
				return n
			}
		}
	}
	return n
}
