package httpd

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// A browser lets any web page send requests to http://127.0.0.1:6632, and
// lets the page read the answers when they grant its origin. Without auth
// nothing else stands between a page the user happens to visit and every
// queue, so the rules below decide, before routing, which browser requests
// are served at all (docs/auth.md explains them for operators):
//
//   - A request without Origin is not from a page's script running
//     elsewhere (SDKs, curl and browser navigations send none), and is
//     served as before.
//   - Without auth, an Origin is served only when the operator listed it
//     (Config.CORSOrigins) or when it is the server's own origin (the scheme
//     and Host the request came to, as the embedded console sends on
//     POST/DELETE). Anything else is a 403, reads included: a refused read
//     must not run at all, since a "simple" GET or POST is sent and acted
//     upon whether or not the page may read the reply.
//   - Without auth, a request that arrived on a loopback address must name
//     a loopback host (or one in Config.AllowedHosts). A page that rebinds
//     its own DNS name to 127.0.0.1 is same-origin with itself, so only the
//     Host it must send gives it away.
//   - With auth on, a token is required and browsers never attach one on
//     their own, so any origin is granted ("*"), as Queen's browser clients
//     expect, unless the operator lists origins to narrow it.

// originPolicy is the check every request passes before routing.
type originPolicy struct {
	auth    bool
	any     bool            // "*": every origin is granted (auth on only)
	origins map[string]bool // normalised scheme://host[:port]
	hosts   map[string]bool // lower-case host names and addresses, no port
}

func newOriginPolicy(cfg Config) *originPolicy {
	p := &originPolicy{auth: cfg.Auth != nil, origins: map[string]bool{}, hosts: map[string]bool{}}
	for _, o := range cfg.CORSOrigins {
		if strings.TrimSpace(o) == "*" {
			// A wildcard would reopen an unauthenticated server to every
			// page; CheckCORSOrigins refuses it at start, and an embedding
			// program that passes it anyway gets no grant from it.
			p.any = p.auth
			continue
		}
		if n, err := normalOrigin(o); err == nil {
			p.origins[n] = true
		}
	}
	p.any = p.any || (p.auth && len(cfg.CORSOrigins) == 0)
	for _, h := range cfg.AllowedHosts {
		if h = normalHost(h); h != "" {
			p.hosts[h] = true
		}
	}
	return p
}

// CheckCORSOrigins reports the first entry of origins that is not an origin
// (scheme://host[:port], http or https, no path), and refuses "*" when auth
// is off: an unauthenticated server granting every origin lets any web page
// read and delete its queues.
func CheckCORSOrigins(origins []string, auth bool) error {
	for _, o := range origins {
		if strings.TrimSpace(o) == "*" {
			if !auth {
				return errors.New(`cors origin "*" needs auth: without a token any web page could read and delete every queue; list the origins instead`)
			}
			continue
		}
		if _, err := normalOrigin(o); err != nil {
			return err
		}
	}
	return nil
}

// CheckAllowedHosts reports the first entry of hosts that is not a host
// name or address without a port.
func CheckAllowedHosts(hosts []string) error {
	for _, h := range hosts {
		t := strings.TrimSpace(h)
		if net.ParseIP(strings.Trim(t, "[]")) != nil {
			continue
		}
		if t == "" || strings.ContainsAny(t, "/:[]@ ") {
			return fmt.Errorf("allowed host %q: want a host name or address without scheme or port", h)
		}
	}
	return nil
}

// admit applies the policy to r: nil when the request may go on, with the
// CORS headers of an admitted request set on w, else a *forbidden to
// answer.
func (p *originPolicy) admit(w http.ResponseWriter, r *http.Request) error {
	if !p.auth && arrivedOnLoopback(r) && !p.loopbackHost(r.Host) {
		return &forbidden{fmt.Sprintf("Host %q is not allowed: this server answers loopback names only (see --allowed-hosts)", r.Host)}
	}
	h := w.Header()
	origin := r.Header.Get("Origin")
	if p.any {
		h.Set("Access-Control-Allow-Origin", "*")
		p.allowHeaders(h, r)
		return nil
	}
	h.Add("Vary", "Origin")
	if origin == "" {
		return nil
	}
	if !p.granted(r, origin) {
		return &forbidden{fmt.Sprintf("Origin %q is not allowed (see --cors-origins)", origin)}
	}
	h.Set("Access-Control-Allow-Origin", origin)
	p.allowHeaders(h, r)
	return nil
}

func (p *originPolicy) allowHeaders(h http.Header, r *http.Request) {
	h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Content-Type, Authorization")
	// Chromium asks before a public page may reach a private or loopback
	// address; an origin granted above may.
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Private-Network") == "true" {
		h.Set("Access-Control-Allow-Private-Network", "true")
	}
}

// granted reports whether a page of origin may use the server.
func (p *originPolicy) granted(r *http.Request, origin string) bool {
	n, err := normalOrigin(origin)
	if err != nil {
		return false // "null" (sandboxed frames, file: pages) and garbage
	}
	if p.origins[n] {
		return true
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	self, err := normalOrigin(scheme + "://" + r.Host)
	if err != nil || n != self {
		return false
	}
	// The server's own origin. Without auth it counts only under a Host no
	// one else's DNS can point here: on a non-loopback bind a rebinding page
	// is same-origin with itself too.
	return p.auth || p.unrebindable(r.Host)
}

// loopbackHost reports whether hostport names this machine in a way DNS
// cannot redirect, or is allowed by the operator.
func (p *originPolicy) loopbackHost(hostport string) bool {
	h := normalHost(hostport)
	if p.hosts[h] || hostport == "" {
		return true // HTTP/1.0 may omit Host; browsers never do
	}
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true // browsers resolve these to loopback themselves
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// unrebindable reports whether hostport is an address, a loopback name or
// an allowed host: a page served under it came from this server.
func (p *originPolicy) unrebindable(hostport string) bool {
	return p.loopbackHost(hostport) || net.ParseIP(normalHost(hostport)) != nil
}

// arrivedOnLoopback reports whether r came in on a loopback address. A
// request not served by net/http carries no address and is not checked.
func arrivedOnLoopback(r *http.Request) bool {
	addr, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// normalHost is the lower-case host of a Host header or host name, without
// port, brackets or a trailing dot; "" when there is none.
func normalHost(hostport string) string {
	h := strings.ToLower(strings.TrimSpace(hostport))
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.Trim(h, "[]"), ".")
	return h
}

// normalOrigin is origin as scheme://host[:port] in lower case, without the
// scheme's default port, so equal origins compare equal as strings.
func normalOrigin(origin string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(origin))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("cors origin %q: want scheme://host[:port] with scheme http or https", origin)
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == map[string]string{"http": "80", "https": "443"}[u.Scheme] {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return u.Scheme + "://" + host, nil
}
