package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/comb-broker/comb/internal/combtest"
)

// serveInProcess runs "comb serve args..." until the returned stop is
// called, and returns its base URL.
func serveInProcess(t *testing.T, args ...string) (string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	var stderr bytes.Buffer
	m := &App{Stdout: &bytes.Buffer{}, Stderr: &stderr, Getenv: func(k string) string {
		if k == "UP_TOKEN" {
			return "from-env"
		}
		return ""
	}, Ready: func(addr string) { ready <- addr }}
	go func() { done <- m.Run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)) }()
	select {
	case addr := <-ready:
		return "http://" + addr, func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
		}
	case err := <-done:
		cancel()
		t.Fatalf("serve %v: %v\n%s", args, err, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not start")
	}
	return "", nil
}

func TestServeDeclaresForwardersFromFlagsAndAConfigFileAndTheCommandManagesThem(t *testing.T) {
	up := combtest.MustServer(t, combtest.Options{})
	dir := t.TempDir()
	db := filepath.Join(dir, "device.db")
	cfg := filepath.Join(dir, "forwarders.json")
	if err := os.WriteFile(cfg, []byte(`[{"name":"cmds","direction":"pull","queue":"commands","upstream":"`+up.URL+
		`","token":"$UP_TOKEN"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	base, stop := serveInProcess(t, "--db", db, "--forward", "name=tel,queue=telemetry,batch=50,upstream="+up.URL,
		"--forward-config", cfg)
	cli := &combtest.Server{Client: &combtest.Client{TB: t, URL: base}}
	cli.Client.HTTP = up.HTTP.Client()
	cli.Push(map[string]any{"queue": "telemetry", "transactionId": "t1", "payload": 1})
	up.Push(map[string]any{"queue": "commands", "transactionId": "c1", "payload": 2})
	combtest.CheckFor(t, 10*time.Second, func() error {
		out, err := runComb(t, cli, nil, "forward", "list")
		if err != nil {
			return err
		}
		if !strings.Contains(out, "tel   push") || !strings.Contains(out, "cmds  pull") ||
			strings.Count(out, "running") != 2 || strings.Count(out, "  1  ") < 2 {
			return &cmdOutput{out}
		}
		return nil
	})
	if p := cli.Pop("/api/v1/pop/queue/commands?batch=10"); len(p.Messages) != 1 || p.Messages[0].TransactionID != "c1" {
		t.Errorf("pulled commands: %+v", p)
	}
	out, err := runComb(t, cli, nil, "forward", "pause", "tel")
	if err != nil || !strings.Contains(out, "paused") {
		t.Errorf("forward pause: %v\n%s", err, out)
	}
	out, err = runComb(t, cli, nil, "forward", "show", "cmds", "--json")
	if err != nil || !strings.Contains(out, `"hasToken":true`) || strings.Contains(out, "from-env") {
		t.Errorf("forward show --json: %v\n%s", err, out)
	}
	stop()

	// Restarted without the flags: the definitions and the pause stay.
	base, stop = serveInProcess(t, "--db", db)
	defer stop()
	cli.Client.URL = base
	out, err = runComb(t, cli, nil, "forward", "list")
	if err != nil || !strings.Contains(out, "paused") || !strings.Contains(out, "cmds") {
		t.Errorf("after a restart: %v\n%s", err, out)
	}
	if _, err := runComb(t, cli, nil, "forward", "create", "--name", "x", "--queue", "q", "--upstream", "ftp://h"); err == nil ||
		!strings.Contains(err.Error(), "upstream must be an http") {
		t.Errorf("create with a bad upstream: %v", err)
	}
	out, err = runComb(t, cli, nil, "forward", "create", "--name", "x", "--queue", "q", "--upstream", up.URL)
	if err != nil || !strings.Contains(out, "x     push") {
		t.Errorf("forward create: %v\n%s", err, out)
	}
	if out, err := runComb(t, cli, nil, "forward", "delete", "x", "--output", "json"); err != nil || !strings.Contains(out, `"deleted":true`) {
		t.Errorf("forward delete: %v\n%s", err, out)
	}
	if _, err := runComb(t, cli, nil, "forward", "show", "x"); err == nil || !strings.Contains(err.Error(), "Forwarder not found") {
		t.Errorf("show after delete: %v", err)
	}
}

func TestServeRefusesABadForwardFlagBeforeOpeningTheDatabase(t *testing.T) {
	db := filepath.Join(t.TempDir(), "comb.db")
	for _, spec := range []string{"name=a,queue", "name=a,colour=red", "name=a,batch=many"} {
		m := &App{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}, Getenv: func(string) string { return "" }}
		err := m.Run(context.Background(), []string{"serve", "--addr", "127.0.0.1:0", "--db", db, "--forward", spec})
		if err == nil || !strings.Contains(err.Error(), spec) {
			t.Errorf("--forward %q: %v", spec, err)
		}
	}
	// Flags that parse into a definition no upstream could take are
	// refused by the same rules as the route, before the file too.
	long := strings.Repeat("n", 250)
	for spec, want := range map[string]string{
		"name=a,queue=q,upstream=ftp://h":                                     `forwarder "a": invalid request: upstream must be an http:// or https:// base URL`,
		"name=" + long + ",queue=q,upstream=http://h":                         "its consumer group comb-forward.<name> would pass 255",
		"name=a,queue=q,upstream=http://h,token=" + strings.Repeat("t", 4097): `forwarder "a": invalid request: token must be at most 4096 bytes`,
	} {
		m := &App{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}, Getenv: func(string) string { return "" }}
		err := m.Run(context.Background(), []string{"serve", "--addr", "127.0.0.1:0", "--db", db, "--forward", spec})
		if err == nil || !strings.Contains(err.Error(), want) || ExitCode(err) != 2 {
			t.Errorf("--forward %.60q: %v (exit %d), want %q and exit 2", spec, err, ExitCode(err), want)
		}
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("a refused start left a database: %v", err)
	}
}

type cmdOutput struct{ out string }

func (c *cmdOutput) Error() string { return c.out }
