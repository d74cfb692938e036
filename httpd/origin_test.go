package httpd_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/authtest"
	"github.com/comb-broker/comb/internal/combtest"
)

// reply is one answer of the server to a hand-made request.
type reply struct {
	status int
	header http.Header
	body   string
}

// send makes one request to srv with the given Host and Origin (either may
// be empty for the defaults: the server's address, no Origin) and extra
// headers as a browser would send them.
func send(t *testing.T, srv *combtest.Server, method, path, host, origin string, extra http.Header) reply {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	for k, v := range extra {
		req.Header[k] = v
	}
	resp, err := srv.HTTP.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, string(b)}
}

// refused checks r is a 403 with a JSON error naming what, and no CORS grant.
func refused(t *testing.T, what string, r reply, names string) {
	t.Helper()
	var body struct{ Error string }
	if r.status != http.StatusForbidden || json.Unmarshal([]byte(r.body), &body) != nil || !strings.Contains(body.Error, names) {
		t.Errorf("%s: %d %s, want 403 with a JSON error naming %s", what, r.status, r.body, names)
	}
	if got := r.header.Get("Access-Control-Allow-Origin"); got != "" {
		t.Errorf("%s: refused with Access-Control-Allow-Origin %q", what, got)
	}
}

func hostPort(srv *combtest.Server) string { return strings.TrimPrefix(srv.URL, "http://") }

func port(srv *combtest.Server) string {
	return hostPort(srv)[strings.LastIndexByte(hostPort(srv), ':'):]
}

// mustQueue configures queue q and returns a check that it still exists.
func mustQueue(t *testing.T, srv *combtest.Server, q string) func(when string) {
	t.Helper()
	if r := srv.Do("POST", "/api/v1/configure", map[string]any{"queue": q}); r.Status != http.StatusOK {
		t.Fatalf("configure: %d %s", r.Status, r.Body)
	}
	srv.Push(map[string]any{"queue": q, "payload": map[string]any{"secret": 1}})
	return func(when string) {
		t.Helper()
		if r := srv.Do("GET", "/api/v1/resources/queues/"+q, nil); r.Status != http.StatusOK {
			t.Errorf("queue %s is gone %s: %d %s", q, when, r.Status, r.Body)
		}
	}
}

// Every kind of request a page can make, on a route that exists, one that
// deletes, one that does not exist, and the preflight.
var pageRequests = []struct{ method, path string }{
	{"GET", "/api/v1/messages?queue=vault"},
	{"GET", "/api/v1/pop/queue/vault"},
	{"POST", "/api/v1/push"},
	{"DELETE", "/api/v1/resources/queues/vault"},
	{"GET", "/no/such/route"},
	{"OPTIONS", "/api/v1/resources/queues/vault"},
	{"GET", "/health"},
}

func TestWithoutAuthAForeignOriginIsRefusedOnEveryRoute(t *testing.T) {
	srv := combtest.MustServer(t, combtest.Options{})
	exists := mustQueue(t, srv, "vault")
	preflight := http.Header{"Access-Control-Request-Method": {"DELETE"}, "Access-Control-Request-Headers": {"content-type"}}
	// Another port is another origin; so is the same host named otherwise.
	for _, origin := range []string{"http://127.0.0.1:1" + port(srv), "https://evil.example", "http://localhost" + port(srv), "null", "http://127.0.0.1"} {
		for _, pr := range pageRequests {
			refused(t, pr.method+" "+pr.path+" from "+origin, send(t, srv, pr.method, pr.path, "", origin, preflight), "Origin")
		}
	}
	exists("after foreign pages tried to delete it")
}

func TestWithoutAuthTheServersOwnOriginAndListedOriginsAreServed(t *testing.T) {
	const console = "http://127.0.0.1:5173"
	srv := combtest.MustServer(t, combtest.Options{HTTP: func(c *httpd.Config) { c.CORSOrigins = []string{console, "https://Ops.Example.COM:443"} }})
	exists := mustQueue(t, srv, "vault")
	for _, tc := range []struct{ host, origin string }{
		{"", "http://" + hostPort(srv)},                           // the console served at /
		{"localhost" + port(srv), "http://localhost" + port(srv)}, // same, opened as localhost
		{"", console},                   // listed
		{"", "https://ops.example.com"}, // listed, default port and case normalised
	} {
		r := send(t, srv, "GET", "/api/v1/messages?queue=vault", tc.host, tc.origin, nil)
		if r.status != http.StatusOK || r.header.Get("Access-Control-Allow-Origin") != tc.origin || !strings.Contains(r.header.Get("Vary"), "Origin") {
			t.Errorf("GET from %s (Host %q): %d, Allow-Origin %q, Vary %q", tc.origin, tc.host, r.status,
				r.header.Get("Access-Control-Allow-Origin"), r.header.Get("Vary"))
		}
		p := send(t, srv, "OPTIONS", "/api/v1/resources/queues/vault", tc.host, tc.origin,
			http.Header{"Access-Control-Request-Method": {"DELETE"}, "Access-Control-Request-Private-Network": {"true"}})
		if p.status != http.StatusNoContent || p.body != "" || !strings.Contains(p.header.Get("Access-Control-Allow-Methods"), "DELETE") ||
			p.header.Get("Access-Control-Allow-Private-Network") != "true" {
			t.Errorf("preflight from %s: %d %q %v", tc.origin, p.status, p.body, p.header)
		}
	}
	exists("after reads")
	// A listed origin may delete: the grant is real, not only for reads.
	if r := send(t, srv, "DELETE", "/api/v1/resources/queues/vault", "", console, nil); r.status != http.StatusOK {
		t.Errorf("DELETE from the listed origin: %d %s", r.status, r.body)
	}
	// Without Origin (SDKs, curl), no grant is made and nothing is refused.
	r := send(t, srv, "GET", "/health", "", "", nil)
	if r.status != http.StatusOK || r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("GET /health without Origin: %d, Allow-Origin %q", r.status, r.header.Get("Access-Control-Allow-Origin"))
	}
}

// TestWithoutAuthOnLoopbackAForeignHostIsRefused is DNS rebinding: a page
// of evil.example whose name now resolves to 127.0.0.1 is same-origin with
// itself and sends no foreign Origin; only its Host gives it away.
func TestWithoutAuthOnLoopbackAForeignHostIsRefused(t *testing.T) {
	srv := combtest.MustServer(t, combtest.Options{})
	exists := mustQueue(t, srv, "vault")
	for _, host := range []string{"evil.example:6632", "evil.example", "127.0.0.1.nip.io" + port(srv), "localhost.evil.example" + port(srv), "10.0.0.1" + port(srv)} {
		for _, pr := range pageRequests {
			refused(t, pr.method+" "+pr.path+" with Host "+host, send(t, srv, pr.method, pr.path, host, "", nil), "Host")
			refused(t, pr.method+" "+pr.path+" with Host and Origin "+host, send(t, srv, pr.method, pr.path, host, "http://"+host, nil), "Host")
		}
	}
	exists("after rebinding pages tried to delete it")
	// HTTP/1.0 may leave Host out, which no browser does.
	conn, err := net.Dial("tcp", hostPort(srv))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "GET /health HTTP/1.0\r\n\r\n")
	if resp, err := http.ReadResponse(bufio.NewReader(conn), nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("HTTP/1.0 without Host: %v %v", resp, err)
	}
	for _, host := range []string{"localhost" + port(srv), "LOCALHOST" + port(srv), "127.0.0.1" + port(srv), "[::1]" + port(srv),
		"127.0.0.2" + port(srv), "localhost", "comb.localhost" + port(srv)} {
		if r := send(t, srv, "GET", "/api/v1/messages?queue=vault", host, "", nil); r.status != http.StatusOK {
			t.Errorf("GET with Host %s: %d %s", host, r.status, r.body)
		}
	}
}

func TestAllowedHostsAreServedOnLoopback(t *testing.T) {
	srv := combtest.MustServer(t, combtest.Options{HTTP: func(c *httpd.Config) { c.AllowedHosts = []string{"Comb.Internal"} }})
	if r := send(t, srv, "GET", "/health", "comb.internal:6632", "", nil); r.status != http.StatusOK {
		t.Errorf("allowed host: %d %s", r.status, r.body)
	}
	// Its own pages may call it too, once the name is trusted.
	if r := send(t, srv, "POST", "/api/v1/push", "comb.internal:6632", "http://comb.internal:6632", nil); r.status != http.StatusBadRequest {
		t.Errorf("push from the allowed host's own page: %d %s, want the push's own 400 for an empty body", r.status, r.body)
	}
	refused(t, "another host", send(t, srv, "GET", "/health", "evil.example", "", nil), "Host")
}

func TestWithAuthEveryOriginAndHostIsGrantedButTheTokenIsRequired(t *testing.T) {
	keys := authtest.NewKeys(t)
	srv := mustAuthServer(t, httpd.AuthConfig{Secret: keys.Secret})
	exists := mustQueueAs(t, srv, keys)
	// Queen's dashboard and browser SDKs: "*" on every reply, with Origin or not.
	for _, origin := range []string{"", "https://dashboard.example"} {
		r := send(t, srv, "DELETE", "/api/v1/resources/queues/vault", "", origin, nil)
		if r.status != http.StatusUnauthorized || r.header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("DELETE without a token from %q: %d, Allow-Origin %q", origin, r.status, r.header.Get("Access-Control-Allow-Origin"))
		}
		p := send(t, srv, "OPTIONS", "/api/v1/push", "", origin, http.Header{"Access-Control-Request-Method": {"POST"}})
		if p.status != http.StatusNoContent || p.header.Get("Access-Control-Allow-Headers") != "Content-Type, Authorization" {
			t.Errorf("preflight from %q: %d %v", origin, p.status, p.header)
		}
	}
	// A rebound name reaches nothing without a token, so Host is not checked.
	if r := send(t, srv, "GET", "/health", "comb.example.com", "", nil); r.status != http.StatusOK {
		t.Errorf("GET /health with a public Host: %d", r.status)
	}
	exists("after unauthenticated deletes")
}

func TestWithAuthListedOriginsNarrowTheGrant(t *testing.T) {
	keys := authtest.NewKeys(t)
	a, err := httpd.NewAuthenticator(httpd.AuthConfig{Secret: keys.Secret})
	if err != nil {
		t.Fatal(err)
	}
	srv := combtest.MustServer(t, combtest.Options{HTTP: func(c *httpd.Config) {
		c.Auth, c.CORSOrigins = a, []string{"https://dashboard.example"}
	}})
	if r := send(t, srv, "GET", "/health", "", "https://dashboard.example", nil); r.status != http.StatusOK ||
		r.header.Get("Access-Control-Allow-Origin") != "https://dashboard.example" {
		t.Errorf("listed origin: %d, Allow-Origin %q", r.status, r.header.Get("Access-Control-Allow-Origin"))
	}
	refused(t, "unlisted origin", send(t, srv, "GET", "/health", "", "https://other.example", nil), "Origin")
	if r := send(t, srv, "GET", "/health", "", "http://"+hostPort(srv), nil); r.status != http.StatusOK {
		t.Errorf("own origin: %d %s", r.status, r.body)
	}
}

// mustQueueAs creates queue "vault" with an admin token and returns a check
// that it still exists.
func mustQueueAs(t *testing.T, srv *combtest.Server, keys *authtest.Keys) func(string) {
	t.Helper()
	admin := as(srv, authtest.Bearer(keys.HS256(t, authtest.Claims("root", "admin", ""))))
	if r := admin.Do("POST", "/api/v1/configure", map[string]any{"queue": "vault"}); r.Status != http.StatusOK {
		t.Fatalf("configure: %d %s", r.Status, r.Body)
	}
	return func(when string) {
		t.Helper()
		if r := admin.Do("GET", "/api/v1/resources/queues/vault", nil); r.Status != http.StatusOK {
			t.Errorf("queue vault is gone %s: %d %s", when, r.Status, r.Body)
		}
	}
}

func TestCheckCORSOriginsAndAllowedHosts(t *testing.T) {
	for _, tc := range []struct {
		origins []string
		auth    bool
		ok      bool
	}{
		{[]string{"http://127.0.0.1:5173", "https://ops.example.com"}, false, true},
		{[]string{"*"}, true, true},
		{[]string{"*"}, false, false},
		{[]string{"null"}, false, false},
		{[]string{"ops.example.com"}, false, false},
		{[]string{"https://ops.example.com/app"}, false, false},
		{[]string{"ftp://ops.example.com"}, true, false},
	} {
		if err := httpd.CheckCORSOrigins(tc.origins, tc.auth); (err == nil) != tc.ok {
			t.Errorf("CheckCORSOrigins(%q, auth %v) = %v, want ok %v", tc.origins, tc.auth, err, tc.ok)
		}
	}
	for _, tc := range []struct {
		hosts []string
		ok    bool
	}{
		{[]string{"comb.internal", "10.0.0.5", "::1", "[fd00::1]"}, true},
		{[]string{"comb.internal:6632"}, false},
		{[]string{"http://comb.internal"}, false},
		{[]string{""}, false},
	} {
		if err := httpd.CheckAllowedHosts(tc.hosts); (err == nil) != tc.ok {
			t.Errorf("CheckAllowedHosts(%q) = %v, want ok %v", tc.hosts, err, tc.ok)
		}
	}
}

// BenchmarkOriginCheck measures the check on a 404, where routing does no
// other work: "none" skips it (no Origin, no local address, as for an
// embedding program's own server), the others pay for the Host check and
// an Origin parsed and looked up.
func BenchmarkOriginCheck(b *testing.B) {
	br := combtest.MustOpenBroker(b, combtest.Options{})
	h := httpd.NewHandler(br, httpd.Config{CORSOrigins: []string{"http://127.0.0.1:5173"}})
	loopback := context.WithValue(context.Background(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 6632})
	for _, c := range []struct {
		name, origin string
		ctx          context.Context
		status       int
	}{
		{"none", "", context.Background(), http.StatusNotFound},
		{"host", "", loopback, http.StatusNotFound},
		{"host+listed-origin", "http://127.0.0.1:5173", loopback, http.StatusNotFound},
		{"host+own-origin", "http://127.0.0.1:6632", loopback, http.StatusNotFound},
		{"host+refused-origin", "https://evil.example", loopback, http.StatusForbidden},
	} {
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequestWithContext(c.ctx, "GET", "http://127.0.0.1:6632/no/such/route", nil)
			if c.origin != "" {
				req.Header.Set("Origin", c.origin)
			}
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != c.status {
					b.Fatalf("status %d, want %d", w.Code, c.status)
				}
			}
		})
	}
}
