package httpd

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
)

type countsOut struct {
	Total      int64 `json:"total"`
	Pending    int64 `json:"pending"`
	Processing int64 `json:"processing"`
	Completed  int64 `json:"completed"`
	Failed     int64 `json:"failed"`
	DeadLetter int64 `json:"deadLetter"`
}

func countsJSON(c combtype.MessageCounts) countsOut {
	return countsOut{Total: c.Total, Pending: c.Pending, Processing: c.Processing, Completed: c.Completed,
		Failed: c.Failed, DeadLetter: c.DeadLetter}
}

// queueSummaryOut is a queue in the resources and status listings.
type queueSummaryOut struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Namespace  string `json:"namespace"`
	Task       string `json:"task"`
	CreatedAt  string `json:"createdAt"`
	Partitions int    `json:"partitions"`
	Messages   struct {
		Total      int64 `json:"total"`
		Pending    int64 `json:"pending"`
		Processing int64 `json:"processing"`
	} `json:"messages"`
	// StatsAge is set for a queue too large to sum on every read: the
	// seconds since its counts were summed in the background.
	StatsAge *int64 `json:"statsAge,omitempty"`
}

// statsAge is qs's statsAge in whole seconds, or nil when its counts were
// summed for this reply.
func statsAge(qs *combtype.QueueStats) *int64 {
	if !qs.Summarized {
		return nil
	}
	age := int64(qs.StatsAge / time.Second)
	return &age
}

// summaryQueueJSON is a queue of sum: as old as sum when sum was made in
// the background.
func summaryQueueJSON(qs *combtype.QueueStats, sum *combtype.Summary) queueSummaryOut {
	out := queueSummaryJSON(qs)
	if sum.Summarized {
		age := summaryAge(&sum.Overview)
		if out.StatsAge != nil {
			age = max(age, *out.StatsAge)
		}
		out.StatsAge = &age
	}
	return out
}

// summaryAge is o's statsAge in whole seconds: 0 when summed for this
// reply.
func summaryAge(o *combtype.Overview) int64 {
	if !o.Summarized {
		return 0
	}
	return int64(o.StatsAge / time.Second)
}

func queueSummaryJSON(qs *combtype.QueueStats) queueSummaryOut {
	out := queueSummaryOut{ID: qs.UUID, Name: qs.Name, Namespace: qs.Namespace, Task: qs.Task,
		CreatedAt: fmtMilli(qs.CreatedAt), Partitions: qs.PartitionCount}
	out.Messages.Total, out.Messages.Pending, out.Messages.Processing = qs.Counts.Total, qs.Counts.Pending, qs.Counts.Processing
	out.StatsAge = statsAge(qs)
	return out
}

// optTime is a time in milliseconds, or null for the zero time.
func optTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := fmtMilli(t)
	return &s
}

type lagOut struct {
	Avg    float64 `json:"avg"`
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

func lagJSON(l combtype.LagSummary) lagOut {
	return lagOut{Avg: l.Avg, Median: l.Median, Min: l.Min, Max: l.Max}
}

func (s *Handler) resourcesOverview(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	o, err := s.tb(r).StatsOverview(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	_, processed := s.b.Metrics().Rates()
	writeJSON(w, http.StatusOK, map[string]any{
		"queues": o.Queues, "partitions": o.Partitions, "namespaces": o.Namespaces, "tasks": o.Tasks,
		"messages": countsJSON(o.Counts),
		"lag":      map[string]any{"time": lagJSON(o.TimeLag), "offset": lagJSON(o.OffsetLag)},
		"throughput": map[string]any{"ingestedPerSecond": float64(o.IngestedLastMinute) / 60,
			"processedPerSecond": processed},
		"timestamp": fmtMilli(o.Timestamp),
		// Summed on this request from cursors and watermarks, or, for a
		// tenant too large for that, by the background refresher this
		// many seconds ago.
		"statsAge": summaryAge(o),
	})
}

// queueFilter reads namespace, task, limit and offset; a missing or
// malformed limit is def (0 = no limit).
func queueFilter(r *http.Request, def int) combtype.QueueFilter {
	q := r.URL.Query()
	f := combtype.QueueFilter{Namespace: q.Get("namespace"), Task: q.Get("task"),
		Limit: queryInt(q, "limit", def), Offset: max(queryInt(q, "offset", 0), 0)}
	if f.Limit < 0 {
		f.Limit = def
	}
	return f
}

// queueSorts are the orders the queue listing takes in sort.
var queueSorts = map[string]bool{}

func init() {
	for _, k := range combtype.QueueSorts {
		queueSorts[k] = true
	}
}

func (s *Handler) resourcesQueues(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	// Queen lists every queue, newest first. comb lists a page of at most
	// MaxPageLimit ("Pages" in docs/wire.md), and takes a search, an order
	// and a direction so a console can show one page of a long list. Each
	// queue is one aggregate over its partitions, which are not listed.
	q := r.URL.Query()
	f := queueFilter(r, combtype.MaxPageLimit)
	f.Limit = min(f.Limit, combtype.MaxPageLimit)
	if f.Limit == 0 {
		f.Limit = combtype.MaxPageLimit
	}
	f.Search, f.Sort = q.Get("search"), q.Get("sort")
	if f.Sort != "" && !queueSorts[f.Sort] {
		s.fail(w, r, &badRequest{fmt.Sprintf("sort must be one of %s (got %q)", strings.Join(combtype.QueueSorts, ", "), f.Sort)})
		return
	}
	switch q.Get("dir") {
	case "", "asc":
	case "desc":
		f.Desc = true
	default:
		s.fail(w, r, &badRequest{fmt.Sprintf("dir must be asc or desc (got %q)", q.Get("dir"))})
		return
	}
	stats, info, err := s.tb(r).QueuePage(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]queueSummaryOut, len(stats))
	for i, qs := range stats {
		out[i] = queueSummaryJSON(qs)
	}
	body := map[string]any{"queues": out}
	pg := pageRequest{Page: combtype.Page{Limit: f.Limit, Offset: f.Offset}}
	for _, k := range []string{"limit", "offset", "search", "sort", "dir"} {
		pg.asked = pg.asked || q.Has(k)
	}
	if pg.asked || info.More {
		body["pagination"] = pagination(pg, info)
	}
	pageHeaders(w, r, pg, info)
	writeJSON(w, http.StatusOK, body)
}

func (s *Handler) resourcesQueue(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	pg, err := readPage(r, true)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	qs, info, err := queueStatsPage(s.tb(r), r, ps.ByName("queue"), &pg)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	parts := make([]map[string]any, len(qs.Partitions))
	for i := range qs.Partitions {
		p := &qs.Partitions[i]
		parts[i] = map[string]any{"id": p.UUID, "name": p.Name, "createdAt": fmtMilli(p.CreatedAt),
			"stats": countsJSON(p.Counts), "oldestMessage": optTime(p.Oldest), "newestMessage": optTime(p.Newest)}
	}
	body := map[string]any{"id": qs.UUID, "name": qs.Name, "namespace": qs.Namespace,
		"task": qs.Task, "createdAt": fmtMilli(qs.CreatedAt), "partitions": parts, "totals": countsJSON(qs.Counts)}
	// totals always cover every partition; a reply holding all of them
	// keeps Queen's shape exactly. A queue above the live limit has them
	// from the background sum, and says how old it is.
	writeQueuePage(w, r, body, qs, pg, info)
}

// writeQueuePage answers a queue's detail: body holds one page of its
// partitions, and the totals of all of them, which are as old as statsAge
// says when they come from the background sum.
// queueStatsPage reads the page pg of a queue's details. Asked for no
// limit, the store picks the page (the whole queue when it fits one page,
// as Queen answers, else a smaller one): pg takes the limit it picked.
func queueStatsPage(b *broker.Broker, r *http.Request, name string, pg *pageRequest) (*combtype.QueueStats, combtype.PageInfo, error) {
	page := pg.Page
	if r.URL.Query().Get("limit") == "" {
		page.Limit = 0
	}
	qs, info, err := b.QueueStatsPage(r.Context(), name, page)
	if info.Limit > 0 {
		pg.Limit = info.Limit
	}
	return qs, info, err
}

func writeQueuePage(w http.ResponseWriter, r *http.Request, body map[string]any, qs *combtype.QueueStats, pg pageRequest, info combtype.PageInfo) {
	if age := statsAge(qs); age != nil {
		body["statsAge"] = *age
	}
	if pg.asked || info.More {
		body["pagination"] = pagination(pg, info)
	}
	pageHeaders(w, r, pg, info)
	writeJSON(w, http.StatusOK, body)
}

func (s *Handler) deleteQueue(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	name := ps.ByName("queue")
	existed, err := s.tb(r).QueueDelete(r.Context(), name)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"deleted": true, "queue": name, "existed": existed})
}

type groupedOut struct {
	Namespace  *string `json:"namespace,omitempty"`
	Task       *string `json:"task,omitempty"`
	Queues     int64   `json:"queues"`
	Partitions int64   `json:"partitions"`
	Messages   struct {
		Total   int64 `json:"total"`
		Pending int64 `json:"pending"`
	} `json:"messages"`
}

func groupedJSON(gs []combtype.GroupedStats, task bool) []groupedOut {
	out := make([]groupedOut, len(gs))
	for i, g := range gs {
		name := g.Name
		if task {
			out[i].Task = &name
		} else {
			out[i].Namespace = &name
		}
		out[i].Queues, out[i].Partitions = g.Queues, g.Partitions
		out[i].Messages.Total, out[i].Messages.Pending = g.Counts.Total, g.Counts.Pending
	}
	return out
}

// The namespace and task listings answer a page, by name (docs/wire.md,
// "Pages"): each namespace is summed over its queues, and a queue's
// namespace is its name unless configured.
func (s *Handler) resourcesNamespaces(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	pg, err := readPage(r, false)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	gs, info, err := s.tb(r).NamespacePage(r.Context(), pg.Page)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	pageHeaders(w, r, pg, info)
	writeJSON(w, http.StatusOK, map[string]any{"namespaces": groupedJSON(gs, false)})
}

func (s *Handler) resourcesTasks(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	pg, err := readPage(r, false)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	gs, info, err := s.tb(r).TaskPage(r.Context(), pg.Page)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	pageHeaders(w, r, pg, info)
	writeJSON(w, http.StatusOK, map[string]any{"tasks": groupedJSON(gs, true)})
}
