package httpd

import (
	"bytes"
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/combtype"
)

// The per-queue and per-group series, and the figures whose reads can
// fail, are written here in the text exposition format, straight from the
// broker's figures. At 10,000 queues a scrape has 60,000 such series, and
// made into client_golang metrics (a protobuf message, its label pairs,
// a sort, then the text) they cost most of the scrape's time and nearly
// all of its garbage. The output is what the registry wrote for them:
// families and series in the same order, labels sorted by name, values
// formatted alike.

// textFamily is one family, written when the scrape's text reaches its
// name: the figures are read first, and each series goes straight into
// the answer.
type textFamily struct {
	name, help, typ string
	n               int                   // its series; a family of none is left out, as the registry does
	write           func(f *familyWriter) // writes the n series
}

var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

// writeTo writes the family's HELP and TYPE lines and its series.
func (t *textFamily) writeTo(buf *bytes.Buffer) {
	if t.n == 0 {
		return
	}
	buf.WriteString("# HELP " + t.name + " " + helpEscaper.Replace(t.help) + "\n# TYPE " + t.name + " " + t.typ + "\n")
	t.write(&familyWriter{buf: buf, name: t.name})
}

// familyWriter writes one family's series.
type familyWriter struct {
	buf  *bytes.Buffer
	name string
}

// sample writes one series; labels are name, value pairs sorted by name.
func (f *familyWriter) sample(v float64, labels ...string) {
	f.buf.WriteString(f.name)
	for i := 0; i+1 < len(labels); i += 2 {
		if i == 0 {
			f.buf.WriteByte('{')
		} else {
			f.buf.WriteByte(',')
		}
		f.buf.WriteString(labels[i])
		f.buf.WriteString(`="`)
		labelEscaper.WriteString(f.buf, labels[i+1])
		f.buf.WriteByte('"')
	}
	if len(labels) > 0 {
		f.buf.WriteByte('}')
	}
	f.buf.WriteByte(' ')
	f.buf.Write(strconv.AppendFloat(f.buf.AvailableBuffer(), v, 'g', -1, 64))
	f.buf.WriteByte('\n')
}

// gaugeOf is a family of one unlabelled gauge.
func gaugeOf(name, help string, v float64) textFamily {
	return textFamily{name: name, help: help, typ: "gauge", n: 1, write: func(f *familyWriter) { f.sample(v) }}
}

// directFamilies reads what is written without the registry: the queue
// and group series of the tenants visible says the scrape may see, the
// database's size, and the number of those reads that failed. They come
// sorted by name.
func (s *Handler) directFamilies(ctx context.Context, visible func(tenant string) bool, anyTenant bool) []textFamily {
	var out []textFamily
	errs := 0
	if anyTenant {
		out = s.queueFamilies(ctx, visible, &errs)
	}
	if file, wal, err := s.b.DatabaseSize(); err != nil {
		s.log.Warn("metrics: database size", "err", err)
		errs++
	} else {
		out = append(out, gaugeOf("comb_database_size_bytes", "Database file plus write-ahead log, in bytes.", float64(file+wal)),
			gaugeOf("comb_database_wal_size_bytes", "Write-ahead log, in bytes.", float64(wal)))
	}
	out = append(out, gaugeOf("comb_scrape_errors", "Store reads that failed during this scrape.", float64(errs)))
	slices.SortFunc(out, func(a, b textFamily) int { return strings.Compare(a.name, b.name) })
	return out
}

// queueFamilies is the queues' counters and depths and the groups' lag.
func (s *Handler) queueFamilies(ctx context.Context, visible func(tenant string) bool, errs *int) []textFamily {
	// Series sort by their label values in label-name order: queue, then
	// tenant (and consumer_group first for the lag).
	byQueue := func(aq, at, bq, bt string) int { return cmp.Or(strings.Compare(aq, bq), strings.Compare(at, bt)) }
	var out []textFamily

	counters := s.b.Metrics().Queues()
	keys := make([]broker.QueueKey, 0, len(counters))
	for k := range counters {
		if visible(k.Tenant) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b broker.QueueKey) int { return byQueue(a.Queue, a.Tenant, b.Queue, b.Tenant) })
	// A scrape writes the series of the first MetricsQueues queues, in
	// that order, and as many group lags: the same ones from scrape to
	// scrape, so no series comes and goes as depths change.
	bound := s.cfg.MetricsQueues
	omittedQueues := max(len(keys)-bound, 0)
	keys = keys[:min(len(keys), bound)]
	counter := func(name, help string, v func(q *broker.QueueCounters) int64) textFamily {
		return textFamily{name: name, help: help, typ: "counter", n: len(keys), write: func(f *familyWriter) {
			for _, k := range keys {
				f.sample(float64(v(counters[k])), "queue", k.Queue, "tenant", k.Tenant)
			}
		}}
	}
	out = append(out,
		counter("comb_queue_messages_pushed_total", "Messages appended to the queue's log (duplicates excluded).",
			func(q *broker.QueueCounters) int64 { return q.Pushed.Load() }),
		counter("comb_queue_messages_popped_total", "Messages of the queue delivered by pops.",
			func(q *broker.QueueCounters) int64 { return q.Popped.Load() }),
		counter("comb_queue_messages_acked_total", "Messages of the queue completed by acks (autoAck pops included).",
			func(q *broker.QueueCounters) int64 { return q.Acked.Load() }),
		counter("comb_queue_messages_dead_lettered_total", "Messages of the queue dead-lettered.",
			func(q *broker.QueueCounters) int64 { return q.DeadLettered.Load() }))

	omitted := func(queues, lags int) []textFamily {
		return []textFamily{
			gaugeOf("comb_queue_series_omitted", "Queues this scrape wrote no per-queue series for: past the first serve --metrics-queues, by name.", float64(queues)),
			gaugeOf("comb_consumer_group_lag_omitted", "Group lags this scrape left out: past the first serve --metrics-queues, by group and queue name.", float64(lags))}
	}

	depths, rest, err := s.b.FirstQueueDepths(ctx, bound)
	if err != nil {
		s.log.Warn("metrics: queue depths", "err", err)
		*errs++
		return append(out, omitted(omittedQueues, 0)...)
	}
	depths = slices.DeleteFunc(depths, func(d combtype.QueueDepth) bool { return !visible(d.Tenant) })
	slices.SortFunc(depths, func(a, b combtype.QueueDepth) int { return byQueue(a.Queue, a.Tenant, b.Queue, b.Tenant) })
	omittedQueues = max(omittedQueues, rest)
	type lag struct {
		group string
		d     *combtype.QueueDepth
	}
	var lags []lag
	summarized := 0
	for i := range depths {
		d := &depths[i]
		if d.Summarized {
			summarized++
		}
		for g := range d.GroupLag {
			lags = append(lags, lag{g, d})
		}
	}
	slices.SortFunc(lags, func(a, b lag) int {
		return cmp.Or(strings.Compare(a.group, b.group), byQueue(a.d.Queue, a.d.Tenant, b.d.Queue, b.d.Tenant))
	})
	omittedLags := max(len(lags)-bound, 0)
	lags = lags[:min(len(lags), bound)]
	out = append(out, omitted(omittedQueues, omittedLags)...)
	gauge := func(name, help string, n int, each func(f *familyWriter, d *combtype.QueueDepth)) textFamily {
		return textFamily{name: name, help: help, typ: "gauge", n: n, write: func(f *familyWriter) {
			for i := range depths {
				each(f, &depths[i])
			}
		}}
	}
	return append(out,
		gauge("comb_queue_depth", "Messages stored and not completed by the queue-mode cursor, else by the least advanced group.",
			len(depths), func(f *familyWriter, d *combtype.QueueDepth) {
				f.sample(float64(d.Depth), "queue", d.Queue, "tenant", d.Tenant)
			}),
		gauge("comb_queue_stored_messages", "Messages stored (last_offset - log_start + 1, summed over partitions).",
			len(depths), func(f *familyWriter, d *combtype.QueueDepth) {
				f.sample(float64(d.Stored), "queue", d.Queue, "tenant", d.Tenant)
			}),
		gauge("comb_queue_stats_age_seconds",
			"Age of the background sum the queue's depth, stored and group lag series come from; only for queues too large to sum on every scrape.",
			summarized, func(f *familyWriter, d *combtype.QueueDepth) {
				if d.Summarized {
					f.sample(d.StatsAge.Seconds(), "queue", d.Queue, "tenant", d.Tenant)
				}
			}),
		textFamily{name: "comb_consumer_group_lag", help: "Messages a consumer group has not completed, summed over partitions.",
			typ: "gauge", n: len(lags), write: func(f *familyWriter) {
				for _, l := range lags {
					f.sample(float64(l.d.GroupLag[l.group]), "consumer_group", l.group, "queue", l.d.Queue, "tenant", l.d.Tenant)
				}
			}})
}
