package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

const healthcheckUsage = `Usage:
  comb healthcheck [--url URL] [--timeout 5s]

Asks a running server's GET /health and exits 0 when it answers 200 (the
database answers), 1 otherwise. Meant for container health checks and
monitoring scripts; it needs no token. --url defaults to $COMB_URL, else
http://127.0.0.1:6632.
`

// healthcheck runs "comb healthcheck".
func (m *App) healthcheck(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() { fmt.Fprint(m.Stderr, healthcheckUsage, "\nFlags of comb healthcheck:\n"); fs.PrintDefaults() }
	url := fs.String("url", m.env("COMB_URL", "http://127.0.0.1:6632"), "server to ask (env COMB_URL)")
	timeout := fs.Duration("timeout", 5*time.Second, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("healthcheck: unexpected argument %q", fs.Arg(0))
	}
	if *timeout <= 0 {
		return fmt.Errorf("healthcheck: --timeout %v: want a positive duration", *timeout)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(*url, "/")+"/health", nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	// A health check asks the server next to it, never through a proxy.
	client := &http.Client{Transport: &http.Transport{Proxy: nil}}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s answered %s: %s", req.URL, resp.Status, strings.TrimSpace(string(body)))
	}
	if len(body) == 0 {
		return errors.New("healthcheck: empty answer")
	}
	fmt.Fprintf(m.Stdout, "%s\n", strings.TrimSpace(string(body)))
	return nil
}
