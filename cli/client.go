package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// apiClient calls a running comb server for the operator subcommands, so
// they work the same against a local file or a remote edge box.
type apiClient struct {
	url    string
	token  string
	output string
	json   bool // the old --json, kept as a deprecated spelling of --output json
	http   *http.Client
	stderr io.Writer
}

// apiFlags adds the flags every operator command shares to cmd and its
// subcommands: --url, --token, --output (settings: COMB_URL, COMB_TOKEN,
// COMB_OUTPUT, or the config file).
func (m *App) apiFlags(cmd *cobra.Command) *apiClient {
	c := &apiClient{http: &http.Client{Timeout: time.Minute}, stderr: m.Stderr}
	fs := cmd.PersistentFlags()
	fs.StringVar(&c.url, "url", "http://127.0.0.1:6632", "server URL, or unix:///path/to/socket for a server's --unix socket (env COMB_URL)")
	m.setting(fs, "url", "")
	fs.StringVar(&c.token, "token", "", "bearer token sent to the server (env COMB_TOKEN, preferred: flags show in ps)")
	m.secret(fs, "token", "")
	fs.StringVar(&c.output, "output", "table", "output format: table (for people) or json (for scripts) (env COMB_OUTPUT)")
	m.setting(fs, "output", "")
	fs.BoolVar(&c.json, "json", false, "same as --output json")
	_ = fs.MarkHidden("json")
	return c
}

// asJSON reports whether the reply is to be printed as JSON, checking
// --output.
func (c *apiClient) asJSON() (bool, error) {
	switch c.output {
	case "json":
		return true, nil
	case "table", "":
		if c.json {
			fmt.Fprintln(c.stderr, "comb: warning: --json is deprecated: use --output json")
		}
		return c.json, nil
	}
	return false, usageErrorf("--output %q: want table or json", c.output)
}

// printJSON writes a server's JSON reply, or v encoded, as one line.
func printJSON(w io.Writer, v any) error {
	if raw, ok := v.([]byte); ok {
		_, err := fmt.Fprintf(w, "%s\n", bytes.TrimSpace(raw))
		return err
	}
	return json.NewEncoder(w).Encode(v)
}

// target is the base URL requests go to and the client that sends them:
// for a unix:// URL, a client that dials that socket whatever the host.
func (c *apiClient) target() (string, *http.Client) {
	sock, ok := strings.CutPrefix(c.url, "unix://")
	if !ok {
		return strings.TrimRight(c.url, "/"), c.http
	}
	hc := *c.http
	var d net.Dialer
	hc.Transport = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return d.DialContext(ctx, "unix", sock)
	}}
	// The host is a placeholder: the server checks Host only on TCP.
	return "http://localhost", &hc
}

// maxReply bounds what a subcommand reads of a reply.
const maxReply = 256 << 20

// call sends a JSON request and returns the reply's status and body,
// whatever the status.
func (c *apiClient) call(ctx context.Context, method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	base, hc := c.target()
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return 0, nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, unreachable(fmt.Errorf("%s %s: %w", method, path, err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxReply))
	if err != nil {
		return 0, nil, fmt.Errorf("read reply: %w", err)
	}
	return resp.StatusCode, data, nil
}

// do is call for requests where only a 2xx reply is useful: any other
// reply becomes an error carrying the server's error text.
func (c *apiClient) do(ctx context.Context, method, path string, body any) ([]byte, error) {
	status, data, err := c.call(ctx, method, path, body)
	if err != nil {
		return nil, err
	}
	if status/100 != 2 {
		return nil, replyError(method+" "+path, status, data)
	}
	return data, nil
}

// replyError turns a non-2xx reply into an error carrying the server's
// text: exit 3 when the token was missing or refused, else 1.
func replyError(what string, status int, body []byte) error {
	var e struct {
		Error string `json:"error"`
	}
	err := fmt.Errorf("%s: HTTP %d", what, status)
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		err = fmt.Errorf("%s: %s (HTTP %d)", what, e.Error, status)
	}
	if status == http.StatusUnauthorized || status == http.StatusForbidden {
		return unreachable(err)
	}
	return err
}
