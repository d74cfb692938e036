package cli

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	"github.com/comb-broker/comb/internal/combtest"
)

// runComb runs "comb args..." with COMB_URL pointing at srv and returns stdout.
func runComb(t *testing.T, srv *combtest.Server, env map[string]string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	m := &App{Stdout: &out, Stderr: &errOut, Getenv: func(k string) string {
		if k == "COMB_URL" {
			return srv.URL
		}
		return env[k]
	}}
	err := m.Run(context.Background(), args)
	return out.String(), err
}

func opPush(srv *combtest.Server, queue string, from, n int) {
	items := make([]map[string]any, n)
	for i := range items {
		items[i] = map[string]any{"queue": queue, "payload": map[string]any{"n": from + i}}
	}
	srv.Push(items...)
}

func opDrain(t *testing.T, srv *combtest.Server, queue, group string) int {
	t.Helper()
	n := 0
	for {
		p := srv.Pop("/api/v1/pop/queue/" + queue + "?batch=100&consumerGroup=" + group)
		if p.Status == http.StatusNoContent {
			return n
		}
		n += len(p.Messages)
		srv.Ack(p.Messages[len(p.Messages)-1], "completed", group)
	}
}
func TestOperatorCommandsSendTheToken(t *testing.T) {
	var got []string
	srv := combtest.MustServer(t, combtest.Options{})
	inner := srv.HTTP.Config.Handler
	srv.HTTP.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
		inner.ServeHTTP(w, r)
	})
	opPush(srv, "orders", 0, 1)
	env := map[string]string{"COMB_TOKEN": "tok-9"}
	if _, err := runComb(t, srv, env, "groups"); err != nil {
		t.Fatal(err)
	}
	if _, err := runComb(t, srv, env, "seek", "--group", "g", "--queue", "orders", "--to-end"); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[1] != "Bearer tok-9" || got[2] != "Bearer tok-9" {
		t.Fatalf("Authorization headers = %q", got)
	}
}
