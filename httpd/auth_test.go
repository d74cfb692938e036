package httpd_test

import (
	"cmp"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/julienschmidt/httprouter"

	"github.com/comb-broker/comb/httpd"
	"github.com/comb-broker/comb/internal/authtest"
	"github.com/comb-broker/comb/internal/combtest"
)

// mustAuthServer starts a server whose authenticator is built from cfg.
func mustAuthServer(t *testing.T, cfg httpd.AuthConfig) *combtest.Server {
	t.Helper()
	a, err := httpd.NewAuthenticator(cfg)
	if err != nil {
		t.Fatalf("new authenticator: %v", err)
	}
	return combtest.MustServer(t, combtest.Options{HTTP: func(c *httpd.Config) { c.Auth = a }})
}

// routePath fills a route's parameters with plausible values.
func routePath(pattern string) string {
	values := map[string]string{
		"queue": "orders", "partition": "Default", "group": "workers", "name": "trace-name",
		"leaseId": "0198a2b4-0000-7000-8000-000000000001", "partitionId": "0198a2b4-0000-7000-8000-000000000002",
		"transactionId": "tx-1",
	}
	segs := strings.Split(pattern, "/")
	for i, s := range segs {
		if s != "" && (s[0] == ':' || s[0] == '*') {
			v, ok := values[s[1:]]
			if !ok {
				v = "x"
			}
			segs[i] = v
		}
	}
	return strings.Join(segs, "/")
}

// TestAuthEveryRoute walks every registered route with no token and with
// each role, and checks the answer against the route's level: 401 without
// a token, 403 below the level, anything else at or above it.
func TestAuthEveryRoute(t *testing.T) {
	keys := authtest.NewKeys(t)
	srv := mustAuthServer(t, httpd.AuthConfig{Secret: keys.Secret})
	routes := httpd.NewHandler(srv.Broker, httpd.Config{}).Routes()
	levels := httpd.RouteLevels()
	if len(routes) == 0 {
		t.Fatal("no routes registered")
	}

	callers := []struct {
		name  string
		token string
		level httpd.Level // what the caller may reach; -1 = nothing but public routes, unauthenticated
	}{
		{"no token", "", -1},
		{"no role", keys.HS256(t, authtest.Claims("nobody", "", "")), httpd.Public},
		{"unknown role", keys.HS256(t, authtest.Claims("guest", "guest", "")), httpd.Public},
		{"read-only", keys.HS256(t, authtest.Claims("reader", "read-only", "")), httpd.ReadOnly},
		{"read-write", keys.HS256(t, authtest.Claims("writer", "read-write", "")), httpd.ReadWrite},
		{"admin", keys.HS256(t, authtest.Claims("root", "admin", "")), httpd.Admin},
	}
	counts := map[httpd.Level]int{}
	for _, route := range routes {
		method, pattern, _ := strings.Cut(route, " ")
		need := levels[route]
		counts[need]++
		path := routePath(pattern)
		for _, c := range callers {
			var h http.Header
			if c.token != "" {
				h = authtest.Bearer(c.token)
			}
			var body any
			if method == "POST" || method == "PUT" {
				body = "{}"
			}
			r := as(srv, h).Do(method, path, body)
			switch {
			case need == httpd.Public:
				if r.Status == http.StatusUnauthorized || r.Status == http.StatusForbidden {
					t.Errorf("%s as %s: public route answered %d %s", route, c.name, r.Status, r.Body)
				}
			case c.level < 0:
				if r.Status != http.StatusUnauthorized || errorOf(t, r) != "Authentication required" {
					t.Errorf("%s as %s: %d %s, want 401 Authentication required", route, c.name, r.Status, r.Body)
				}
			case c.level < need:
				if r.Status != http.StatusForbidden || errorOf(t, r) != "Insufficient permissions" {
					t.Errorf("%s (%s) as %s: %d %s, want 403 Insufficient permissions", route, need, c.name, r.Status, r.Body)
				}
			default:
				if r.Status == http.StatusUnauthorized || r.Status == http.StatusForbidden {
					t.Errorf("%s (%s) as %s: refused with %d %s", route, need, c.name, r.Status, r.Body)
				}
			}
		}
	}
	t.Logf("walked %d routes: %d public, %d read-only, %d read-write, %d admin",
		len(routes), counts[httpd.Public], counts[httpd.ReadOnly], counts[httpd.ReadWrite], counts[httpd.Admin])
}

// TestAuthLevelTableMatchesRoutes fails when a route is registered without
// a level, or a level names a route nobody registers.
func TestAuthLevelTableMatchesRoutes(t *testing.T) {
	b := combtest.MustOpenBroker(t, combtest.Options{})
	routes := httpd.NewHandler(b, httpd.Config{}).Routes()
	levels := httpd.RouteLevels()
	for _, r := range routes {
		if _, ok := levels[r]; !ok {
			t.Errorf("route %s has no level", r)
		}
	}
	for r := range levels {
		if !slices.Contains(routes, r) {
			t.Errorf("level table names %s, which is not registered", r)
		}
	}
	if dup := len(routes) - len(slices.Compact(slices.Sorted(slices.Values(routes)))); dup != 0 {
		t.Errorf("%d routes registered twice", dup)
	}

	s := httpd.NewHandler(b, httpd.Config{})
	func() {
		defer func() {
			v := recover()
			if v == nil || !strings.Contains(fmt.Sprint(v), "GET /api/v1/unlevelled") {
				t.Errorf("registering a route without a level: recovered %v, want a panic naming it", v)
			}
		}()
		s.HandleForTest("GET", "/api/v1/unlevelled", func(http.ResponseWriter, *http.Request, httprouter.Params) {})
	}()
}

// wireLevel is the rule of docs/auth.md, Access levels (Queen's levels).
// comb's snapshot routes are not Queen's; they follow the consumer-group
// pattern: reads read-only, deletes admin, the rest read-write. comb's
// whoami (for the console) is a read like any other. The forwarder routes
// (comb's own) are admin: they reach other brokers with stored tokens.
// comb's listing of streaming queries is a read, their delete admin as a
// queue's is.
func wireLevel(method, path string) httpd.Level {
	snapshots := path == "/api/v1/snapshots" || strings.HasPrefix(path, "/api/v1/snapshots/")
	switch {
	case path == "/health" || path == "/metrics" || path == "/metrics/prometheus" || path == "/openapi.json" || path == "/" ||
		strings.HasPrefix(path, "/assets/") || strings.HasPrefix(path, "/favicon"):
		return httpd.Public
	case strings.HasPrefix(path, "/api/v1/system/"), strings.HasPrefix(path, "/internal/"),
		method == "DELETE" && strings.HasPrefix(path, "/api/v1/resources/queues/"),
		method == "DELETE" && strings.HasPrefix(path, "/api/v1/consumer-groups/"),
		path == "/api/v1/stats/refresh",
		method == "DELETE" && snapshots,
		method == "POST" && strings.HasPrefix(path, "/api/v1/quarantine/"),
		path == "/api/v1/forwarders" || strings.HasPrefix(path, "/api/v1/forwarders/"),
		method == "DELETE" && path == "/api/v1/dlq",
		method == "DELETE" && strings.HasPrefix(path, "/api/v1/streams/queries/"):
		return httpd.Admin
	case method == "GET" && (strings.HasPrefix(path, "/api/v1/resources/") || strings.HasPrefix(path, "/api/v1/messages") ||
		strings.HasPrefix(path, "/api/v1/dlq") || path == "/api/v1/quarantine" || strings.HasPrefix(path, "/api/v1/status") ||
		strings.HasPrefix(path, "/api/v1/analytics/") || strings.HasPrefix(path, "/api/v1/consumer-groups") ||
		strings.HasPrefix(path, "/api/v1/traces")),
		method == "POST" && path == "/streams/v1/state/get", method == "GET" && path == "/api/v1/streams/queries",
		method == "GET" && snapshots, method == "GET" && path == "/api/v1/whoami":
		return httpd.ReadOnly
	}
	return httpd.ReadWrite
}

// TestAuthLevelsFollowWire checks every entry of the level table against
// the rules of docs/auth.md, so a route added with a guessed level fails.
func TestAuthLevelsFollowWire(t *testing.T) {
	for route, got := range httpd.RouteLevels() {
		method, path, _ := strings.Cut(route, " ")
		if want := wireLevel(method, path); got != want {
			t.Errorf("%s is %s, docs/auth.md says %s", route, got, want)
		}
	}
}

// TestAuthRefusedTokens: every forged, stale or misdirected token is a 401
// carrying the reason, and changes nothing.
func TestAuthRefusedTokens(t *testing.T) {
	keys := authtest.NewKeys(t)
	other := authtest.NewKeys(t)
	rsaPEM := authtest.PublicPEM(t, &keys.RSA.PublicKey)
	pemKeys, err := httpd.ParsePublicKeysPEM(rsaPEM)
	if err != nil {
		t.Fatal(err)
	}
	srv := mustAuthServer(t, httpd.AuthConfig{
		Secret: keys.Secret, Keys: append(pemKeys, httpd.VerifyKey{ID: "ec-1", Key: &keys.EC.PublicKey}),
		Issuer: "https://idp.test", Audience: "comb",
	})

	now := time.Now()
	claims := func(edit func(jwt.MapClaims)) jwt.MapClaims {
		c := authtest.Claims("alice", "admin", "")
		c["iss"], c["aud"] = "https://idp.test", "comb"
		if edit != nil {
			edit(c)
		}
		return c
	}
	hs := func(edit func(jwt.MapClaims)) string { return keys.HS256(t, claims(edit)) }

	cases := []struct {
		name, token, want string
	}{
		{"expired", hs(func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Minute).Unix() }), "Token has expired"},
		{"not yet valid", hs(func(c jwt.MapClaims) { c["nbf"] = now.Add(time.Minute).Unix() }), "Token is not valid yet"},
		{"issued in the future", hs(func(c jwt.MapClaims) { c["iat"] = now.Add(time.Minute).Unix() }), "Token used before issued"},
		{"other secret", other.HS256(t, claims(nil)), "Invalid token signature"},
		{"tampered", authtest.Tamper(hs(nil)), "Invalid token signature"},
		{"alg none", authtest.Unsigned(claims(nil)), "Invalid token: algorithm none is not accepted"},
		{"HS256 signed with the RSA public key", authtest.Sign(t, jwt.SigningMethodHS256, rsaPEM, "", claims(nil)), "Invalid token signature"},
		{"RS256 by another key", authtest.Sign(t, jwt.SigningMethodRS256, other.RSA, "", claims(nil)), "Invalid token signature"},
		{"HS384 not accepted", authtest.Sign(t, jwt.SigningMethodHS384, keys.Secret, "", claims(nil)), "Invalid token: algorithm HS384 is not accepted"},
		{"EdDSA without an Ed25519 key", authtest.Sign(t, jwt.SigningMethodEdDSA, keys.Ed25519, "", claims(nil)), "Invalid token: algorithm EdDSA is not accepted"},
		{"ES256 with a wrong kid key", authtest.Sign(t, jwt.SigningMethodES256, other.EC, "ec-1", claims(nil)), "Invalid token signature"},
		{"ES256 unknown kid", authtest.Sign(t, jwt.SigningMethodES256, keys.EC, "ec-9", claims(nil)), "Invalid token: unknown key ID ec-9"},
		{"wrong issuer", hs(func(c jwt.MapClaims) { c["iss"] = "https://evil.test" }), "Invalid token issuer"},
		{"no issuer", hs(func(c jwt.MapClaims) { delete(c, "iss") }), "Invalid token issuer"},
		{"wrong audience", hs(func(c jwt.MapClaims) { c["aud"] = []string{"other"} }), "Invalid token audience"},
		{"no audience", hs(func(c jwt.MapClaims) { delete(c, "aud") }), "Invalid token audience"},
		{"exp not a number", hs(func(c jwt.MapClaims) { c["exp"] = "tomorrow" }), "Invalid token: a registered claim has the wrong type"},
		{"malformed", "not-a-jwt", "Invalid token: malformed"},
		{"garbage segments", "a.b.c", "Invalid token: malformed"},
		{"numeric sub", hs(func(c jwt.MapClaims) { c["sub"] = 42 }), "Invalid token: sub must be a string"},
		{"numeric tenant", hs(func(c jwt.MapClaims) { c["tenant"] = 7 }), "Invalid token: tenant must be a string"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := as(srv, authtest.Bearer(tc.token)).Do("POST", "/api/v1/push", map[string]any{"items": []any{
				map[string]any{"queue": "refused", "payload": map[string]any{"case": tc.name}}}})
			if r.Status != http.StatusUnauthorized {
				t.Fatalf("%d %s, want 401", r.Status, r.Body)
			}
			if got := errorOf(t, r); got != tc.want {
				t.Errorf("error %q, want %q", got, tc.want)
			}
		})
	}
	// The good tokens of the same shapes pass, so the refusals above are
	// about what each case broke.
	for name, tok := range map[string]string{
		"HS256":      hs(nil),
		"RS256 PEM":  authtest.Sign(t, jwt.SigningMethodRS256, keys.RSA, "", claims(nil)),
		"ES256 kid":  authtest.Sign(t, jwt.SigningMethodES256, keys.EC, "ec-1", claims(nil)),
		"exp in 30s": hs(func(c jwt.MapClaims) { c["exp"] = now.Add(-20 * time.Second).Unix() }),
		"nbf in 30s": hs(func(c jwt.MapClaims) { c["nbf"] = now.Add(20 * time.Second).Unix() }),
		"iat in 30s": hs(func(c jwt.MapClaims) { c["iat"] = now.Add(20 * time.Second).Unix() }),
		"aud list":   hs(func(c jwt.MapClaims) { c["aud"] = []string{"other", "comb"} }),
	} {
		if r := as(srv, authtest.Bearer(tok)).Do("POST", "/api/v1/push", map[string]any{"items": []any{
			map[string]any{"queue": "accepted", "payload": map[string]any{"case": name}}}}); r.Status != http.StatusCreated {
			t.Errorf("%s: %d %s, want 201", name, r.Status, r.Body)
		}
	}
	// No refused request stored anything.
	if r := as(srv, authtest.Bearer(hs(nil))).Pop("/api/v1/pop/queue/refused?batch=100"); r.Status != http.StatusNoContent {
		t.Errorf("refused pushes were stored: %d messages", len(r.Messages))
	}
	if r := as(srv, authtest.Bearer(hs(nil))).Pop("/api/v1/pop/queue/accepted?batch=100"); len(r.Messages) != 7 {
		t.Errorf("accepted pushes: %d messages, want 7", len(r.Messages))
	}
}

// TestAuthRefusalHeaders: a 401 carries a Bearer challenge, the reply is
// JSON, and a public route ignores even a broken token.
func TestAuthRefusalHeaders(t *testing.T) {
	keys := authtest.NewKeys(t)
	srv := mustAuthServer(t, httpd.AuthConfig{Secret: keys.Secret})
	req, _ := http.NewRequest("POST", srv.URL+"/api/v1/push", strings.NewReader(`{"items":[]}`))
	resp, err := srv.HTTP.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") ||
		resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("%d, WWW-Authenticate %q, Content-Type %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), resp.Header.Get("Content-Type"))
	}
	if r := as(srv, authtest.Bearer("garbage")).Do("GET", "/health", nil); r.Status != http.StatusOK {
		t.Errorf("GET /health with a broken token: %d %s", r.Status, r.Body)
	}
	// Preflights are answered before routing, token or not.
	if r := srv.Do("OPTIONS", "/api/v1/push", nil); r.Status != http.StatusNoContent {
		t.Errorf("OPTIONS without a token: %d", r.Status)
	}
}

// TestAuthBearerPrefix: the prefix is case-insensitive and optional; an
// empty one is no token at all.
func TestAuthBearerPrefix(t *testing.T) {
	keys := authtest.NewKeys(t)
	srv := mustAuthServer(t, httpd.AuthConfig{Secret: keys.Secret})
	tok := keys.HS256(t, authtest.Claims("alice", "read-write", ""))
	for _, h := range []string{"Bearer " + tok, "bearer " + tok, "BEARER " + tok, "BeArEr   " + tok, tok, " " + tok + " "} {
		r := as(srv, http.Header{"Authorization": {h}}).Do("POST", "/api/v1/push", map[string]any{"items": []any{}})
		if r.Status != http.StatusCreated {
			t.Errorf("Authorization %.12q…: %d %s", h, r.Status, r.Body)
		}
	}
	for _, h := range []string{"Bearer", "Bearer ", "bearer\t"} {
		r := as(srv, http.Header{"Authorization": {h}}).Do("POST", "/api/v1/push", map[string]any{"items": []any{}})
		if r.Status != http.StatusUnauthorized || errorOf(t, r) != "Authentication required" {
			t.Errorf("Authorization %q: %d %s", h, r.Status, r.Body)
		}
	}
	if r := as(srv, http.Header{"Authorization": {"Basic " + tok}}).Do("POST", "/api/v1/push", map[string]any{"items": []any{}}); r.Status != http.StatusUnauthorized {
		t.Errorf("Basic scheme accepted: %d", r.Status)
	}
}

// TestAuthKeyKinds verifies tokens of every supported algorithm, from a PEM
// file and from a key set with kids.
func TestAuthKeyKinds(t *testing.T) {
	keys := authtest.NewKeys(t)
	ec384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	edPub := keys.Ed25519.Public().(ed25519.PublicKey)

	fromPEM := func(pub any) []httpd.VerifyKey {
		ks, err := httpd.ParsePublicKeysPEM(authtest.PublicPEM(t, pub))
		if err != nil {
			t.Fatalf("parse pem: %v", err)
		}
		return ks
	}
	jwks, err := httpd.ParseJWKS(authtest.JWKS(t,
		authtest.JWK{ID: "rsa", Key: &keys.RSA.PublicKey},
		authtest.JWK{ID: "p256", Key: &keys.EC.PublicKey},
		authtest.JWK{ID: "p384", Key: &ec384.PublicKey},
		authtest.JWK{ID: "ed", Key: edPub}))
	if err != nil {
		t.Fatalf("parse jwks: %v", err)
	}
	claims := authtest.Claims("svc", "read-write", "")
	for _, tc := range []struct {
		name  string
		keys  []httpd.VerifyKey
		token string
	}{
		{"RS256 pem", fromPEM(&keys.RSA.PublicKey), authtest.Sign(t, jwt.SigningMethodRS256, keys.RSA, "", claims)},
		{"PS256 pem", fromPEM(&keys.RSA.PublicKey), authtest.Sign(t, jwt.SigningMethodPS256, keys.RSA, "", claims)},
		{"ES256 pem", fromPEM(&keys.EC.PublicKey), authtest.Sign(t, jwt.SigningMethodES256, keys.EC, "", claims)},
		{"EdDSA pem", fromPEM(edPub), authtest.Sign(t, jwt.SigningMethodEdDSA, keys.Ed25519, "", claims)},
		{"RS512 jwks kid", jwks, authtest.Sign(t, jwt.SigningMethodRS512, keys.RSA, "rsa", claims)},
		{"ES256 jwks kid", jwks, authtest.Sign(t, jwt.SigningMethodES256, keys.EC, "p256", claims)},
		{"ES384 jwks kid", jwks, authtest.Sign(t, jwt.SigningMethodES384, ec384, "p384", claims)},
		{"EdDSA jwks kid", jwks, authtest.Sign(t, jwt.SigningMethodEdDSA, keys.Ed25519, "ed", claims)},
		{"EdDSA jwks no kid", jwks, authtest.Sign(t, jwt.SigningMethodEdDSA, keys.Ed25519, "", claims)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := httpd.NewAuthenticator(httpd.AuthConfig{Keys: tc.keys})
			if err != nil {
				t.Fatal(err)
			}
			id, err := a.Verify("Bearer " + tc.token)
			if err != nil {
				t.Fatalf("verify: %v", err)
			}
			if id.Subject != "svc" || id.Level != httpd.ReadWrite {
				t.Errorf("identity %+v", id)
			}
			// No HMAC secret is configured, so no HS token passes, whatever
			// key bytes it was signed with.
			hs := authtest.Sign(t, jwt.SigningMethodHS256, authtest.PublicPEM(t, &keys.RSA.PublicKey), "", claims)
			if _, err := a.Verify(hs); err == nil {
				t.Error("HS256 token accepted by a public-key-only authenticator")
			}
		})
	}
}

// TestAuthRemembersOnlyUntilExpiry: a token that verified once is
// remembered, but never past its exp plus leeway.
func TestAuthRemembersOnlyUntilExpiry(t *testing.T) {
	keys := authtest.NewKeys(t)
	t0 := time.Now().Truncate(time.Second)
	now := t0
	a, err := httpd.NewAuthenticator(httpd.AuthConfig{Keys: []httpd.VerifyKey{{Key: &keys.RSA.PublicKey}},
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	c := authtest.Claims("svc", "read-only", "")
	c["iat"], c["exp"] = t0.Unix(), t0.Add(time.Minute).Unix()
	tok := authtest.Sign(t, jwt.SigningMethodRS256, keys.RSA, "", c)
	for _, step := range []struct {
		at   time.Duration
		want string // "" = accepted
	}{
		{0, ""},
		{10 * time.Second, ""},
		{time.Minute + 29*time.Second, ""},
		{time.Minute + 31*time.Second, "Token has expired"},
		{time.Minute + 20*time.Second, ""}, // the clock stepped back: valid again
	} {
		now = t0.Add(step.at)
		_, err := a.Verify(tok)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != step.want {
			t.Errorf("at +%v: %q, want %q", step.at, got, step.want)
		}
	}
}

// TestAuthRoles: role from "role" or "roles", the highest wins, names and
// claim names are configurable.
func TestAuthRoles(t *testing.T) {
	keys := authtest.NewKeys(t)
	def, err := httpd.NewAuthenticator(httpd.AuthConfig{Secret: keys.Secret})
	if err != nil {
		t.Fatal(err)
	}
	custom, err := httpd.NewAuthenticator(httpd.AuthConfig{Secret: keys.Secret, RoleClaim: "scope", RolesClaim: "groups",
		AdminRoles: []string{"queue-admins"}, ReadWriteRoles: []string{"producers", "consumers"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		a      *httpd.Authenticator
		claims jwt.MapClaims
		want   httpd.Level
	}{
		{"role admin", def, jwt.MapClaims{"role": "admin"}, httpd.Admin},
		{"role read-write", def, jwt.MapClaims{"role": "read-write"}, httpd.ReadWrite},
		{"role read-only", def, jwt.MapClaims{"role": "read-only"}, httpd.ReadOnly},
		{"roles array, highest wins", def, jwt.MapClaims{"roles": []string{"read-only", "admin", "x"}}, httpd.Admin},
		{"role and roles", def, jwt.MapClaims{"role": "read-only", "roles": []string{"read-write"}}, httpd.ReadWrite},
		{"case matters", def, jwt.MapClaims{"role": "Admin"}, httpd.Public},
		{"unknown role", def, jwt.MapClaims{"role": "root"}, httpd.Public},
		{"no role", def, jwt.MapClaims{}, httpd.Public},
		{"role of the wrong type", def, jwt.MapClaims{"role": []string{"admin"}, "roles": "admin"}, httpd.Public},
		{"custom claim", custom, jwt.MapClaims{"scope": "queue-admins"}, httpd.Admin},
		{"custom array claim", custom, jwt.MapClaims{"groups": []string{"consumers"}}, httpd.ReadWrite},
		{"default read-only kept", custom, jwt.MapClaims{"groups": []string{"read-only"}}, httpd.ReadOnly},
		{"replaced default", custom, jwt.MapClaims{"scope": "admin"}, httpd.Public},
		{"default claim not read", custom, jwt.MapClaims{"role": "queue-admins"}, httpd.Public},
	} {
		id, err := tc.a.Verify(keys.HS256(t, tc.claims))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
		} else if id.Level != tc.want {
			t.Errorf("%s: level %s, want %s", tc.name, id.Level, tc.want)
		}
	}
}

// TestAuthConfigRefused: configurations that cannot verify safely are
// refused at start rather than at the first request.
func TestAuthConfigRefused(t *testing.T) {
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	keys := authtest.NewKeys(t)
	for name, cfg := range map[string]httpd.AuthConfig{
		"nothing":              {},
		"1024-bit RSA":         {Keys: []httpd.VerifyKey{{Key: &small.PublicKey}}},
		"alg unfit for key":    {Keys: []httpd.VerifyKey{{Key: &keys.EC.PublicKey, Alg: "RS256"}}},
		"private key as key":   {Keys: []httpd.VerifyKey{{Key: keys.RSA}}},
		"secret bytes as key ": {Keys: []httpd.VerifyKey{{Key: keys.Secret}}},
	} {
		if _, err := httpd.NewAuthenticator(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	for name, data := range map[string]string{
		"private jwk":   `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","d":"nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"}]}`,
		"symmetric jwk": `{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}`,
		"bad curve":     `{"keys":[{"kty":"EC","crv":"P-192","x":"AA","y":"AA"}]}`,
		"off-curve":     `{"keys":[{"kty":"EC","crv":"P-256","x":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","y":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAE"}]}`,
		"short ed25519": `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"AAAA"}]}`,
		"even exponent": `{"keys":[{"kty":"RSA","n":"AQAB","e":"Ag"}]}`,
		"empty":         `{"keys":[]}`,
		"only enc keys": `{"keys":[{"kty":"RSA","use":"enc","n":"AQAB","e":"AQAB"}]}`,
		"not json":      `keys`,
	} {
		if _, err := httpd.ParseJWKS([]byte(data)); err == nil {
			t.Errorf("jwks %s: accepted", name)
		}
	}
	if _, err := httpd.ParsePublicKeysPEM([]byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")); err == nil {
		t.Error("pem private key accepted")
	}
	if _, err := httpd.ParsePublicKeysPEM([]byte("no pem here")); err == nil {
		t.Error("empty pem accepted")
	}
}

// TestAuthProducerSub: with auth, a pushed message carries the token's sub
// as producerSub whatever the body claims; a token without sub stamps null.
func TestAuthProducerSub(t *testing.T) {
	keys := authtest.NewKeys(t)
	srv := mustAuthServer(t, httpd.AuthConfig{Secret: keys.Secret})
	alice := as(srv, authtest.Bearer(keys.HS256(t, authtest.Claims("alice", "read-write", ""))))
	anon := jwt.MapClaims{"role": "read-write", "exp": time.Now().Add(time.Hour).Unix()}
	nosub := as(srv, authtest.Bearer(keys.HS256(t, anon)))

	alice.Push(map[string]any{"queue": "subs", "payload": map[string]any{"n": 1}, "producerSub": "mallory"})
	nosub.Push(map[string]any{"queue": "subs", "payload": map[string]any{"n": 2}, "producerSub": "mallory"})
	r := alice.Do("POST", "/api/v1/transaction", map[string]any{"operations": []any{
		map[string]any{"type": "push", "items": []any{map[string]any{"queue": "subs", "payload": map[string]any{"n": 3}, "producerSub": "mallory"}}},
	}})
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"success":true`) {
		t.Fatalf("transaction push: %d %s", r.Status, r.Body)
	}

	got := popSubs(t, alice, "subs", 3)
	if want := []any{"alice", nil, "alice"}; !slices.Equal(got, want) {
		t.Errorf("producerSub of the three pushes: %v, want %v", got, want)
	}
}

// TestAuthDisabled: without an authenticator every route is open, a token is
// ignored (no tenant, no producerSub), and producerSub stays null.
func TestAuthDisabled(t *testing.T) {
	keys := authtest.NewKeys(t)
	srv := combtest.MustServer(t, combtest.Options{})
	c := as(srv, authtest.Bearer(keys.HS256(t, authtest.Claims("alice", "read-only", "tenant-a"))))
	c.Push(map[string]any{"queue": "open", "payload": map[string]any{"n": 1}, "producerSub": "mallory"})
	if got := popSubs(t, srv.Client, "open", 1); got[0] != nil {
		t.Errorf("producerSub without auth: %v, want null", got[0])
	}
	// The token's tenant claim is not honoured: the queue is in tenant "".
	if r := srv.Do("GET", "/api/v1/pop/queue/open", nil); r.Status != http.StatusNoContent {
		t.Errorf("pop after consuming everything: %d", r.Status)
	}
	for _, route := range httpd.NewHandler(srv.Broker, httpd.Config{}).Routes() {
		method, pattern, _ := strings.Cut(route, " ")
		if method != "GET" || strings.Contains(pattern, "/pop") {
			continue
		}
		if r := srv.Do(method, routePath(pattern), nil); r.Status == 401 || r.Status == 403 {
			t.Errorf("%s without auth: %d", route, r.Status)
		}
	}
}

// popSubs pops n messages one at a time in queue mode, acks each, and
// returns their producerSub values (nil for null).
func popSubs(t *testing.T, c *combtest.Client, queue string, n int) []any {
	t.Helper()
	var subs []any
	for range n {
		r := c.Do("GET", "/api/v1/pop/queue/"+queue+"?batch=1", nil)
		if r.Status != http.StatusOK {
			t.Fatalf("pop %s: %d %s", queue, r.Status, r.Body)
		}
		var out struct {
			Messages []struct {
				TransactionID string `json:"transactionId"`
				PartitionID   string `json:"partitionId"`
				LeaseID       string `json:"leaseId"`
				ProducerSub   any    `json:"producerSub"`
			} `json:"messages"`
		}
		r.JSON(t, &out)
		if len(out.Messages) != 1 {
			t.Fatalf("pop %s: %d messages", queue, len(out.Messages))
		}
		m := out.Messages[0]
		subs = append(subs, m.ProducerSub)
		c.Ack(combtest.PopMessage{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: m.LeaseID}, "completed", "")
	}
	return subs
}

var updateDocs = flag.Bool("update-docs", false, "rewrite the level table in docs/auth.md from the route table")

const (
	docsPath       = "../docs/auth.md"
	docsTableBegin = "<!-- levels:begin (go test ./httpd -run TestAuthDocsLevels -update-docs) -->"
	docsTableEnd   = "<!-- levels:end -->"
)

// TestAuthDocsLevels keeps the level table of docs/auth.md true to
// the route table: a row that disagrees with the code fails; -update-docs
// regenerates the table.
func TestAuthDocsLevels(t *testing.T) {
	levels := httpd.RouteLevels()
	var routes []string
	for r := range levels {
		routes = append(routes, r)
	}
	order := func(r string) (string, string) { m, p, _ := strings.Cut(r, " "); return p, m }
	slices.SortFunc(routes, func(a, b string) int {
		pa, ma := order(a)
		pb, mb := order(b)
		return cmp.Or(strings.Compare(pa, pb), strings.Compare(ma, mb))
	})
	var table strings.Builder
	table.WriteString("| Route | Level |\n| --- | --- |\n")
	for _, r := range routes {
		fmt.Fprintf(&table, "| `%s` | %s |\n", r, levels[r])
	}

	doc, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok1 := strings.Cut(string(doc), docsTableBegin)
	_, after, ok2 := strings.Cut(rest, docsTableEnd)
	if !ok1 || !ok2 {
		t.Fatalf("%s lacks the level table markers", docsPath)
	}
	if *updateDocs {
		out := before + docsTableBegin + "\n" + table.String() + docsTableEnd + after
		if err := os.WriteFile(docsPath, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	documented := map[string]bool{}
	for _, line := range strings.Split(rest, "\n") {
		route, level, ok := parseLevelRow(line)
		if !ok {
			continue
		}
		documented[route] = true
		got, exists := levels[route]
		switch {
		case !exists:
			// Not an error either: docs may run ahead of a route landing.
			t.Logf("%s documents %s, which has no level yet (or no longer); run with -update-docs", docsPath, route)
		case got.String() != level:
			t.Errorf("%s says %s is %s; the code says %s", docsPath, route, level, got)
		}
	}
	for _, r := range routes {
		if !documented[r] {
			// New routes are not an error here: whoever adds one need not
			// touch the docs; the next -update-docs run lists it.
			t.Logf("%s does not list %s yet; run with -update-docs", docsPath, r)
		}
	}
}

func parseLevelRow(line string) (route, level string, ok bool) {
	cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
	if len(cells) != 2 {
		return "", "", false
	}
	route = strings.Trim(strings.TrimSpace(cells[0]), "`")
	if !strings.Contains(route, " /") {
		return "", "", false
	}
	return route, strings.TrimSpace(cells[1]), true
}

// BenchmarkAuthVerify is the per-request cost of checking a token, by
// algorithm, against the cost of not checking (auth off).
func BenchmarkAuthVerify(b *testing.B) {
	keys := authtest.NewKeys(b)
	claims := authtest.Claims("svc", "read-write", "acme")
	jwks := []httpd.VerifyKey{{ID: "rsa", Key: &keys.RSA.PublicKey}, {ID: "ec", Key: &keys.EC.PublicKey},
		{ID: "ed", Key: keys.Ed25519.Public()}}
	a, err := httpd.NewAuthenticator(httpd.AuthConfig{Secret: keys.Secret, Keys: jwks})
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		method jwt.SigningMethod
		key    any
		kid    string
	}{
		{"HS256", jwt.SigningMethodHS256, keys.Secret, ""},
		{"RS256", jwt.SigningMethodRS256, keys.RSA, "rsa"},
		{"ES256", jwt.SigningMethodES256, keys.EC, "ec"},
		{"EdDSA", jwt.SigningMethodEdDSA, keys.Ed25519, "ed"},
	} {
		// repeat: one token on every request, as an SDK sends it.
		b.Run(tc.name+"/repeat", func(b *testing.B) {
			h := "Bearer " + authtest.Sign(b, tc.method, tc.key, tc.kid, claims)
			for b.Loop() {
				if _, err := a.Verify(h); err != nil {
					b.Fatal(err)
				}
			}
		})
		// distinct: more distinct tokens than are remembered, cycled, so
		// every request is a full signature check.
		b.Run(tc.name+"/distinct", func(b *testing.B) {
			tokens := make([]string, 4100)
			for i := range tokens {
				c := authtest.Claims(fmt.Sprintf("svc-%d", i), "read-write", "acme")
				tokens[i] = authtest.Sign(b, tc.method, tc.key, tc.kid, c)
			}
			i := 0
			for b.Loop() {
				if _, err := a.Verify(tokens[i%len(tokens)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkAuthHTTP is a small request (an empty pop, answered 204) over
// real HTTP with auth off and with each kind of token.
func BenchmarkAuthHTTP(b *testing.B) {
	keys := authtest.NewKeys(b)
	claims := authtest.Claims("svc", "read-write", "acme")
	a, err := httpd.NewAuthenticator(httpd.AuthConfig{Secret: keys.Secret,
		Keys: []httpd.VerifyKey{{Key: &keys.RSA.PublicKey}, {Key: keys.Ed25519.Public()}}})
	if err != nil {
		b.Fatal(err)
	}
	open := combtest.MustServer(b, combtest.Options{})
	authed := combtest.MustServer(b, combtest.Options{HTTP: func(c *httpd.Config) { c.Auth = a }})
	for _, tc := range []struct {
		name  string
		srv   *combtest.Server
		token string
	}{
		{"off", open, ""},
		{"HS256", authed, keys.HS256(b, claims)},
		{"RS256", authed, authtest.Sign(b, jwt.SigningMethodRS256, keys.RSA, "", claims)},
		{"EdDSA", authed, authtest.Sign(b, jwt.SigningMethodEdDSA, keys.Ed25519, "", claims)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			client := tc.srv.HTTP.Client()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, _ := http.NewRequest("GET", tc.srv.URL+"/api/v1/pop/queue/empty", nil)
					if tc.token != "" {
						req.Header.Set("Authorization", "Bearer "+tc.token)
					}
					resp, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					resp.Body.Close()
					if resp.StatusCode != http.StatusNoContent {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
				}
			})
		})
	}
}
