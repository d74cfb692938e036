package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// apiClient calls a running comb server for the operator subcommands, so
// they work the same against a local file or a remote edge box.
type apiClient struct {
	url   *string
	token string
	http  *http.Client
}

// apiFlags adds --url to fs (env COMB_URL) and returns a client that reads it
// once parsed; the bearer token comes from COMB_TOKEN.
func (m *App) apiFlags(fs *flag.FlagSet) *apiClient {
	return &apiClient{
		url:   fs.String("url", m.env("COMB_URL", "http://127.0.0.1:6632"), "server URL, or unix:///path/to/socket for a server's --unix socket (env COMB_URL)"),
		token: m.Getenv("COMB_TOKEN"),
		http:  &http.Client{Timeout: time.Minute},
	}
}

// target is the base URL requests go to and the client that sends them:
// for a unix:// URL, a client that dials that socket whatever the host.
func (c *apiClient) target() (string, *http.Client) {
	sock, ok := strings.CutPrefix(*c.url, "unix://")
	if !ok {
		return strings.TrimRight(*c.url, "/"), c.http
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
		return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
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

// replyError turns a non-2xx reply into an error carrying the server's text.
func replyError(what string, status int, body []byte) error {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return fmt.Errorf("%s: %s (HTTP %d)", what, e.Error, status)
	}
	return fmt.Errorf("%s: HTTP %d", what, status)
}
