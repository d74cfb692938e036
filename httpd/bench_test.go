package httpd_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/comb-broker/comb/broker"
	"github.com/comb-broker/comb/internal/combtest"
)

// BenchmarkPushHTTP measures push over loopback HTTP with 50 concurrent
// producers; MaxBatchOps=1 is the one-commit-per-push baseline of the same run.
func BenchmarkPushHTTP(b *testing.B) {
	for _, c := range []struct {
		name          string
		batch, maxOps int
	}{
		{"batch=1/no-group-commit", 1, 1},
		{"batch=1", 1, 0},
		{"batch=10", 10, 0},
		{"batch=100", 100, 0},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := combtest.MustServer(b, combtest.Options{Broker: func(o *broker.Options) { o.MaxBatchOps = c.maxOps }})
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			var seq atomic.Int64
			pad := strings.Repeat("x", 80)
			b.SetParallelism(max(1, 50/runtime.GOMAXPROCS(0)))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				var body bytes.Buffer
				for pb.Next() {
					body.Reset()
					body.WriteString(`{"items":[`)
					for i := range c.batch {
						if i > 0 {
							body.WriteByte(',')
						}
						fmt.Fprintf(&body, `{"queue":"bench","payload":{"i":%d,"pad":%q},"transactionId":"t-%d"}`, i, pad, seq.Add(1))
					}
					body.WriteString(`]}`)
					resp, err := client.Post(s.URL+"/api/v1/push", "application/json", &body)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusCreated {
						b.Errorf("push: %d", resp.StatusCode)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N*c.batch)/b.Elapsed().Seconds(), "msg/s")
			st := s.Broker.EngineStats()
			b.ReportMetric(float64(st.CommitOps)/float64(max(1, st.Commits)), "ops/commit")
			b.ReportMetric(float64(st.CommitMicros)/float64(max(1, st.Commits)), "µs/commit")
		})
	}
}

// BenchmarkScrapeTenThousandQueues scrapes /metrics/prometheus of a server
// whose 10,000 queues were each pushed to once since it started: six
// series a queue, 60,000 in all.
func BenchmarkScrapeTenThousandQueues(b *testing.B) {
	s := combtest.MustServer(b, combtest.Options{})
	for i := 0; i < 10000; i += 1000 {
		var body bytes.Buffer
		body.WriteString(`{"items":[`)
		for j := i; j < i+1000; j++ {
			if j > i {
				body.WriteByte(',')
			}
			fmt.Fprintf(&body, `{"queue":"q%05d","payload":1}`, j)
		}
		body.WriteString(`]}`)
		resp, err := s.HTTP.Client().Post(s.URL+"/api/v1/push", "application/json", &body)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			b.Fatalf("push: %d", resp.StatusCode)
		}
	}
	b.ResetTimer()
	var size int64
	for range b.N {
		resp, err := s.HTTP.Client().Get(s.URL + "/metrics/prometheus")
		if err != nil {
			b.Fatal(err)
		}
		size, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("scrape: %d", resp.StatusCode)
		}
	}
	b.ReportMetric(float64(size), "bytes/scrape")
}
