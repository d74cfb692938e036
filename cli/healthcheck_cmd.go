package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

const healthcheckLong = `Asks a running server's GET /health and exits 0 when it answers 200 (the
database answers, no request has met a damaged page of it, and its path
still names the file the server opened), 1 when it answers otherwise, 3
when it does not answer. Meant for container health checks and
monitoring scripts; it needs no token.`

// healthcheckCmd is "comb healthcheck".
func (m *App) healthcheckCmd() *cobra.Command {
	var urlV string
	var timeoutV time.Duration
	cmd := &cobra.Command{
		Use:   "healthcheck [--url URL] [--timeout 5s]",
		Short: "Exit 0 when a server's /health answers 200",
		Long:  healthcheckLong,
		Args:  cobra.NoArgs,
	}
	fs := cmd.Flags()
	fs.StringVar(&urlV, "url", "http://127.0.0.1:6632", "server to ask, or unix:///path/to/socket (env COMB_URL)")
	m.setting(fs, "url", "")
	fs.DurationVar(&timeoutV, "timeout", 5*time.Second, "give up after this long")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if timeoutV <= 0 {
			return usageErrorf("--timeout %v: want a positive duration", timeoutV)
		}
		m.running = true
		return m.healthcheck(cmd.Context(), urlV, timeoutV)
	}
	return cmd
}

func (m *App) healthcheck(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// A health check asks the server next to it, never through a proxy;
	// unix:///path asks a server's --unix socket.
	base, client := (&apiClient{url: url, http: &http.Client{Transport: &http.Transport{Proxy: nil}}}).target()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/health", nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return unreachable(fmt.Errorf("healthcheck: %w", err))
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
