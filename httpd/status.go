package httpd

import (
	"net/http"
	"runtime"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
)

// The status and analytics routes feed Queen's dashboard. Every figure is
// computed from watermarks, cursors and segment index entries, never from
// messages: when asked, or, for the totals of a tenant or queue too large
// to sum on every read, by the store's background refresher, and then
// statsAge says how old they are (store/totals.go).

// maxSeriesPoints bounds a time series answer.
const maxSeriesPoints = 10000

// timeRange reads from and to; a missing to is now and a missing from is
// to - def. ok is false (and a 400 written) when either is unparsable or
// from is after to.
func (s *Handler) timeRange(w http.ResponseWriter, r *http.Request, def time.Duration) (from, to time.Time, ok bool) {
	q := r.URL.Query()
	f, okFrom := queryTime(q.Get("from"))
	t, okTo := queryTime(q.Get("to"))
	if !okFrom || !okTo {
		s.fail(w, r, &badRequest{"from and to must be RFC 3339 times or YYYY-MM-DD dates"})
		return from, to, false
	}
	to = s.b.Now()
	if t != nil {
		to = *t
	}
	from = to.Add(-def)
	if f != nil {
		from = *f
	}
	if from.After(to) {
		s.fail(w, r, &badRequest{"from must not be after to"})
		return from, to, false
	}
	return from, to, true
}

// bucketFor picks a chart's bucket so a range gives at most a few hundred
// points.
func bucketFor(d time.Duration) time.Duration {
	switch {
	case d <= 2*time.Hour:
		return time.Minute
	case d <= 12*time.Hour:
		return 5 * time.Minute
	case d <= 48*time.Hour:
		return 15 * time.Minute
	case d <= 14*24*time.Hour:
		return time.Hour
	}
	return 24 * time.Hour
}

func (s *Handler) status(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	from, to, ok := s.timeRange(w, r, time.Hour)
	if !ok {
		return
	}
	bucket := bucketFor(to.Sub(from))
	if to.Sub(from)/bucket >= maxSeriesPoints {
		s.fail(w, r, &badRequest{"time range too large"})
		return
	}
	// Buckets start on whole intervals, as the analytics' do: a chart
	// expects it, and the store keeps the counts of passed minutes for
	// such a series (store/ingestmemo.go) instead of reading its segments
	// on every poll.
	from = from.UTC().Truncate(bucket)
	pg, err := readPage(r, false)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	f := combtype.QueueFilter{Namespace: q.Get("namespace"), Task: q.Get("task"), Name: q.Get("queue")}
	// The tenant's queues and totals come from its Summary: summed on
	// this read for a small tenant, by the background refresher for a
	// large one (statsAge). The reply lists one page of the queues.
	sum, err := s.tb(r).StatsSummary(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	series, err := s.tb(r).StatsIngest(r.Context(), combtype.SeriesFilter{Queue: f.Name,
		Namespace: f.Namespace, Task: f.Task, From: from, To: to, Bucket: bucket})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	leases, err := s.tb(r).LeaseCounts(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// Completions are counted in memory per minute for the last day, for
	// the whole broker: they are not split by queue or tenant.
	processed := make([]int64, len(series))
	for _, p := range s.b.Metrics().Throughput(from, to) {
		if i := int(p.Minute.Sub(from) / bucket); i >= 0 && i < len(processed) {
			processed[i] += p.Acked
		}
	}
	secs := bucket.Seconds()
	points := make([]map[string]any, len(series))
	for i, p := range series {
		points[i] = map[string]any{"timestamp": fmtMilli(p.At), "ingested": p.Messages, "processed": processed[i],
			"ingestedPerSecond": float64(p.Messages) / secs, "processedPerSecond": float64(processed[i]) / secs}
	}
	var counts combtype.MessageCounts
	names := []string{}
	queues := []queueSummaryOut{}
	matched := 0
	for _, qs := range sum.Queues {
		if (f.Namespace != "" && qs.Namespace != f.Namespace) || (f.Task != "" && qs.Task != f.Task) ||
			(f.Name != "" && qs.Name != f.Name) {
			continue
		}
		if matched >= pg.Offset && len(queues) < pg.Limit {
			queues = append(queues, summaryQueueJSON(qs, sum))
		}
		matched++
		names = append(names, qs.Name)
		counts.Total += qs.Counts.Total
		counts.Pending += qs.Counts.Pending
		counts.Processing += qs.Counts.Processing
		counts.Completed += qs.Counts.Completed
		counts.DeadLetter += qs.Counts.DeadLetter
	}
	if f == (combtype.QueueFilter{}) {
		names = nil // every queue, deleted ones' rows included until they go
	}
	failed, err := s.tb(r).DLQCount(r.Context(), combtype.DLQCountFilter{Queues: names, From: from, To: to})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	body := map[string]any{
		"timeRange":     map[string]any{"from": fmtMilli(from), "to": fmtMilli(to)},
		"bucketMinutes": int(bucket / time.Minute),
		"pointCount":    len(points),
		"throughput":    points,
		"queues":        queues,
		"messages":      countsJSON(counts),
		"leases": map[string]any{"active": leases.Active, "partitionsLeased": leases.Partitions,
			"messagesLeased": counts.Processing},
		"deadLetterQueue": map[string]any{"total": counts.DeadLetter, "inRange": failed},
		// One process serves every request.
		"workers": 1,
		// Requests answered with a 5xx since the server started.
		"errors":   s.stats.byClass[5].Load(),
		"statsAge": summaryAge(&sum.Overview),
	}
	info := combtype.PageInfo{Total: int64(matched), More: pg.Offset+len(queues) < matched}
	if pg.asked || info.More {
		body["pagination"] = pagination(pg, info)
	}
	pageHeaders(w, r, pg, info)
	if s.cfg.Forwarders != nil {
		body["forwarders"] = s.forwarderSummary(r)
	}
	writeJSON(w, http.StatusOK, body)
}

func (s *Handler) statusQueues(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	// Queen's page of 100 by default. A limit of 0, or past MaxPageLimit,
	// is read as MaxPageLimit, leniently as the queue listing of resources
	// reads it: unclamped, limit=0 listed every queue in one reply (200,000
	// queues: 40 MB).
	f := queueFilter(r, 100)
	if f.Limit == 0 || f.Limit > combtype.MaxPageLimit {
		f.Limit = combtype.MaxPageLimit
	}
	stats, err := s.tb(r).QueueList(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]queueSummaryOut, len(stats))
	for i, qs := range stats {
		out[i] = queueSummaryJSON(qs)
	}
	writeJSON(w, http.StatusOK, map[string]any{"queues": out, "pagination": paginationOut{Limit: f.Limit, Offset: f.Offset}})
}

// totalsOut is a queue's totals in its status: the six counts, and the
// same again under "messages", as Queen sends them.
type totalsOut struct {
	countsOut
	Messages countsOut `json:"messages"`
}

// statusQueue pages the queue's partitions as the queue detail of
// resources does (docs/wire.md, "Pages"): a queue that fits in one page
// gets Queen's reply, a larger one a page, with totals over every
// partition (from the background sum, with statsAge, above the live
// limit).
func (s *Handler) statusQueue(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
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
	o := qs.Options
	parts := make([]map[string]any, len(qs.Partitions))
	for i := range qs.Partitions {
		p := &qs.Partitions[i]
		last := p.LastConsumedAt
		if newest := p.Newest; newest.After(last) {
			last = newest
		}
		parts[i] = map[string]any{"id": p.UUID, "name": p.Name, "createdAt": fmtMilli(p.CreatedAt),
			// Queen's dashboard reads all six counts under both names.
			"messages": countsJSON(p.Counts),
			"stats":    countsJSON(p.Counts),
			"cursor":   map[string]any{"totalConsumed": p.TotalConsumed, "batchesConsumed": p.BatchesConsumed},
			// The last push or consumption, whichever came later.
			"lastActivity":  optTime(last),
			"oldestMessage": optTime(p.Oldest), "newestMessage": optTime(p.Newest)}
	}
	body := map[string]any{
		"queue": map[string]any{"id": qs.UUID, "name": qs.Name, "namespace": qs.Namespace, "task": qs.Task,
			"priority": o.Priority, "createdAt": fmtMilli(qs.CreatedAt),
			"config": map[string]any{"leaseTime": o.LeaseTime, "retryLimit": o.RetryLimit, "retryDelay": o.RetryDelay,
				"ttl": o.TTL, "maxQueueSize": o.MaxSize, "deadLetterQueue": o.DeadLetterQueue}},
		"partitions": parts,
		// Queen repeats the totals under "messages" too.
		"totals": totalsOut{countsOut: countsJSON(qs.Counts), Messages: countsJSON(qs.Counts)},
	}
	writeQueuePage(w, r, body, qs, pg, info)
}

func (s *Handler) statusQueueMessages(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	name := ps.ByName("queue")
	// Only whether the queue exists: one partition, not all of them.
	if _, _, err := s.tb(r).QueueStatsPage(r.Context(), name, combtype.Page{Limit: 1}); err != nil {
		s.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	limit := queryInt(q, "limit", 50)
	if limit <= 0 {
		limit = 50
	}
	msgs, _, err := s.tb(r).MessageList(r.Context(), combtype.MessageFilter{Queue: name,
		Limit: min(limit, broker.MaxMessageLimit), Offset: max(queryInt(q, "offset", 0), 0)})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]map[string]any, len(msgs))
	for i, m := range msgs {
		out[i] = map[string]any{"id": m.ID, "transactionId": m.TxnID, "partitionId": m.PartitionID,
			"queuePath": m.Queue + "/" + m.Partition, "queue": m.Queue, "partition": m.Partition, "status": m.Status,
			"createdAt": fmtMilli(m.CreatedAt)}
	}
	writeJSON(w, http.StatusOK, out)
}

var analyticsIntervals = map[string]time.Duration{"minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour}

func (s *Handler) statusAnalytics(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	q := r.URL.Query()
	interval := q.Get("interval")
	bucket, known := analyticsIntervals[interval]
	if !known {
		interval, bucket = "hour", time.Hour
	}
	from, to, ok := s.timeRange(w, r, 24*time.Hour)
	if !ok {
		return
	}
	if to.Sub(from)/bucket >= maxSeriesPoints {
		s.fail(w, r, &badRequest{"time range too large for interval " + interval})
		return
	}
	// Buckets start on whole intervals, as a chart expects.
	from = from.UTC().Truncate(bucket)
	series, err := s.tb(r).StatsIngest(r.Context(), combtype.SeriesFilter{Queue: q.Get("queue"),
		Namespace: q.Get("namespace"), Task: q.Get("task"), From: from, To: to, Bucket: bucket})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	points := make([]map[string]any, len(series))
	for i, p := range series {
		points[i] = map[string]any{"timestamp": fmtMilli(p.At), "messages": p.Messages}
	}
	writeJSON(w, http.StatusOK, map[string]any{"dataPoints": points, "interval": interval,
		"from": fmtMilli(from), "to": fmtMilli(to)})
}

func (s *Handler) statusBuffers(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	healthy := s.b.Health(r.Context()) == nil
	m, err := s.b.Maintenance(r.Context())
	if err != nil {
		healthy = false
	}
	writeJSON(w, http.StatusOK, map[string]any{
		// Pushes parked by push maintenance, not yet in the log.
		"pending": m.Buffered,
		// A parked push is retried until it drains; none is ever dropped.
		"failed":    0,
		"dbHealthy": healthy,
		"worker": map[string]any{"id": 0, "parkedPops": s.b.Parked(), "pendingWrites": s.b.PendingWrites(),
			"pushMaintenance": m.PushMaintenance, "popMaintenance": m.PopMaintenance},
	})
}

// analytics answers the dashboard's analytics panels with what a single
// SQLite node has.
func (s *Handler) analytics(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	ctx := r.Context()
	switch ps.ByName("kind") {
	case "system-metrics":
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		user, system := cpuMicros()
		pool := s.b.EngineStats().Readers
		writeJSON(w, http.StatusOK, map[string]any{
			"timestamp": fmtMilli(s.b.Now()), "uptime": s.b.Metrics().Uptime().Seconds(),
			"memory":     map[string]any{"rss": rssBytes(), "heapTotal": ms.HeapSys, "heapUsed": ms.HeapAlloc, "gcCycles": ms.NumGC},
			"cpu":        map[string]any{"user": user, "system": system},
			"goroutines": runtime.NumGoroutine(),
			"database": map[string]any{"poolSize": pool.MaxOpen, "inUse": pool.InUse, "idle": pool.Idle,
				"pendingWrites": s.b.PendingWrites()},
		})
	case "worker-metrics":
		st := s.b.EngineStats()
		commits, micros := st.Commits, st.CommitMicros
		avg := 0.0
		if commits > 0 {
			avg = float64(micros) / float64(commits) / 1000
		}
		writeJSON(w, http.StatusOK, map[string]any{"workers": []map[string]any{{
			"workerId": 0, "commits": commits, "writesCommitted": st.CommitOps, "segments": st.Segments,
			"messages": st.Frames, "avgCommitMs": avg, "parkedPops": s.b.Parked(),
			"pendingWrites": st.PendingWrites}}})
	case "queue-lag":
		// A page of the (group, queue) pairs, as /consumer-groups pages
		// them (docs/wire.md, "Pages"): the whole list took 0.36-0.49 s at
		// 10,000 groups, and grows with them.
		pg, err := readPage(r, false)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		groups, info, err := s.tb(r).GroupListPage(ctx, pg.Page)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		pageHeaders(w, r, pg, info)
		out := make([]map[string]any, len(groups))
		for i, g := range groups {
			out[i] = map[string]any{"queue": g.Queue, "consumerGroup": g.Group, "offsetLag": g.TotalLag,
				"timeLagSeconds": int64(g.MaxTimeLag / time.Second), "partitionsWithLag": g.PartitionsWithLag}
			if age := ageSeconds(g.Summarized, g.StatsAge); age != nil {
				out[i]["statsAge"] = *age
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"groups": out})
	case "queue-ops":
		// Names only: the counters live in memory, and listing the
		// queues with their totals cost 0.2-0.4 s at 10,000 queues. queue
		// (repeatable) keeps the answer to the queues a view shows.
		names, err := s.tb(r).QueueNames(ctx)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		asked := map[string]bool{}
		for _, n := range r.URL.Query()["queue"] {
			asked[n] = true
		}
		counters := s.b.Metrics().Queues()
		t := tenant(ctx)
		out := make([]map[string]any, 0, len(names))
		for i := len(names) - 1; i >= 0; i-- { // newest first, as the queue listings
			name := names[i]
			if len(asked) > 0 && !asked[name] {
				continue
			}
			row := map[string]any{"queue": name, "pushed": 0, "popped": 0, "acked": 0, "deadLettered": 0}
			if c := counters[broker.QueueKey{Tenant: t, Queue: name}]; c != nil {
				row["pushed"], row["popped"], row["acked"], row["deadLettered"] =
					c.Pushed.Load(), c.Popped.Load(), c.Acked.Load(), c.DeadLettered.Load()
			}
			out = append(out, row)
		}
		writeJSON(w, http.StatusOK, map[string]any{"queues": out, "since": fmtMilli(s.b.Now().Add(-s.b.Metrics().Uptime()))})
	case "queue-parked-replicas":
		// No cluster: one replica, this process.
		writeJSON(w, http.StatusOK, map[string]any{"replicas": []map[string]any{{"workerId": 0, "parkedPops": s.b.Parked()}}})
	case "retention":
		// queue keeps the answer to one queue, as its view shows it (an
		// unknown one lists nothing); without it, a page of the queues,
		// newest first (docs/wire.md, "Pages"): at 10,000 queues the
		// whole list was 3.4 MB. Each from the queue's totals, not its
		// partitions: reading each partition took 1.5-2.2 s a request at
		// 100,000 partitions.
		pg, err := readPage(r, false)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		f := combtype.QueueFilter{Limit: pg.Limit, Offset: pg.Offset}
		if name := r.URL.Query().Get("queue"); name != "" {
			f = combtype.QueueFilter{Name: name, Limit: 1}
		}
		stats, info, err := s.tb(r).QueuePage(ctx, f)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if f.Name == "" {
			pageHeaders(w, r, pg, info)
		}
		out := make([]map[string]any, len(stats))
		for i, qs := range stats {
			o := qs.Options
			out[i] = map[string]any{"queue": qs.Name, "retentionEnabled": o.RetentionEnabled,
				"retentionSeconds": o.RetentionSeconds, "completedRetentionSeconds": o.CompletedRetentionSeconds,
				"maxWaitTimeSeconds": o.MaxWaitTimeSeconds, "stored": qs.Counts.Total, "evicted": qs.Evicted,
				// The rest of the queue's configuration, as its status shows it,
				// so a view of one queue needs no list of its partitions.
				"namespace": qs.Namespace, "task": qs.Task, "createdAt": fmtMilli(qs.CreatedAt), "priority": o.Priority,
				"config": map[string]any{"leaseTime": o.LeaseTime, "retryLimit": o.RetryLimit, "retryDelay": o.RetryDelay,
					"ttl": o.TTL, "maxQueueSize": o.MaxSize, "deadLetterQueue": o.DeadLetterQueue}}
			if age := statsAge(qs); age != nil {
				// A large queue's stored and evicted, from the background sum.
				out[i]["statsAge"] = *age
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"queues": out})
	case "postgres-stats":
		// The database is SQLite; these are its figures.
		d, err := s.b.DatabaseStats(ctx)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		file, wal, err := s.b.DatabaseSize()
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"database": "sqlite", "fileBytes": file, "walBytes": wal,
			"pageSize": d.PageSize, "pageCount": d.PageCount, "freelistCount": d.FreelistCount, "journalMode": d.JournalMode})
	default:
		s.fail(w, r, errNoRoute)
	}
}

func (s *Handler) statsRefresh(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	writeJSON(w, http.StatusOK, map[string]any{"success": true, "statsAge": 0,
		"message": "Statistics are computed on every request; nothing to refresh"})
}
