package httpd

import (
	"net/http"
	"strconv"

	"github.com/julienschmidt/httprouter"

	"github.com/comb-broker/comb/combtype"
)

type quarantinedOut struct {
	ID               int64    `json:"id"`
	Queue            string   `json:"queue"`
	Partition        string   `json:"partition"`
	PartitionID      string   `json:"partitionId"`
	FirstOffset      int64    `json:"firstOffset"`
	LastOffset       int64    `json:"lastOffset"`
	Frames           int64    `json:"frames"`
	Reason           string   `json:"reason"`
	Bytes            int64    `json:"bytes"`
	SegmentCreatedAt string   `json:"segmentCreatedAt"`
	QuarantinedAt    string   `json:"quarantinedAt"`
	PassedBy         []string `json:"passedBy"`
}

// listQuarantine lists the caller's tenant's quarantined segments, paged
// like the DLQ listing.
func (s *Handler) listQuarantine(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	q := r.URL.Query()
	f := combtype.QuarantineFilter{Queue: q.Get("queue"), Partition: q.Get("partition"),
		Limit: combtype.DefaultQuarantineLimit}
	for key, dst := range map[string]*int{"limit": &f.Limit, "offset": &f.Offset} {
		if v := q.Get(key); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				s.fail(w, r, &badRequest{key + " must be a non-negative integer"})
				return
			}
			*dst = n
		}
	}
	if f.Limit == 0 {
		f.Limit = combtype.DefaultQuarantineLimit
	}
	f.Limit = min(f.Limit, combtype.MaxQuarantineLimit)
	segs, total, err := s.tb(r).QuarantineList(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]quarantinedOut, len(segs))
	for i, g := range segs {
		out[i] = quarantinedOut{ID: g.ID, Queue: g.Queue, Partition: g.Partition, PartitionID: g.PartitionID,
			FirstOffset: g.FirstOffset, LastOffset: g.LastOffset, Frames: g.Frames, Reason: g.Reason, Bytes: g.Bytes,
			SegmentCreatedAt: fmtMilli(g.SegmentCreatedAt), QuarantinedAt: fmtMilli(g.QuarantinedAt), PassedBy: g.PassedBy}
	}
	writeJSON(w, http.StatusOK, map[string]any{"segments": out, "total": total, "limit": f.Limit, "offset": f.Offset})
}

// restoreQuarantined tries a quarantined segment again; see
// broker.RestoreQuarantined. Admin: it writes what an operator repaired.
func (s *Handler) restoreQuarantined(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	id, err := strconv.ParseInt(ps.ByName("id"), 10, 64)
	if err != nil || id <= 0 {
		s.fail(w, r, &badRequest{"id must be a positive integer"})
		return
	}
	res, err := s.tb(r).QuarantineRestore(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "id": res.ID, "queue": res.Queue,
		"messages": res.Frames, "consumerGroups": res.Groups, "deadLettered": res.DeadLettered})
}
