package httpd

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/comb-broker/comb/combtype"
)

// purgeParams are the query parameters DELETE /api/v1/dlq understands.
// Any other is refused: a misspelt filter must not widen a purge.
var purgeParams = map[string]bool{"queue": true, "consumerGroup": true, "partition": true, "from": true, "to": true,
	"ids": true, "all": true, "limit": true}

// purgeDLQ deletes dead letters for good: the filters of the listing, plus
// ids (comma-separated or repeated) and limit. With no filter it answers
// 400 unless all=true, so an empty DELETE cannot wipe the DLQ.
func (s *Handler) purgeDLQ(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	q := r.URL.Query()
	for k := range q {
		if !purgeParams[k] {
			s.fail(w, r, &badRequest{"unknown parameter " + strconv.Quote(k) +
				": a purge takes queue, consumerGroup, partition, from, to, ids, all and limit"})
			return
		}
	}
	from, okFrom := queryTime(q.Get("from"))
	to, okTo := queryTime(q.Get("to"))
	if !okFrom || !okTo {
		s.fail(w, r, &badRequest{"from and to must be RFC 3339 times or YYYY-MM-DD dates"})
		return
	}
	req := combtype.PurgeRequest{Queue: q.Get("queue"), Group: q.Get("consumerGroup"),
		Partition: q.Get("partition"), From: from, To: to}
	if vs, ok := q["ids"]; ok {
		req.IDs = []string{}
		for _, v := range vs {
			for _, id := range strings.Split(v, ",") {
				if id = strings.TrimSpace(id); id == "" {
					s.fail(w, r, &badRequest{"ids must be a comma-separated list of message ids"})
					return
				}
				req.IDs = append(req.IDs, id)
			}
		}
	}
	switch q.Get("all") {
	case "", "false":
	case "true":
		req.All = true
	default:
		s.fail(w, r, &badRequest{"all must be true or false"})
		return
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			s.fail(w, r, &badRequest{"limit must be a non-negative integer"})
			return
		}
		req.Limit = min(n, combtype.MaxPurgeLimit)
	}
	if !req.Filtered() && !req.All {
		s.fail(w, r, &badRequest{"a purge needs a filter (queue, consumerGroup, partition, from, to or ids), or all=true to delete every dead letter"})
		return
	}
	res, err := s.tb(r).DLQPurge(r.Context(), req)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "deleted": res.Deleted, "remaining": res.Remaining})
}
