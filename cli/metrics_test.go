package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/internal/combtest"
)

// TestPromtoolChecksTheMetrics runs comb serve with a queue, a consumer
// group and a forwarder, so every family has series, and has Prometheus's
// own linter check what /metrics/prometheus answers.
func TestPromtoolChecksTheMetrics(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool not found; CI installs Debian's prometheus package for it")
		}
		t.Skip("promtool not found (Debian package prometheus)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	var logs combtest.Logs
	m := &App{Stdout: io.Discard, Stderr: &logs, Getenv: func(string) string { return "" }, Ready: func(a string) { ready <- a }}
	done := make(chan error, 1)
	go func() {
		done <- m.Run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "comb.db"),
			"--forward", "name=up,queue=orders,upstream=http://" + crashFreeAddr(t)})
	}()
	var base string
	select {
	case a := <-ready:
		base = "http://" + a
	case err := <-done:
		t.Fatalf("serve: %v\n%s", err, logs.String())
	}
	defer func() {
		cancel()
		<-done
	}()
	post := func(path, body string) {
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	post("/api/v1/push", `{"items":[{"queue":"orders","payload":{"n":1}},{"queue":"orders","payload":{"n":2}}]}`)
	if resp, err := http.Get(base + "/api/v1/pop/queue/orders?consumerGroup=billing&batch=1"); err == nil {
		resp.Body.Close()
	}
	time.Sleep(100 * time.Millisecond) // let the forwarder fail once against nothing

	resp, err := http.Get(base + "/metrics/prometheus")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"comb_queue_messages_pushed_total{", "comb_consumer_group_lag{", "comb_forwarder_up{", "go_goroutines", "process_start_time_seconds"} {
		if !bytes.Contains(body, []byte(want)) {
			t.Fatalf("scrape lacks %s:\n%s", want, body)
		}
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}
