package httpd

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/comb-broker/comb/combtype"
)

// comb's own routes over the streaming queries registered through
// /streams/v1/queries: Queen has none (its queries go only with their
// source queue), but comb bounds how many may be registered
// (--max-stream-queries), and a bound needs a way back under it that does
// not delete the queue.

type streamQueryOut struct {
	Name        string `json:"name"`
	QueryID     string `json:"queryId"`
	SourceQueue string `json:"sourceQueue"`
	SinkQueue   string `json:"sinkQueue,omitempty"`
	ConfigHash  string `json:"configHash"`
	CreatedAt   string `json:"createdAt"`
	UpdatedAt   string `json:"updatedAt"`
}

func streamQueryJSON(q *combtype.StreamQuery) streamQueryOut {
	return streamQueryOut{Name: q.Name, QueryID: q.ID, SourceQueue: q.SourceQueue, SinkQueue: q.SinkQueue,
		ConfigHash: q.ConfigHash, CreatedAt: fmtMilli(q.CreatedAt), UpdatedAt: fmtMilli(q.UpdatedAt)}
}

func (s *Handler) listStreamQueries(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	pg, err := readPage(r, false)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	list, info, err := s.tb(r).StreamQueries(r.Context(), pg.Page)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]streamQueryOut, len(list))
	for i := range list {
		out[i] = streamQueryJSON(&list[i])
	}
	pageHeaders(w, r, pg, info)
	writeJSON(w, http.StatusOK, map[string]any{"queries": out})
}

func (s *Handler) deleteStreamQuery(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	q, err := s.tb(r).StreamDelete(r.Context(), ps.ByName("name"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"deleted": true, "name": q.Name, "queryId": q.ID})
}
