package httpd

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
)

// snapshotName keeps names usable as one path segment from every SDK.
var snapshotName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,255}$`)

type snapshotCursorOut struct {
	Partition   string `json:"partition"`
	PartitionID string `json:"partitionId"`
	Committed   int64  `json:"committed"`
}

type snapshotOut struct {
	Name          string              `json:"name"`
	ConsumerGroup string              `json:"consumerGroup"`
	Queue         string              `json:"queue"`
	Labels        map[string]string   `json:"labels"`
	CreatedAt     string              `json:"createdAt"`
	ExpireTime    string              `json:"expireTime"`
	Partitions    []snapshotCursorOut `json:"partitions,omitempty"`
	// Pagination is the page partitions holds, when a page parameter
	// was given or more follow (docs/wire.md, "Pages").
	Pagination *pagePaginationOut `json:"pagination,omitempty"`
}

func snapshotJSON(sn *combtype.Snapshot, withCursors bool) snapshotOut {
	out := snapshotOut{Name: sn.Name, ConsumerGroup: sn.Group, Queue: sn.Queue, Labels: sn.Labels,
		CreatedAt: fmtMilli(sn.CreatedAt), ExpireTime: fmtMilli(sn.ExpiresAt)}
	if withCursors {
		out.Partitions = make([]snapshotCursorOut, len(sn.Cursors))
		for i, c := range sn.Cursors {
			out.Partitions[i] = snapshotCursorOut{Partition: c.Partition, PartitionID: c.PartitionID, Committed: c.Committed}
		}
	}
	return out
}

// snapshotPage is a snapshot with the page p of its partitions, and the
// Link to the next page, on path: the snapshot's GET route, whichever
// route answered. A reply holding all of them, asked for no page, keeps
// the shape it had before partitions were paged.
func snapshotPage(w http.ResponseWriter, path string, q url.Values, sn *combtype.Snapshot, p pageRequest, info combtype.PageInfo) snapshotOut {
	out := snapshotJSON(sn, true)
	if p.asked || info.More {
		pg := pagination(p, info)
		out.Pagination = &pg
	}
	nextLink(w, path, q, p, info)
	return out
}

// firstSnapshotPage is the page create and update answer with: the first,
// as a GET without page parameters answers it.
func firstSnapshotPage(w http.ResponseWriter, sn *combtype.Snapshot) snapshotOut {
	info := combtype.PageInfo{Total: -1, More: sn.CursorsNext != "", Next: sn.CursorsNext}
	return snapshotPage(w, "/api/v1/snapshots/"+sn.Name, url.Values{},
		sn, pageRequest{Page: combtype.Page{Limit: combtype.DefaultPageLimit}}, info)
}

// readFields decodes a JSON object body and refuses keys outside allowed.
func (s *Handler) readFields(w http.ResponseWriter, r *http.Request, allowed ...string) (map[string]json.RawMessage, error) {
	var in map[string]json.RawMessage
	if err := s.readJSON(w, r, &in); err != nil {
		return nil, err
	}
	var unknown []string
	for k := range in {
		known := false
		for _, a := range allowed {
			known = known || k == a
		}
		if !known {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, &badRequest{fmt.Sprintf("unknown field %q: accepted fields are %s", unknown[0], strings.Join(allowed, ", "))}
	}
	return in, nil
}

func parseLabels(raw json.RawMessage) (map[string]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]string{}, nil
	}
	var labels map[string]string
	if err := json.Unmarshal(raw, &labels); err != nil || labels == nil {
		return nil, &badRequest{"labels must be an object of string values"}
	}
	return labels, nil
}

func parseExpireTime(raw json.RawMessage) (*time.Time, error) {
	v, present, ok := rawString(raw)
	if !ok {
		return nil, &badRequest{"expireTime must be a string"}
	}
	if !present || v == "" {
		return nil, nil
	}
	t, ok := broker.ParseTime(v)
	if !ok {
		return nil, &badRequest{fmt.Sprintf("expireTime %q is not a valid time (RFC 3339)", v)}
	}
	if t.IsZero() {
		// The Go API reads the zero time as no expiry given (the
		// default); asked for over the wire, it is in the past.
		return nil, &badRequest{fmt.Sprintf("expireTime %q is not in the future", v)}
	}
	return &t, nil
}

// createSnapshotFrom builds and runs a create from body fields, group and
// queue coming from the path or the body.
func (s *Handler) createSnapshotFrom(w http.ResponseWriter, r *http.Request, in map[string]json.RawMessage, group, queue string) {
	name, present, ok := rawString(in["name"])
	switch {
	case !ok:
		s.fail(w, r, &badRequest{"name must be a string"})
		return
	case !present || name == "":
		s.fail(w, r, &badRequest{"name is required"})
		return
	case !snapshotName.MatchString(name):
		s.fail(w, r, &badRequest{"name must be 1 to 255 characters from A-Z, a-z, 0-9, '_', '.' and '-'"})
		return
	}
	labels, err := parseLabels(in["labels"])
	if err != nil {
		s.fail(w, r, err)
		return
	}
	expires, err := parseExpireTime(in["expireTime"])
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ttl, ttlPresent, ok := rawInt(in["ttlSeconds"])
	switch {
	case !ok || (ttlPresent && ttl <= 0):
		s.fail(w, r, &badRequest{"ttlSeconds must be a positive integer"})
		return
	case ttlPresent && expires != nil:
		s.fail(w, r, &badRequest{"give expireTime or ttlSeconds, not both"})
		return
	}
	if ttlPresent {
		// Checked before it is multiplied into a Duration, which would wrap
		// around past 292 years and give a snapshot an arbitrary expiry.
		if err := broker.CheckRange("ttlSeconds", ttl, 1, broker.MaxDurationSeconds); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	req := combtype.CreateSnapshotRequest{Name: name, Group: group, Queue: queue, Labels: labels,
		TTL: time.Duration(ttl) * time.Second}
	if expires != nil {
		req.ExpiresAt = *expires
	}
	sn, err := s.tb(r).SnapshotCreate(r.Context(), req)
	if err != nil {
		s.fail(w, r, err, snapshotNamed(name))
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"success": true, "snapshot": firstSnapshotPage(w, sn)})
}

func (s *Handler) createGroupSnapshot(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	in, err := s.readFields(w, r, "name", "labels", "expireTime", "ttlSeconds")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.createSnapshotFrom(w, r, in, ps.ByName("group"), ps.ByName("queue"))
}

func (s *Handler) createSnapshot(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	in, err := s.readFields(w, r, "name", "consumerGroup", "queue", "labels", "expireTime", "ttlSeconds")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	queue, present, ok := rawString(in["queue"])
	if !ok || !present || queue == "" {
		s.fail(w, r, &badRequest{"queue is required"})
		return
	}
	group, _, ok := rawString(in["consumerGroup"])
	if !ok {
		s.fail(w, r, &badRequest{"consumerGroup must be a string"})
		return
	}
	s.createSnapshotFrom(w, r, in, group, queue)
}

func (s *Handler) listSnapshots(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	q := r.URL.Query()
	pg, err := readPage(r, false)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	list, info, err := s.tb(r).SnapshotPage(r.Context(), combtype.SnapshotFilter{Group: q.Get("consumerGroup"), Queue: q.Get("queue")},
		pg.Page)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]snapshotOut, len(list))
	for i := range list {
		out[i] = snapshotJSON(&list[i], false)
	}
	pageHeaders(w, r, pg, info)
	writeJSON(w, http.StatusOK, map[string]any{"snapshots": out})
}

func (s *Handler) getSnapshot(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	name := ps.ByName("name")
	pg, err := readPage(r, true)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// Positions only: an offset would walk every cursor before it, and
	// a snapshot holds one per partition of its queue.
	if r.URL.Query().Get("offset") != "" {
		s.fail(w, r, &badRequest{"offset is not supported on a snapshot's partitions: page with limit and after (pagination.next, or the next page in the Link header)"})
		return
	}
	sn, info, err := s.tb(r).SnapshotCursorPage(r.Context(), name, pg.Page)
	if err != nil {
		s.fail(w, r, err, snapshotNamed(name))
		return
	}
	writeJSON(w, http.StatusOK, snapshotPage(w, r.URL.Path, r.URL.Query(), sn, pg, info))
}

// updateSnapshot changes labels and/or expireTime, the only mutable fields.
func (s *Handler) updateSnapshot(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	name := ps.ByName("name")
	in, err := s.readFields(w, r, "labels", "expireTime")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var u combtype.SnapshotUpdate
	if raw, ok := in["labels"]; ok {
		if u.Labels, err = parseLabels(raw); err != nil {
			s.fail(w, r, err)
			return
		}
		u.SetLabels = true
	}
	if raw, ok := in["expireTime"]; ok {
		if u.ExpiresAt, err = parseExpireTime(raw); err != nil {
			s.fail(w, r, err)
			return
		}
		if u.ExpiresAt == nil {
			s.fail(w, r, &badRequest{"expireTime must be a time"})
			return
		}
	}
	if !u.SetLabels && u.ExpiresAt == nil {
		s.fail(w, r, &badRequest{"nothing to update: give labels and/or expireTime"})
		return
	}
	sn, err := s.tb(r).SnapshotUpdate(r.Context(), name, u)
	if err != nil {
		s.fail(w, r, err, snapshotNamed(name))
		return
	}
	writeJSON(w, http.StatusOK, firstSnapshotPage(w, sn))
}

func (s *Handler) deleteSnapshot(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	name := ps.ByName("name")
	if err := s.tb(r).SnapshotDelete(r.Context(), name); err != nil {
		s.fail(w, r, err, snapshotNamed(name))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "name": name, "deleted": true})
}
