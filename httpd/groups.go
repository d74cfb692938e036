package httpd

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
)

// --- listings ----------------------------------------------------------

type groupOut struct {
	Name                  string   `json:"name"`
	Topics                []string `json:"topics"`
	QueueName             string   `json:"queueName"`
	Members               int64    `json:"members"`
	PartitionCursors      int64    `json:"partitionCursors"`
	PartitionsWithLag     int64    `json:"partitionsWithLag"`
	TotalLag              int64    `json:"totalLag"`
	MaxTimeLag            int64    `json:"maxTimeLag"`
	State                 string   `json:"state"`
	Storage               string   `json:"storage"`
	SubscriptionMode      *string  `json:"subscriptionMode"`
	SubscriptionTimestamp *string  `json:"subscriptionTimestamp"`
	SubscriptionCreatedAt *string  `json:"subscriptionCreatedAt"`
	// StatsAge is set for a queue too large to sum on every read: the
	// seconds since the pair's figures were summed in the background.
	StatsAge *int64 `json:"statsAge,omitempty"`
}

// ageSeconds is a background sum's age in whole seconds, or nil when the
// figures were summed for this reply.
func ageSeconds(summarized bool, age time.Duration) *int64 {
	if !summarized {
		return nil
	}
	secs := int64(age / time.Second)
	return &secs
}

func (s *Handler) listGroups(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	pg, err := readPage(r, false)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// queue= (comb's, docs/wire.md) lists the groups on one queue: the
	// console's queue view asks for those only, not the tenant's.
	var groups []combtype.GroupSummary
	var info combtype.PageInfo
	if q := r.URL.Query(); q.Has("queue") {
		if q.Get("queue") == "" {
			s.fail(w, r, &badRequest{"queue must name a queue"})
			return
		}
		groups, info, err = s.tb(r).QueueGroupListPage(r.Context(), q.Get("queue"), pg.Page)
	} else {
		groups, info, err = s.tb(r).GroupListPage(r.Context(), pg.Page)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	pageHeaders(w, r, pg, info)
	out := make([]groupOut, len(groups))
	for i, g := range groups {
		out[i] = groupOut{
			Name: g.Group, Topics: []string{g.Queue}, QueueName: g.Queue,
			Members: g.Cursors, PartitionCursors: g.Cursors, PartitionsWithLag: g.PartitionsWithLag,
			TotalLag: g.TotalLag, MaxTimeLag: int64(g.MaxTimeLag / time.Second), State: g.State(), Storage: "segments",
			StatsAge: ageSeconds(g.Summarized, g.StatsAge),
		}
	}
	writeJSON(w, http.StatusOK, out)
}

type groupPartitionOut struct {
	Partition      string  `json:"partition"`
	PartitionID    string  `json:"partitionId"`
	WorkerID       *string `json:"workerId"` // the lease recorded on the cursor, if any
	LastConsumedAt *string `json:"lastConsumedAt"`
	TotalConsumed  int64   `json:"totalConsumed"`
	OffsetLag      int64   `json:"offsetLag"`
	TimeLagSeconds int64   `json:"timeLagSeconds"`
	LeaseActive    bool    `json:"leaseActive"`
	// comb's additions, so a read-only token sees where the group stands:
	// the highest offset completed, the highest written, the first kept.
	// null when the cursor went between the two reads.
	CommittedOffset *int64 `json:"committedOffset"`
	LastOffset      *int64 `json:"lastOffset"`
	LogStart        *int64 `json:"logStart"`
}

func (s *Handler) getGroup(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	group := ps.ByName("group")
	if group == "lagging" {
		s.laggingGroups(w, r)
		return
	}
	pg, err := readPage(r, true)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// The body is keyed by queue name, so the page is told in headers.
	lags, offsets, info, err := s.tb(r).GroupLagPage(r.Context(), group, pg.Page)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	pageHeaders(w, r, pg, info)
	type queueOut struct {
		Partitions []groupPartitionOut `json:"partitions"`
	}
	out := map[string]*queueOut{}
	for _, l := range lags {
		q := out[l.Queue]
		if q == nil {
			q = &queueOut{Partitions: []groupPartitionOut{}}
			out[l.Queue] = q
		}
		po := groupPartitionOut{
			Partition: l.Partition, PartitionID: l.PartitionID, WorkerID: nullString(l.LeaseID),
			LastConsumedAt: nullTime(l.LastConsumedAt), TotalConsumed: l.TotalConsumed, OffsetLag: l.OffsetLag,
			TimeLagSeconds: int64(l.TimeLag / time.Second), LeaseActive: l.LeaseActive,
		}
		if o, ok := offsets[l.PartitionID]; ok {
			po.CommittedOffset, po.LastOffset, po.LogStart = &o.Committed, &o.LastOffset, &o.LogStart
		}
		q.Partitions = append(q.Partitions, po)
	}
	writeJSON(w, http.StatusOK, out)
}

// laggingOut keeps Queen's snake_case: this listing predates the camelCase ones.
type laggingOut struct {
	ConsumerGroup      string  `json:"consumer_group"`
	QueueName          string  `json:"queue_name"`
	PartitionName      string  `json:"partition_name"`
	PartitionID        string  `json:"partition_id"`
	WorkerID           *string `json:"worker_id"`
	OffsetLag          int64   `json:"offset_lag"`
	TimeLagSeconds     int64   `json:"time_lag_seconds"`
	LagHours           float64 `json:"lag_hours"`
	OldestUnconsumedAt string  `json:"oldest_unconsumed_at"`
	LastConsumedAt     *string `json:"last_consumed_at"` // always null, as the wire documents it
	// StatsAge is set on a row of a queue too large to sort on every read:
	// the seconds since the row was read in the background.
	StatsAge *int64 `json:"statsAge,omitempty"`
}

func (s *Handler) laggingGroups(w http.ResponseWriter, r *http.Request) {
	// Past what a Duration holds, as good as for ever: nothing lags so.
	minLag := min(max(queryInt(r.URL.Query(), "minLagSeconds", 3600), 0), int(math.MaxInt64/time.Second))
	pg, err := readPage(r, false)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	lags, info, err := s.tb(r).GroupLaggingPage(r.Context(), time.Duration(minLag)*time.Second, pg.Page)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	pageHeaders(w, r, pg, info)
	out := make([]laggingOut, len(lags))
	for i, l := range lags {
		secs := int64(l.TimeLag / time.Second)
		out[i] = laggingOut{
			ConsumerGroup: l.Group, QueueName: l.Queue, PartitionName: l.Partition, PartitionID: l.PartitionID,
			WorkerID: nullString(l.LeaseID), OffsetLag: l.OffsetLag, TimeLagSeconds: secs,
			LagHours: math.Round(float64(secs)/36) / 100, OldestUnconsumedAt: fmtMilli(l.OldestUnconsumedAt),
			StatsAge: ageSeconds(l.Summarized, l.StatsAge),
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func nullTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := fmtMilli(t)
	return &s
}

// --- subscription --------------------------------------------------------

func (s *Handler) updateSubscription(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	var in struct {
		SubscriptionTimestamp json.RawMessage `json:"subscriptionTimestamp"`
	}
	if err := s.readJSON(w, r, &in); err != nil && !errors.Is(err, errEmptyBody) {
		s.fail(w, r, err)
		return
	}
	sent, present, ok := rawString(in.SubscriptionTimestamp)
	switch {
	case !ok:
		s.fail(w, r, &badRequest{"subscriptionTimestamp must be a string"})
		return
	case !present || sent == "":
		s.fail(w, r, &badRequest{"subscriptionTimestamp is required"})
		return
	}
	t, ok := broker.ParseTime(sent)
	if !ok {
		s.fail(w, r, &badRequest{fmt.Sprintf("subscriptionTimestamp %q is not a valid time (RFC 3339 or YYYY-MM-DD)", sent)})
		return
	}
	group := ps.ByName("group")
	n, err := s.tb(r).GroupSubscribeFrom(r.Context(), group, t)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "consumerGroup": group, "newTimestamp": sent, "rowsUpdated": n})
}

// --- seek --------------------------------------------------------------

type seekIn struct {
	ToEnd     json.RawMessage `json:"toEnd"`
	Timestamp json.RawMessage `json:"timestamp"`
	Offset    json.RawMessage `json:"offset"`
	Snapshot  json.RawMessage `json:"snapshot"`
	DryRun    json.RawMessage `json:"dryRun"`
}

// parseSeek reads a seek body. A body naming no position (empty, {}, or
// toEnd:false) is toEnd when emptyIsEnd (the per-partition route: the
// dashboard sends nothing and Queen's Go SDK sends {}), and otherwise the
// seed's 400.
func (s *Handler) parseSeek(w http.ResponseWriter, r *http.Request, emptyIsEnd bool) (combtype.SeekTarget, bool, error) {
	var in seekIn
	if err := s.readJSON(w, r, &in); err != nil && !errors.Is(err, errEmptyBody) {
		return combtype.SeekTarget{}, false, err
	}
	var t combtype.SeekTarget
	toEnd, _, ok := rawBool(in.ToEnd)
	if !ok {
		return t, false, &badRequest{"toEnd must be a boolean"}
	}
	t.ToEnd = toEnd
	ts, _, ok := rawString(in.Timestamp)
	if !ok {
		return t, false, &badRequest{"timestamp must be a string"}
	}
	if ts != "" {
		at, ok := broker.ParseTime(ts)
		if !ok {
			return t, false, &badRequest{fmt.Sprintf("timestamp %q is not a valid time (RFC 3339 or YYYY-MM-DD)", ts)}
		}
		t.Time = &at
	}
	off, present, ok := rawInt(in.Offset)
	if !ok {
		return t, false, &badRequest{"offset must be an integer"}
	}
	if present {
		t.Offset = &off
	}
	if t.Snapshot, _, ok = rawString(in.Snapshot); !ok {
		return t, false, &badRequest{"snapshot must be a string"}
	}
	dryRun, _, ok := rawBool(in.DryRun)
	if !ok {
		return t, false, &badRequest{"dryRun must be a boolean"}
	}
	err := t.Validate()
	if errors.Is(err, combtype.ErrNoTarget) && emptyIsEnd {
		t.ToEnd, err = true, nil
	}
	if err != nil {
		return t, false, err
	}
	return t, dryRun, nil
}

type partitionSeekOut struct {
	Partition      string `json:"partition"`
	PartitionID    string `json:"partitionId"`
	From           int64  `json:"from"`
	To             int64  `json:"to"`
	Redeliver      int64  `json:"redeliver"`
	Skip           int64  `json:"skip"`
	OvershootBound int64  `json:"overshootBound"`
	Clamped        bool   `json:"clamped"`
	FramesEvicted  int64  `json:"framesEvicted"`
	Created        bool   `json:"created"`
}

// seekTotals sums a seek over every partition it took, listed or not:
// what the console's preview reads before any row.
type seekTotals struct {
	Partitions     int64 `json:"partitions"`
	Moving         int64 `json:"moving"` // whose cursor the seek moves (from != to)
	Redeliver      int64 `json:"redeliver"`
	Skip           int64 `json:"skip"`
	OvershootBound int64 `json:"overshootBound"`
	Clamped        int64 `json:"clamped"` // partitions clamped
}

// maxSeekPartitionsListed bounds the partitions a seek's reply lists,
// in the order the seek took them; partitionsOmitted counts the rest,
// which the seek moved all the same. A seek of a queue of 200,000
// partitions answered 86.8 MB and took the server to 321 MB.
const maxSeekPartitionsListed = 1000

// seekBody is what both seek routes answer beyond their own fields: the
// seed's seekToEnd and targetTimestamp (the parsed time, RFC 3339 with
// milliseconds, UTC, on both routes), then comb's additions.
func seekBody(t combtype.SeekTarget, dryRun bool, res *combtype.SeekResult) map[string]any {
	body := map[string]any{"success": true, "consumerGroup": res.Group, "queueName": res.Queue,
		"seekToEnd": t.ToEnd, "targetTimestamp": nil}
	if t.Time != nil {
		body["targetTimestamp"] = fmtMilli(*t.Time)
	}
	if t.Offset != nil {
		body["targetOffset"] = *t.Offset
	}
	if res.Snapshot != nil {
		body["snapshot"] = res.Snapshot.Name
		body["snapshotCreatedAt"] = fmtMilli(res.Snapshot.CreatedAt)
	}
	listed := res.Partitions[:min(len(res.Partitions), maxSeekPartitionsListed)]
	parts := make([]partitionSeekOut, len(listed))
	for i, p := range listed {
		parts[i] = partitionSeekOut{Partition: p.Partition, PartitionID: p.PartitionID, From: p.From, To: p.To,
			Redeliver: p.Redeliver, Skip: p.Skip, OvershootBound: p.OvershootBound, Clamped: p.Clamped,
			FramesEvicted: p.FramesEvicted, Created: p.Created}
	}
	body["partitions"] = parts
	if omitted := res.Totals.Partitions - int64(len(listed)); omitted > 0 {
		body["partitionsOmitted"] = omitted
	}
	sum := res.Totals
	body["totals"] = seekTotals{Partitions: sum.Partitions, Moving: sum.Moving, Redeliver: sum.Redeliver, Skip: sum.Skip,
		OvershootBound: sum.OvershootBound, Clamped: sum.Clamped}
	body["clamped"], body["framesEvicted"] = res.Clamped()
	if dryRun {
		body["dryRun"] = true
	}
	return body
}

func (s *Handler) seekQueue(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	group, queue := ps.ByName("group"), ps.ByName("queue")
	t, dryRun, err := s.parseSeek(w, r, false)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.tb(r).GroupSeek(r.Context(), combtype.SeekRequest{Group: group, Queue: queue,
		Target: t, DryRun: dryRun, List: maxSeekPartitionsListed})
	if err != nil {
		// Failing loudly: a misdirected seek must not look like it worked.
		s.fail(w, r, err, func(err error, _ int, _ string) any {
			if !errors.Is(err, combtype.ErrQueueNotFound) {
				return nil
			}
			return map[string]any{"success": false, "error": "Queue not found or has no partitions",
				"consumerGroup": group, "queueName": queue, "partitionsUpdated": 0}
		}, snapshotNamed(t.Snapshot))
		return
	}
	body := seekBody(t, dryRun, res)
	body["partitionsUpdated"] = res.Totals.Partitions
	if dryRun {
		body["partitionsUpdated"] = 0
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *Handler) seekPartition(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	group, queue, partition := ps.ByName("group"), ps.ByName("queue"), ps.ByName("partition")
	t, dryRun, err := s.parseSeek(w, r, true)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	res, err := s.tb(r).GroupSeek(r.Context(), combtype.SeekRequest{Group: group, Queue: queue,
		Partition: partition, Target: t, DryRun: dryRun})
	if err != nil {
		s.fail(w, r, err, func(err error, _ int, _ string) any {
			if !errors.Is(err, combtype.ErrPartitionNotFound) && !errors.Is(err, combtype.ErrQueueNotFound) {
				return nil
			}
			return map[string]any{"success": false, "error": "Partition not found"}
		}, snapshotNamed(t.Snapshot))
		return
	}
	body := seekBody(t, dryRun, res)
	body["partitionName"] = partition
	body["updated"] = !dryRun
	writeJSON(w, http.StatusOK, body)
}

// --- delete ------------------------------------------------------------

// deleteMetadata reads ?deleteMetadata, true unless given as anything but true/1.
func deleteMetadata(r *http.Request) bool {
	q := r.URL.Query()
	if !q.Has("deleteMetadata") {
		return true
	}
	return queryBool(q, "deleteMetadata")
}

func (s *Handler) deleteGroup(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	group, meta := ps.ByName("group"), deleteMetadata(r)
	n, err := s.tb(r).GroupDelete(r.Context(), combtype.GroupDeleteRequest{Group: group, DeleteMetadata: meta})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "consumerGroup": group, "deletedPartitions": n,
		"metadataDeleted": meta})
}

func (s *Handler) deleteGroupQueue(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	group, queue, meta := ps.ByName("group"), ps.ByName("queue"), deleteMetadata(r)
	n, err := s.tb(r).GroupDelete(r.Context(), combtype.GroupDeleteRequest{Group: group, Queue: queue, DeleteMetadata: meta})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "consumerGroup": group, "queueName": queue,
		"deletedPartitions": n, "metadataDeleted": meta})
}
