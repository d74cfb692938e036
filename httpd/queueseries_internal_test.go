package httpd

import (
	"bytes"
	"math"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// The queue series are written by hand where the registry wrote them: the
// text must be the registry's, byte for byte, whatever the label values
// (a consumer group may be named with quotes, backslashes or a newline)
// and the values.
func TestHandWrittenSeriesAreTheRegistrysText(t *testing.T) {
	type series struct {
		v      float64
		labels []string // name, value pairs, sorted by name
	}
	for _, c := range []struct {
		name, help, typ string
		series          []series
	}{
		{"comb_queue_depth", "Messages stored and not completed.", "gauge", []series{
			{0, []string{"queue", "a", "tenant", ""}},
			{1, []string{"queue", "b", "tenant", "t1"}},
			{-1, []string{"queue", "c", "tenant", "t1"}},
			{1e6, []string{"queue", "d", "tenant", "t2"}},
			{123456789012, []string{"queue", "é", "tenant", "t2"}},
		}},
		{"comb_consumer_group_lag", `Lag with a \ and a
newline in its help.`, "gauge", []series{
			{3, []string{"consumer_group", `say "hi"`, "queue", "q", "tenant", ""}},
			{4, []string{"consumer_group", `back\slash`, "queue", "q", "tenant", ""}},
			{5, []string{"consumer_group", "two\nlines", "queue", "q", "tenant", ""}},
		}},
		{"comb_queue_stats_age_seconds", "Age.", "gauge", []series{
			{0.25, []string{"queue", "q", "tenant", ""}},
			{math.NaN(), []string{"queue", "r", "tenant", ""}},
			{math.Inf(1), []string{"queue", "s", "tenant", ""}},
		}},
		{"comb_queue_messages_pushed_total", "Pushed.", "counter", []series{
			{7, []string{"queue", "q", "tenant", ""}},
		}},
		{"comb_scrape_errors", "Errors.", "gauge", []series{{2, nil}}},
	} {
		tf := textFamily{name: c.name, help: c.help, typ: c.typ, n: len(c.series), write: func(f *familyWriter) {
			for _, s := range c.series {
				f.sample(s.v, s.labels...)
			}
		}}
		mf := &dto.MetricFamily{}
		var names []string
		for i := 0; len(c.series) > 0 && i+1 < len(c.series[0].labels); i += 2 {
			names = append(names, c.series[0].labels[i])
		}
		desc := prometheus.NewDesc(c.name, c.help, names, nil)
		valueType := prometheus.GaugeValue
		if c.typ == "counter" {
			valueType = prometheus.CounterValue
		}
		for _, s := range c.series {
			var values []string
			for i := 1; i < len(s.labels); i += 2 {
				values = append(values, s.labels[i])
			}
			m := prometheus.MustNewConstMetric(desc, valueType, s.v, values...)
			var pb dto.Metric
			if err := m.Write(&pb); err != nil {
				t.Fatal(err)
			}
			mf.Metric = append(mf.Metric, &pb)
		}
		mf.Name, mf.Help = &c.name, &c.help
		if c.typ == "counter" {
			mf.Type = dto.MetricType_COUNTER.Enum()
		} else {
			mf.Type = dto.MetricType_GAUGE.Enum()
		}
		var want bytes.Buffer
		if _, err := expfmt.MetricFamilyToText(&want, mf); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		tf.writeTo(&got)
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("%s by hand:\n%s\nthe registry's text:\n%s", c.name, got.Bytes(), want.Bytes())
		}
	}
	var got bytes.Buffer
	empty := textFamily{name: "comb_empty", help: "None.", typ: "gauge", write: func(f *familyWriter) { t.Error("a family without series was written") }}
	if empty.writeTo(&got); got.Len() != 0 {
		t.Errorf("a family without series = %q, want it left out as the registry does", got.String())
	}
}
